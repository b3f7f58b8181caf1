"""Resource bounds and the sidecar path policy (issue 7), each checked against the gap it closes.

Every test here fails on the code before the fix: shared-structure amplification ran for seconds
and built GiB of lists, corrupt shapes built huge integers, garbage command streams produced one
operation per word, and `debug_artifact_path` could send the adapter anywhere on the machine.
"""

from __future__ import annotations

import resource
import shutil
import struct
import time
from pathlib import Path

import flatbuffers
import pytest

from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.delegates.arm.artifacts import candidate_folders
from pte_adapter.delegates.ethosu import dataflow
from pte_adapter.delegates.ethosu._generated.registers_u85 import CMD0_OPCODES
from pte_adapter.delegates.ethosu.commands import MAX_OPERATIONS, decode_commands
from pte_adapter.errors import LimitExceededError, PteFormatError
from pte_adapter.explorer.convert import convert_path
from pte_adapter.program.model import NUMEL_CAP, Tensor, saturating_numel
from tests.support.examples import EXAMPLES


def _shared_vector_buffer(tables: int, ints: int) -> bytes:
    """Root { items: [Item] } where every Item's field 0 points at the same [int] of `ints`."""
    b = flatbuffers.Builder(0)
    b.StartVector(4, ints, 4)
    for _ in range(ints):
        b.PrependInt32(7)
    vec = b.EndVector()
    items = []
    for _ in range(tables):
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, vec, 0)
        items.append(b.EndObject())
    b.StartVector(4, len(items), 4)
    for it in reversed(items):
        b.PrependUOffsetTRelative(it)
    vitems = b.EndVector()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, vitems, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def test_shared_vector_reads_are_budgeted() -> None:
    data = _shared_vector_buffer(tables=2000, ints=100_000)  # ~0.4 MB; 200M ints if unbudgeted
    root = FlatBuffer(data, "shared").root()
    t0 = time.process_time()
    with pytest.raises(LimitExceededError) as e:
        for item in root.iter_tables(0, "items"):
            item.ints(0, "i", "values")
    assert time.process_time() - t0 < 1.0
    assert "shared" in str(e.value) and "at byte" in str(e.value)


def test_an_honest_buffer_reads_within_its_budget() -> None:
    data = _shared_vector_buffer(tables=1, ints=100_000)
    (item,) = FlatBuffer(data, "honest").root().tables(0, "items")
    assert item.ints(0, "i", "values") == [7] * 100_000


def test_nested_shared_tables_are_bounded() -> None:
    """1,000 offsets to a table holding 1,000 offsets to one table: a million table reads from
    an 8 KB buffer. Linear budgets stop the multiplication."""
    b = flatbuffers.Builder(0)
    b.StartObject(1)
    b.PrependInt32Slot(0, 1, 0)
    leaf = b.EndObject()

    def offsets_to(target: int, n: int) -> int:
        b.StartVector(4, n, 4)
        for _ in range(n):
            b.PrependUOffsetTRelative(target)
        return b.EndVector()

    inner = offsets_to(leaf, 1000)
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, inner, 0)
    middle = b.EndObject()
    outer = offsets_to(middle, 1000)
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, outer, 0)
    b.Finish(b.EndObject())
    fb = FlatBuffer(bytes(b.Output()), "nested")
    t0 = time.process_time()
    with pytest.raises(LimitExceededError):
        for m in fb.root().iter_tables(0, "outer"):
            for leaf_table in m.iter_tables(0, "inner"):
                leaf_table.int(0)
    assert time.process_time() - t0 < 1.0


def test_numel_saturates() -> None:
    t0 = time.process_time()
    huge = Tensor(6, [2**31 - 1] * 50_000, [], "static")  # float32
    assert huge.numel == NUMEL_CAP
    assert huge.nbytes == NUMEL_CAP * 4
    assert time.process_time() - t0 < 0.5
    assert saturating_numel([3, 0, 2**31]) == 0
    assert saturating_numel([2, -5]) == 0
    assert saturating_numel([2, 3, 4]) == 24
    assert saturating_numel([]) == 1


def test_command_stream_of_bare_operations_is_cut_off() -> None:
    """One word per NPU_OP_CONV: a 400 KB stream would be 100,000 operations."""
    conv = next(op for op, name in CMD0_OPCODES.items() if name == "NPU_OP_CONV")
    words = struct.pack("<I", conv) * 100_000
    t0 = time.process_time()
    out = decode_commands(memoryview(words), 2)  # 2: the U85 product code
    assert len(out.operations) == MAX_OPERATIONS
    assert any(f"more than {MAX_OPERATIONS} operations" in p for p in out.problems)
    assert time.process_time() - t0 < 5.0


