"""Ethos-U sidecar matching on the example programs, in temporary copies.

The delegate I/O the test trusts is read here, independently of the adapter: the payloads come from
ExecuTorch's deserializer and their `inputs`/`outputs` VelaIO blocks are parsed from the facts of
formats.md section 2; the sidecar side is read with tosa-tools' generated readers.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.program.model import Delegate, Program
from tests.support.examples import EXAMPLES

# Examples built with their intermediate artifacts kept (fragmented first).
WITH_ARTIFACTS = ("mv2_lrn_ethosu85", "mv2_lrn2_ethosu85", "mv2_ethosu85_full")
SOURCE = "TOSA source"


# -- independent readings ------------------------------------------------------------------------------


def vela_io(
    payload: bytes,
) -> tuple[list[tuple[tuple[int, ...], int]], list[tuple[tuple[int, ...], int]]]:
    """(inputs, outputs) as (shape without leading 1s, element size) from the vela_bin_stream."""
    blocks: dict[str, bytes] = {}
    pos = 0
    while pos + 32 <= len(payload):
        raw_name, size, _external = struct.unpack_from("<16sIB", payload, pos)
        name = raw_name.rstrip(b"\0").decode()
        blocks[name] = payload[pos + 32 : pos + 32 + size]
        pos += 32 + (size + 15) // 16 * 16
        if name == "vela_end_stream":
            break

    def records(block: bytes) -> list[tuple[tuple[int, ...], int]]:
        (count,) = struct.unpack_from("<i", block, 0)
        width = (len(block) - 4) // count if count else 36
        dims = 6 if width == 36 else 4
        out = []
        for i in range(count):
            fields = struct.unpack_from(f"<{dims}i3i", block, 4 + width * i)
            out.append((strip_ones(fields[:dims]), fields[dims]))
        return out

    return records(blocks["inputs"]), records(blocks["outputs"])


def strip_ones(shape: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    return tuple(dims)


ELEMENT_SIZES = {"INT8": 1, "INT16": 2, "INT32": 4, "FP16": 2, "FP32": 4, "BOOL": 1}


def tosa_io(
    path: Path,
) -> tuple[list[tuple[tuple[int, ...], int]], list[tuple[tuple[int, ...], int]]]:
    """The main block's I/O of a .tosa file, read with tosa-tools' generated readers."""
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph

    dtype_names = {v: k for k, v in vars(DType).items() if not k.startswith("_")}
    g = TosaGraph.GetRootAs(path.read_bytes(), 0)
    block = g.Regions(0).Blocks(0)
    tensors = {}
    for i in range(block.TensorsLength()):
        t = block.Tensors(i)
        tensors[t.Name().decode()] = (
            strip_ones([int(x) for x in t.ShapeAsNumpy()]),
            ELEMENT_SIZES[dtype_names[t.Type()]],
        )
    ins = [tensors[block.Inputs(i).decode()] for i in range(block.InputsLength())]
    outs = [tensors[block.Outputs(i).decode()] for i in range(block.OutputsLength())]
    return ins, outs


def ethosu_payloads(pte: Path) -> list[bytes]:
    """Ethos-U payloads in (method, delegate) order, through ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes()).program
    return [
        bytes(program.backend_delegate_data[d.processed.index].data)
        for plan in program.execution_plan
        for d in plan.delegates
        if d.id == "EthosUBackend"
    ]


# -- fixtures ---------------------------------------------------------------------------------------------


def copy_example(name: str, tmp_path: Path) -> tuple[Path, Path]:
    pte = EXAMPLES / f"{name}.pte"
    art = EXAMPLES / f"{name}_artifacts"
    assert pte.exists() and any(art.glob("output_tag*_*.tosa")), (
        f"{name}.pte with {art.name}/ is missing: run python -m examples.build_examples"
    )
    shutil.copy(pte, tmp_path / pte.name)
    shutil.copytree(art, tmp_path / art.name)
    return tmp_path / pte.name, tmp_path / art.name


def ethosu_delegates(program: Program) -> list[Delegate]:
    return [d for m in program.methods for d in m.delegates if d.id == "EthosUBackend"]


def matched_file(delegate: Delegate, folder: Path) -> Path | None:
    """The sidecar attached to `delegate` (by the graph's `file` attribute)."""
    graph = next((g for g in delegate.decoded.graphs if g.name == SOURCE), None)
    if graph is None:
        return None
    path = Path(graph.attrs["file"])
    assert path.parent.resolve() == folder.resolve()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def matches_by_content(pte: Path, folder: Path) -> list[str | None]:
    program = pte_adapter.load(pte)
    out = []
    for d in ethosu_delegates(program):
        f = matched_file(d, folder)
        out.append(digest(f) if f else None)
    return out


