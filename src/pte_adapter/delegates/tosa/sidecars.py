"""Attach the intermediate TOSA graph an Ethos-U delegate was compiled from, found beside the `.pte`.

(The `side_files` hooks of the Ethos-U and TOSA records: `attach_matched_by_io` and
`note_identical_file`.)

The Arm backend writes one `output_<tag>_<tosa_spec>.tosa` per partition into its artifact folder
(`dump_intermediate_artifacts_to`). `<tag>` is a partition counter that the `.pte` does not record,
so a file is matched to a delegate only by evidence:

- the delegate's I/O as Vela compiled it (the Ethos-U decoder's "NPU operations" graph inputs and
  outputs: shape and dtype) against the TOSA main block's inputs and outputs;
- the delegate's `tosa_spec` compile spec against the spec in the file name.

Shapes are compared with leading 1s dropped (Vela pads its I/O records to 6 dimensions). Each file
comes from one partition, so an assignment is accepted only when the delegate has exactly one
fitting file and that file fits no other delegate; everything else is reported on the delegate,
never guessed. TOSABackend delegates need no matching (their payload is the file); the identical
file, when present, is named in their summary, and a file identical to any delegate's payload is
never matched to another delegate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pte_adapter.container import files
from pte_adapter.delegates.arm.artifacts import candidate_folders, is_folder_inside
from pte_adapter.errors import LimitExceededError, PteFormatError
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import Delegate, Program

if TYPE_CHECKING:
    from pte_adapter.delegates.tosa.reader import TosaModel

SIDECAR_GLOB = "output_tag*_*.tosa"
_SIDECAR_NAME = re.compile(r"^output_(tag\d+)_(.+)\.tosa$")
NPU_GRAPH = "NPU operations"
SOURCE_GRAPH = "TOSA source"
# Sidecars larger than this are not read (a .tosa beside a small .pte is never this big).
MAX_SIDECAR_BYTES = 2**31
MAX_SIDECARS = 256  # `output_tag*_*.tosa` files considered per folder (one per delegate)

Signature = tuple[tuple[tuple[int, ...], str], ...]


@dataclass
class Sidecar:
    path: Path
    tag: str
    spec: str
    data: bytes | memoryview = b""  # memory-mapped: only what the reader walks is paged in
    model: TosaModel | None = None
    error: str = ""
    inputs: Signature = ()
    outputs: Signature = ()
    parsed: bool = False  # parsing is deferred: a TOSABackend's own file only needs its bytes


def _parse(sidecar: Sidecar) -> None:
    if sidecar.parsed or sidecar.error:
        return
    sidecar.parsed = True
    # The TOSA reader (and its generated schema, the largest module of the package) is imported
    # only when a program has sidecars to read: every Ethos-U program imports this module.
    from pte_adapter.delegates.tosa.decode import read_tosa

    try:
        sidecar.model = read_tosa(sidecar.data, sidecar.path.name)
    except PteFormatError as e:
        sidecar.error = str(e)
        return
    main = sidecar.model.main
    sidecar.inputs = tuple(
        (normalise_shape(main.tensors[t].shape), main.tensors[t].dtype)
        for t in main.inputs
        if t in main.tensors
    )
    sidecar.outputs = tuple(
        (normalise_shape(main.tensors[t].shape), main.tensors[t].dtype)
        for t in main.outputs
        if t in main.tensors
    )


@dataclass
class _Candidate:
    delegate: Delegate
    folders: list[Path]  # searched, in order
    folder: Path | None  # the folder its sidecars come from
    inputs: Signature | None = None
    outputs: Signature | None = None
    fits: list[Sidecar] = field(default_factory=list)


def normalise_shape(shape: Iterable[int] | None) -> tuple[int, ...]:
    dims = list(shape or [])
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    return tuple(dims)


def _signature(graph: DelegateGraph, ids: list[str]) -> Signature:
    out = []
    for tid in ids:
        t = graph.tensors.get(tid)
        out.append((normalise_shape(t.shape if t else None), t.dtype if t else ""))
    return tuple(out)


def _listed(folder: Path) -> list[Path]:
    """The `output_tag*_*.tosa` names in a folder, the first MAX_SIDECARS by name (a folder that
    cannot be listed has none)."""
    try:
        return sorted(folder.glob(SIDECAR_GLOB))[:MAX_SIDECARS]
    except OSError:
        return []


def _sidecar_folder(folders: list[Path], here: Path) -> Path | None:
    """The first searched folder inside the program's folder that holds any
    `output_tag*_*.tosa`."""
    for folder in folders:
        if is_folder_inside(folder, here) and _listed(folder):
            return folder
    return None


def _load_sidecars(folder: Path, here: Path, cache: dict[Path, list[Sidecar]]) -> list[Sidecar]:
    key = folder.resolve()
    if key in cache:
        return cache[key]
    found: list[Sidecar] = []
    for path in _listed(folder):
        m = _SIDECAR_NAME.match(path.name)
        if m is None:
            continue
        sidecar = Sidecar(path, m.group(1), m.group(2))
        try:
            data = files.map_regular(path, path.name, inside=here)
            if len(data) > MAX_SIDECAR_BYTES:
                raise LimitExceededError(
                    f"{len(data)} bytes (limit {MAX_SIDECAR_BYTES}): not read", part=path.name
                )
            sidecar.data = data
        except PteFormatError as e:
            sidecar.error = str(e)
        found.append(sidecar)
    cache[key] = found
    return found


def _is_payload(data: bytes | memoryview, payloads: dict[int, list[memoryview]]) -> bool:
    return any(data == p for p in payloads.get(len(data), ()))


def _other_payloads(program: Program, delegates: list[Delegate]) -> dict[int, list[memoryview]]:
    """The payloads of the program's other delegates, by size (a TOSABackend's is a `.tosa` file
    that may lie among the intermediate ones)."""
    mine = {id(d) for d in delegates}
    out: dict[int, list[memoryview]] = {}
    for method in program.methods:
        for delegate in method.delegates:
            if id(delegate) in mine:
                continue
            try:
                view = program.delegate_payload(delegate)
            except PteFormatError:
                continue
            if view is not None:
                out.setdefault(len(view), []).append(view)
    return out


def _payload_bytes(program: Program, delegate: Delegate) -> bytes | None:
    try:
        view = program.delegate_payload(delegate)
    except PteFormatError:
        return None
    return None if view is None else bytes(view)


def _describe(sig: Signature) -> str:
    return ", ".join(f"{list(shape)} {dtype}" for shape, dtype in sig) or "none"


def attach_matched_by_io(program: Program, delegates: list[Delegate]) -> None:
    """Find, match and attach the sidecar `.tosa` graphs of these delegates (Ethos-U's); call after
    every delegate is decoded."""
    if program.path is None:
        return
    cache: dict[Path, list[Sidecar]] = {}
    candidates: list[_Candidate] = []
    for delegate in delegates:
        folders = candidate_folders(program.path, delegate.spec("debug_artifact_path"))
        candidates.append(
            _Candidate(delegate, folders, _sidecar_folder(folders, program.path.parent))
        )
    payloads = _other_payloads(program, delegates)
    for cand in candidates:
        graphs = cand.delegate.decoded.graphs
        npu = next((g for g in graphs if g.name == NPU_GRAPH), None)
        if npu is not None and (npu.inputs or npu.outputs):
            cand.inputs = _signature(npu, npu.inputs)
            cand.outputs = _signature(npu, npu.outputs)
        if cand.folder is None:
            continue
        spec = cand.delegate.spec("tosa_spec")
        for sidecar in _load_sidecars(cand.folder, program.path.parent, cache):
            if _is_payload(sidecar.data, payloads):
                continue  # a TOSABackend delegate's own file
            _parse(sidecar)
            if sidecar.model is None:
                continue  # unreadable (reported below)
            if spec and sidecar.spec != spec:
                continue
            if cand.inputs is None or cand.outputs is None:
                continue
            if _fits(cand, sidecar):
                cand.fits.append(sidecar)
    _assign(candidates, cache)


def _fits(cand: _Candidate, sidecar: Sidecar) -> bool:
    assert cand.inputs is not None and cand.outputs is not None
    return cand.inputs == sidecar.inputs and cand.outputs == sidecar.outputs


def _assign(candidates: list[_Candidate], cache: dict[Path, list[Sidecar]]) -> None:
    # Mutual uniqueness: a delegate with one fitting file, which fits no other delegate.
    fitted_by: dict[Path, list[_Candidate]] = {}
    for cand in candidates:
        for sidecar in cand.fits:
            fitted_by.setdefault(sidecar.path, []).append(cand)
    for cand in candidates:
        decoded = cand.delegate.decoded
        searched = ", ".join(str(f) for f in cand.folders)
        if cand.folder is None:
            # Nothing was dumped for this export: normal, so say it plainly but not as a fault.
            decoded.summary["tosa_sidecar"] = f"none: no sidecar .tosa found (searched: {searched})"
            continue
        unreadable = [s for s in cache.get(cand.folder.resolve(), []) if s.error]
        for s in unreadable:
            decoded.problems.append(f"sidecar {s.path.name} could not be read: {s.error}")
        if cand.inputs is None or cand.outputs is None:
            decoded.problems.append(
                f"sidecar .tosa files in {cand.folder} cannot be matched: this delegate's I/O is unknown"
            )
            continue
        if not cand.fits:
            # The same words for every delegate it holds for (a summary says it once per
            # method); the I/O that fits no file is the delegate's own fact.
            decoded.problems.append(
                f"no sidecar .tosa found (searched: {searched}; none in {cand.folder} has this "
                "delegate's I/O)"
            )
            spec = cand.delegate.spec("tosa_spec")
            decoded.summary["tosa_sidecar"] = (
                f"none fits: inputs {_describe(cand.inputs)}, outputs {_describe(cand.outputs)}"
                + (f", tosa_spec {spec}" if spec else "")
            )
            continue
        rivals = {id(c) for s in cand.fits for c in fitted_by[s.path]} - {id(cand)}
        if len(cand.fits) > 1 or rivals:
            files = ", ".join(s.path.name for s in cand.fits)
            others = len(rivals)
            decoded.problems.append(
                f"sidecar .tosa is ambiguous: {files} fit this delegate's I/O"
                + (f" and also fit {others} other delegate(s)" if others else "")
                + "; not attached"
            )
            decoded.summary["tosa_sidecar"] = f"ambiguous: {files}"
            continue
        _attach(cand, cand.fits[0])


def _attach(cand: _Candidate, sidecar: Sidecar) -> None:
    from pte_adapter.delegates.tosa.decode import find_debug_json, to_delegate_graphs, tosa_summary

    assert sidecar.model is not None
    decoded = cand.delegate.decoded
    debug_json = None
    if not any(op.location for b in sidecar.model.blocks for op in b.operators):
        # The sidecar's own folder (and nothing outside it) may hold its debug.json.
        debug_json = find_debug_json(sidecar.path, None)
    built = to_delegate_graphs(
        sidecar.model, main_name=SOURCE_GRAPH, prefix=SOURCE_GRAPH, debug_json=debug_json
    )
    taken = {g.name for g in decoded.graphs}
    renamed: dict[str, str] = {}
    for graph in built.graphs:
        if graph.name in taken:
            renamed[graph.name] = f"{graph.name} ({sidecar.path.name})"
            graph.name = renamed[graph.name]
    # Control-flow links name graphs; keep them pointing at the renamed ones.
    for graph in built.graphs:
        for node in graph.nodes:
            node.subgraphs = [renamed.get(s, s) for s in node.subgraphs]
        graph.attrs["file"] = str(sidecar.path)
        graph.from_payload = False
        graph.source_file = str(sidecar.path)
    decoded.graphs.extend(built.graphs)
    summary, stats = tosa_summary(sidecar.model, built)
    decoded.summary["tosa_sidecar"] = (
        f"{sidecar.path.name} (matched by I/O: inputs {_describe(sidecar.inputs)}, "
        f"outputs {_describe(sidecar.outputs)}; tosa_spec {sidecar.spec})"
    )
    for key in (
        "tosa_version",
        "tosa_operators",
        "tosa_op_counts",
        "tosa_constant_bytes",
        "tosa_source_mapping",
    ):
        if key in summary:
            decoded.summary[f"sidecar_{key}"] = summary[key]
    for key, value in stats.items():
        decoded.stats[f"sidecar_{key}"] = value
    decoded.problems.extend(f"sidecar {sidecar.path.name}: {p}" for p in built.problems)


def note_identical_file(program: Program, delegates: list[Delegate]) -> None:
    """A TOSABackend payload is its own sidecar: name the identical intermediate file, if any."""
    cache: dict[Path, list[Sidecar]] = {}
    for delegate in delegates:
        _note_identical(program, delegate, cache)


def _note_identical(program: Program, delegate: Delegate, cache: dict[Path, list[Sidecar]]) -> None:
    payload = _payload_bytes(program, delegate)
    if payload is None or program.path is None:
        return
    folders = candidate_folders(program.path, delegate.spec("debug_artifact_path"))
    here = program.path.parent
    folder = _sidecar_folder(folders, here)
    if folder is None:
        return
    for sidecar in _load_sidecars(folder, here, cache):
        if len(sidecar.data) == len(payload) and sidecar.data == payload:
            delegate.decoded.summary["tosa_sidecar"] = f"{sidecar.path} (identical to the payload)"
            return