def test_dataflow_live_writes_are_bounded() -> None:
    memory = dataflow._Memory()
    t0 = time.process_time()
    for i in range(20_000):  # disjoint writes: quadratic without the bound
        memory.write(1, 16 * i, 16 * i + 16, i)
    assert len(memory.writes) == dataflow.MAX_LIVE_WRITES
    assert memory.read(1, 16 * 19_999, 16 * 20_000) == [19_999]
    assert time.process_time() - t0 < 5.0


@pytest.mark.parametrize(
    "spec",
    [
        "/",
        "/etc",
        "../..",
        "..",
        "sub/../..",
        "../../../../../../tmp",
        "\\\\host\\share",
        str(Path("/").resolve() / "tmp"),
    ],
)
def test_artifact_spec_cannot_leave_the_pte_folder(spec: str, tmp_path: Path) -> None:
    here = tmp_path / "models"
    here.mkdir()
    for folder in candidate_folders(here / "m.pte", spec):
        resolved = folder.resolve()
        assert resolved == here.resolve() or here.resolve() in resolved.parents, (spec, folder)


def test_artifact_spec_inside_the_folder_is_used(tmp_path: Path) -> None:
    pte = tmp_path / "m.pte"
    assert candidate_folders(pte, "out/arts")[0] == tmp_path / "out" / "arts"
    assert candidate_folders(pte, str(tmp_path / "abs"))[0] == tmp_path / "abs"
    assert tmp_path / "arts" in candidate_folders(pte, "/elsewhere/arts")  # copied beside it


def test_sidecars_outside_the_folder_are_not_read(tmp_path: Path) -> None:
    """A .pte whose debug_artifact_path names a folder outside its own: that folder is not read."""
    src = EXAMPLES / "mv2_ethosu85_full.pte"
    arts = EXAMPLES / "mv2_ethosu85_full_artifacts"
    outside = tmp_path / "outside"
    shutil.copytree(arts, outside)
    models = tmp_path / "models"
    models.mkdir()
    data = src.read_bytes()
    from pte_adapter.api import load

    spec = next(
        s
        for d in load(src, decode_delegates=False).methods[0].delegates
        for s in d.compile_specs
        if s.key == "debug_artifact_path"
    )
    # Same length, so the FlatBuffer stays valid: "../outside////..." climbs out of models/.
    evil = b"../outside".ljust(len(spec.value), b"/")
    pte = models / "m.pte"
    pte.write_bytes(data.replace(spec.value, evil, 1))
    (delegate,) = load(pte).methods[0].delegates
    assert delegate.spec("debug_artifact_path") == evil.decode()
    assert "matched" not in delegate.decoded.summary.get("tosa_sidecar", "")
    assert not any(g.name.startswith("TOSA source") for g in delegate.decoded.graphs)
    # The same file beside the artifacts' parent folder does find them (the test can fail).
    shutil.copyfile(pte, tmp_path / "m.pte")
    shutil.copytree(arts, tmp_path / "m_artifacts")
    (delegate,) = load(tmp_path / "m.pte").methods[0].delegates
    assert "matched" in delegate.decoded.summary.get("tosa_sidecar", "")


def test_missing_or_directory_tosa_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(PteFormatError):
        convert_path(tmp_path / "missing.tosa")
    (tmp_path / "dir.tosa").mkdir()
    with pytest.raises(PteFormatError):
        convert_path(tmp_path / "dir.tosa")


def test_rss_bound_of_this_process_is_sane() -> None:
    """Guard for the fuzz tests' RSS figures: ru_maxrss is KiB on Linux."""
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 8 * 2**20


# --- round two (issue 44): caps on what the program makes every view do ----------------------