# -- tests ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WITH_ARTIFACTS)
def test_every_partition_matches_its_own_sidecar(name: str, tmp_path: Path) -> None:
    pte, folder = copy_example(name, tmp_path)
    program = pte_adapter.load(pte)
    delegates = ethosu_delegates(program)
    payloads = ethosu_payloads(pte)
    files = sorted(folder.glob("output_tag*_*.tosa"))
    assert len(delegates) == len(payloads) == len(files)
    matched = []
    for delegate, payload in zip(delegates, payloads, strict=True):
        f = matched_file(delegate, folder)
        assert f is not None, delegate.decoded.problems
        assert not [p for p in delegate.decoded.problems if "sidecar" in p]
        # The matched file's I/O agrees with the delegate's own VelaIO records.
        assert tosa_io(f) == vela_io(payload)
        # And its spec with the delegate's compile spec.
        assert f.name.endswith(f"_{delegate.spec('tosa_spec')}.tosa")
        assert f.name in delegate.decoded.summary["tosa_sidecar"]
        matched.append(f)
    assert len(set(matched)) == len(matched)


@pytest.mark.parametrize("name", WITH_ARTIFACTS)
def test_match_follows_content_not_names(name: str, tmp_path: Path) -> None:
    pte, folder = copy_example(name, tmp_path)
    before = matches_by_content(pte, folder)
    files = sorted(folder.glob("output_tag*_*.tosa"))
    # Rotate the tags (tag0 -> tag1 ...) and give them new numbers: file order and names change.
    staged = []
    for i, f in enumerate(files):
        spec = f.name.split("_", 2)[2]
        tmp = folder / f"staging{i}"
        f.rename(tmp)
        staged.append((tmp, spec))
    for i, (tmp, spec) in enumerate(staged):
        tmp.rename(folder / f"output_tag{(len(staged) - i) * 7}_{spec}")
    assert matches_by_content(pte, folder) == before
    assert all(before)


@pytest.mark.parametrize("name", WITH_ARTIFACTS)
def test_removed_sidecar_is_reported_and_others_still_match(name: str, tmp_path: Path) -> None:
    pte, folder = copy_example(name, tmp_path)
    before = matches_by_content(pte, folder)
    victim = max(folder.glob("output_tag*_*.tosa"))
    gone = digest(victim)
    victim.unlink()
    program = pte_adapter.load(pte)
    for delegate, old in zip(ethosu_delegates(program), before, strict=True):
        f = matched_file(delegate, folder)
        if old == gone:
            assert f is None
            # Said as a problem when other sidecars are there, as a plain fact when none are.
            said = [*delegate.decoded.problems, delegate.decoded.summary.get("tosa_sidecar", "")]
            assert any("no sidecar .tosa found" in p for p in said)
        else:
            assert f is not None and digest(f) == old


@pytest.mark.parametrize("name", WITH_ARTIFACTS)
def test_duplicate_sidecar_is_ambiguous_not_guessed(name: str, tmp_path: Path) -> None:
    pte, folder = copy_example(name, tmp_path)
    first = min(folder.glob("output_tag*_*.tosa"))
    spec = first.name.split("_", 2)[2]
    shutil.copy(first, folder / f"output_tag99_{spec}")
    program = pte_adapter.load(pte)
    ambiguous = [
        d for d in ethosu_delegates(program) if any("ambiguous" in p for p in d.decoded.problems)
    ]
    assert len(ambiguous) == 1
    assert matched_file(ambiguous[0], folder) is None


@pytest.mark.parametrize("name", WITH_ARTIFACTS)
def test_spec_in_the_file_name_is_evidence(name: str, tmp_path: Path) -> None:
    pte, folder = copy_example(name, tmp_path)
    for f in folder.glob("output_tag*_*.tosa"):
        tag = f.name.split("_", 2)[1]
        f.rename(folder / f"output_{tag}_TOSA-9.9+NOPE.tosa")
    program = pte_adapter.load(pte)
    for d in ethosu_delegates(program):
        assert matched_file(d, folder) is None
        assert any(p.startswith("no sidecar .tosa found") for p in d.decoded.problems)
        assert d.decoded.summary["tosa_sidecar"].startswith("none fits: inputs ")


@pytest.mark.parametrize("layout", ["stem", "own_folder"])
def test_folder_found_without_the_recorded_path(layout: str, tmp_path: Path) -> None:
    """The recorded debug_artifact_path does not exist: `<stem>/` or the .pte's own folder is used."""
    pte, folder = copy_example(WITH_ARTIFACTS[0], tmp_path)
    before = matches_by_content(pte, folder)
    if layout == "stem":
        target = folder.rename(tmp_path / pte.stem)
    else:
        for f in folder.glob("output_tag*_*.tosa"):
            f.rename(tmp_path / f.name)
        shutil.rmtree(folder)
        target = tmp_path
    assert matches_by_content(pte, target) == before


def test_tosa_backend_delegate_names_its_identical_sidecar(tmp_path: Path) -> None:
    pte, folder = copy_example("mv2_tosa", tmp_path)
    program = pte_adapter.load(pte)
    tosa = [d for m in program.methods for d in m.delegates if d.id == "TOSABackend"]
    assert tosa
    for d in tosa:
        note = d.decoded.summary.get("tosa_sidecar", "")
        assert "identical to the payload" in note
        assert Path(note.split(" (")[0]).parent.resolve() == folder.resolve()