def test_the_minimal_writer_writes_what_executorch_reads(tmp_path: Path) -> None:
    """The hostile programs' writer (tests/support/pte_writer.py) against ExecuTorch's own
    deserializer: a real program written back reads the same, and a chain of repeated tables
    reads as that many instructions."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from tests.support.hostile_programs import VULKAN, instructions_unit, repeated_chain
    from tests.support.pte_writer import program_json, write_program

    src = EXAMPLES / f"{VULKAN}.pte"
    program, segments = program_json(src)
    same = write_program(program, segments, tmp_path / "same.pte")
    theirs = deserialize_pte_binary(src.read_bytes())
    ours = deserialize_pte_binary(same.read_bytes())
    assert ours.program.execution_plan == theirs.program.execution_plan
    program, segments = program_json(src)
    unit = instructions_unit(("delegate", 1, [2, 3]), ("kernel", 0, [1, 2, 2]))
    many = write_program(program, segments, tmp_path / "many.pte", repeated_chain(unit, 300))
    (plan,) = deserialize_pte_binary(many.read_bytes()).program.execution_plan
    calls = [i.instr_args for i in plan.chains[0].instructions]
    assert len(calls) == 600
    assert {(type(c).__name__, tuple(c.args)) for c in calls} == {
        ("DelegateCall", (2, 3)),
        ("KernelCall", (1, 2, 2)),
    }


def test_delegate_calls_and_entries_are_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call is a partition, which costs every view more than an instruction: past
    MAX_DELEGATE_CALLS (or MAX_DELEGATES entries) the program is refused as it is read."""
    from pte_adapter.api import load
    from pte_adapter.program import reader

    pte = EXAMPLES / "vulkan_cnn_island.pte"  # three calls of three entries
    load(pte)
    monkeypatch.setattr(reader, "MAX_DELEGATE_CALLS", 2)
    with pytest.raises(LimitExceededError, match="more than 2 delegate calls"):
        load(pte)
    monkeypatch.setattr(reader, "MAX_DELEGATE_CALLS", 3)
    monkeypatch.setattr(reader, "MAX_DELEGATES", 2)
    with pytest.raises(LimitExceededError, match="more than 2 delegate entries"):
        load(pte)


def test_a_chain_past_the_cap_is_refused_before_its_instructions_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pte_adapter.api import load
    from pte_adapter.program import reader

    read: list[int] = []
    original = reader._read_instruction

    def counting(*args: object) -> object:
        read.append(1)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "_read_instruction", counting)
    monkeypatch.setattr(reader, "MAX_INSTRUCTIONS", 4)
    with pytest.raises(LimitExceededError, match="more than 4 instructions"):
        load(EXAMPLES / "vulkan_cnn_island.pte", decode_delegates=False)  # five instructions
    assert read == []


def test_entries_sharing_a_payload_decode_it_once(tmp_path: Path) -> None:
    """4,000 delegate entries naming one Core ML payload (issue 44: each decoded it again, about
    100 ms each): decoded once, each entry with its own lists around the same graphs."""
    from pte_adapter import api
    from tests.support.hostile_programs import case_coreml_many_delegates

    calls: list[object] = []
    real = api.decode_payload

    def counted(payload: memoryview, ctx: object) -> object:
        calls.append(ctx)
        return real(payload, ctx)  # type: ignore[arg-type]

    pte = case_coreml_many_delegates(tmp_path, 1)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(api, "decode_payload", counted)
        program = api.load(pte, sidecars=False)
    delegates = program.methods[0].delegates
    assert len(delegates) == 4000 and len(calls) == 1
    first, last = delegates[0].decoded, delegates[-1].decoded
    assert first is not last and first.problems is not last.problems
    assert all(a is b for a, b in zip(first.graphs, last.graphs, strict=True))
    assert first.summary == last.summary


@pytest.mark.parametrize(
    ("module", "cap", "name"),
    [
        ("pte_adapter.delegates.xnnpack.decode", "MAX_OPERATIONS", "xnnpack_lrn"),
        ("pte_adapter.delegates.tosa.reader", "MAX_OPERATORS", "mv2_tosa"),
        ("pte_adapter.delegates.vgf.segment", "MAX_OPERATIONS", "vgf_small"),
        ("pte_adapter.delegates.vulkan.decode", "MAX_OPERATIONS", "vulkan_cnn_island"),
        ("pte_adapter.delegates.coreml.mil", "MAX_OPERATIONS", "coreml_small"),
    ],
)
def test_every_backend_caps_the_operations_it_decodes(
    module: str, cap: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like Ethos-U's command stream, each backend shows at most so many operations of one
    payload, and a problem names the cap (issue 44: a million 2-byte Core ML operations)."""
    import importlib

    from pte_adapter.api import load

    monkeypatch.setattr(importlib.import_module(module), cap, 2)
    decoded = load(EXAMPLES / f"{name}.pte").methods[0].delegates[0].decoded
    assert len(decoded.graphs[0].nodes) == 2
    assert any("more than 2" in p for p in decoded.problems), decoded.problems
