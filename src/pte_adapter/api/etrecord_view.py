"""An ETRecord opened on its own (in Model Explorer, or to write a sync mapping), with the program
it belongs to when that is beside it.

The program is looked for by the names an ETRecord goes by beside it, turned around
(`api/sidefiles.py`): `<stem>.etrecord` and `<stem>_etrecord.bin` belong to `<stem>.pte` or
`<stem>.bpte`; `etrecord.bin` (and any other name) to a `.pte` or `.bpte` of the same folder, the
first `MAX_PROGRAMS` by name. Each candidate is loaded without decoding its delegates and the
ETRecord is matched against it (`match_source`, the check every view makes); the one it belongs to
is then analysed with it (and with its ETDump, for measured time). Two that fit give no program
and one note naming both; none gives a note saying what was looked at and why each did not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pte_adapter.analysis.lowering_map import (
    AUTO,
    EtRecordAnalysis,
    analyse_etrecord,
    ancestor_handles,
    reference,
    sync_steps,
)
from pte_adapter.analysis.profile.time_scale import NANOSECONDS, TimeScale
from pte_adapter.analysis.source_match import match_source
from pte_adapter.api.sidefiles import (
    DEBUG_BUFFER,
    ETRECORD_NAMES,
    EtDumpChoice,
    candidates,
)
from pte_adapter.container import files
from pte_adapter.container._generated.etdump_schema import FILE_IDENTIFIER as ETDUMP_IDENTIFIER
from pte_adapter.container.etrecord_graphs import is_etrecord, read_etrecord_graphs
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Program

MAX_PROGRAMS: Final = 16
PROGRAM_SUFFIXES: Final = (".pte", ".bpte")
_ARM_SUFFIX: Final = "_etrecord.bin"


def program_candidates(etrecord: Path) -> list[Path]:
    """The programs an ETRecord at this path may belong to, by its name (module docstring)."""
    name, folder = etrecord.name, etrecord.parent
    stem = None
    if name.endswith(_ARM_SUFFIX) and len(name) > len(_ARM_SUFFIX):
        stem = name[: -len(_ARM_SUFFIX)]
    elif etrecord.suffix == ".etrecord":
        stem = etrecord.stem
    if stem is not None:
        named = [folder / f"{stem}{s}" for s in PROGRAM_SUFFIXES]
        return [p for p in named if _present(p)]
    try:
        found = sorted(p for p in folder.iterdir() if p.suffix in PROGRAM_SUFFIXES)
    except OSError:
        return []
    return [p for p in found if _present(p)][:MAX_PROGRAMS]


def _present(path: Path) -> bool:
    try:
        return files.probe(path)
    except PteFormatError:
        return False


def open_etrecord(
    path: str | Path,
    program: str | Path | None = None,
    *,
    profile: bool = True,
    etdump: str | Path | None = None,
    time_scale: TimeScale | None = None,
) -> EtRecordAnalysis:
    """The ETRecord's graphs (PteFormatError when it cannot be read) and, with the program it
    belongs to (`program`, else one beside it), where their nodes ran and, when `profile`, the
    time the program's ETDump (`etdump`, else the one beside it; ticks in `time_scale`, else as
    its name says) measured there. The program is read without decoding its delegate payloads:
    only its instructions, partitions and times are needed here."""
    from pte_adapter.api import analyse, load
    from pte_adapter.api.sidefiles import choose_etdump

    path = Path(path)
    graphs = read_etrecord_graphs(path)
    record = graphs.record
    if record is None:
        note = (
            "it has no debug handle map (saved without its ExecuTorch program): where its "
            "nodes ran is not known"
        )
        return analyse_etrecord(graphs, None, [note])
    given = [Path(program)] if program is not None else program_candidates(path)
    notes: list[str] = []
    fits: list[tuple[Path, Program]] = []
    for candidate in given:
        if program is None and not files.inside_folder(candidate, path.parent):
            notes.append(f"{candidate.name} not read: a symlink leads outside the folder")
            continue
        try:
            prog = load(candidate, decode_delegates=False, sidecars=False)
        except PteFormatError as e:
            notes.append(f"{candidate.name} not used: {e}")
            continue
        _, mismatch = match_source(prog, record)
        notes.extend(m.replace(" to this program", f" to {candidate.name}") for m in mismatch)
        if not mismatch:
            fits.append((candidate, prog))
    if not given:
        notes.append(f"no program beside it: {_looked_for(path)}")
    if len(fits) > 1:
        names = " and ".join(p.name for p, _ in fits)
        notes.append(f"it fits {len(fits)} programs ({names}); none is used: open the program")
        fits = []
    if not fits:
        return analyse_etrecord(graphs, None, notes)
    where, prog = fits[0]
    prog.etrecord = record
    given_dump = Path(etdump) if etdump is not None else None
    choice = choose_etdump(prog, where, given_dump) if profile else EtDumpChoice()
    scale = time_scale or choice.time_scale or NANOSECONDS
    result = analyse(prog, choice.dump, time_scale=scale)
    notes = [f"the program of {where.name}", *notes, *choice.problems]
    if choice.error is not None:
        notes.append(f"measured time not shown: {choice.error}")
    return analyse_etrecord(graphs, result, notes)


def _looked_for(path: Path) -> str:
    name = path.name
    if name.endswith(_ARM_SUFFIX) and len(name) > len(_ARM_SUFFIX):
        stem = name[: -len(_ARM_SUFFIX)]
    elif path.suffix == ".etrecord":
        stem = path.stem
    else:
        return "no .pte or .bpte in its folder"
    return "looked for " + " and ".join(f"{stem}{s}" for s in PROGRAM_SUFFIXES)


def open_etrecord_file(
    path: Path,
    *,
    profile: bool = True,
    etdump: str | Path | None = None,
    time_scale: TimeScale | None = None,
) -> EtRecordAnalysis:
    """`open_etrecord` for a file opened as a graph: a `.bin` that is not an ETRecord raises one
    PteFormatError saying what it is not (and, for an ETDump, where its times show)."""
    if path.suffix != ".etrecord" and not is_etrecord(path):
        raise not_an_etrecord(path)
    return open_etrecord(path, profile=profile, etdump=etdump, time_scale=time_scale)


def not_an_etrecord(path: Path) -> PteFormatError:
    """Why a file the adapter was asked to open as an ETRecord is not one, in one sentence."""
    what = "it is not an ETRecord (a zip with an ETRECORD_V0 entry)"
    try:
        with files.open_regular(path, path.name) as f:
            head = f.read(12)
    except PteFormatError as e:
        return e
    except OSError as e:
        return PteFormatError(f"cannot be read: {e.strerror or e}", part=path.name)
    if ETDUMP_IDENTIFIER in (head[4:8], head[8:12]):  # plain, or size-prefixed as written
        what = "it is an ETDump: its measured time shows on its program (open the .pte beside it)"
    elif path.name == DEBUG_BUFFER:
        what = "it is a debug buffer (intermediate outputs beside an ETDump), not an ETRecord"
    return PteFormatError(
        f"{what}; the adapter opens a .bin only when it is an ETRecord "
        "(etrecord.bin, <stem>_etrecord.bin)",
        part=path.name,
    )


@dataclass
class SyncMapping:
    """A sync mapping and what it maps: the program and ETRecord files, the two graphs."""

    document: dict[str, Any]  # Model Explorer's sync-navigation JSON (render/sync_mapping.py)
    program: Path
    etrecord: Path
    left_graph: str  # the method graph's id
    right_graph: str  # the ETRecord graph's id (its entry name)
    note: str = ""  # how the right graph was chosen, when not as asked

    @property
    def entries(self) -> int:
        return len(self.document["mappingEntries"])


def sync_mapping(
    program: str | Path,
    *,
    etrecord: str | Path | None = None,
    to: str = AUTO,
    method: str = "forward",
) -> SyncMapping:
    """The sync mapping between the program's method graph and its ETRecord's graph `to` (the
    exported program when the ETRecord records it, else the edge program: `lowering_map.AUTO`;
    `exported`, `edge`, or a graph-map entry). Raises PteFormatError with one line when no
    mapping can be made: no ETRecord, one of another program, a graph it does not record."""
    from pte_adapter.api import open_analysis
    from pte_adapter.render.plan.program import program_plan
    from pte_adapter.render.sync_mapping import sync_mapping as mapping_document

    path = Path(program)
    where = _etrecord_path(path, Path(etrecord) if etrecord is not None else None)
    graphs = read_etrecord_graphs(where)
    record = graphs.record
    if record is None:
        raise PteFormatError(
            "it has no debug handle map (saved without its ExecuTorch program): no mapping "
            "can be made from it",
            part=where.name,
        )
    result = open_analysis(path, etrecord=where, profile=False)
    if result.source is None:
        why = next((p for p in result.problems if "does not belong" in p), "")
        raise PteFormatError(
            (why or f"{where.name} does not belong to this program") + "; no mapping written",
            part=path.name,
        )
    ma = result.method(method)
    if ma is None or method not in record.methods:
        names = ", ".join(m.name for m in result.methods)
        raise MappingUsageError(f"--method {method}: the program's methods are {names}")
    ref = reference(graphs, to, method)
    steps = sync_steps(ma.method, record.methods[method], ref)
    # Decoded operations that name the exported node they come from link by its handle: read only
    # when some operation of the method records one (the provenance costs a parse per node).
    named = any(
        op.source_nodes
        for d in ma.method.delegates
        if d.decoded is not None
        for view in d.decoded.graphs
        for op in view.nodes
    )
    source_handles = ancestor_handles(graphs, method) if named else {}
    placement = program_plan(result).methods[method]
    document = mapping_document(
        ma,
        placement,
        steps,
        ref,
        source_handles,
        left_model=path.name,
        right_model=where.name,
    )
    return SyncMapping(document, path, where, placement.graph_id, ref.graph.part, ref.note)


class MappingUsageError(PteFormatError):
    """A mapping asked for in a way the program cannot give (an unknown method): a usage error."""


def _etrecord_path(program: Path, given: Path | None) -> Path:
    """The ETRecord to map with: `given`, else the one beside the program that fits it."""
    from pte_adapter.api import load

    if given is not None:
        return given
    found = [c for c in candidates(program, ETRECORD_NAMES) if c.error is None]
    if not found:
        looked = ", ".join(n.format(stem=program.stem) for n in ETRECORD_NAMES)
        raise PteFormatError(
            f"no ETRecord beside it (looked for {looked}): a mapping needs the program's "
            "ETRecord; pass it with --etrecord",
            part=program.name,
        )
    if len(found) == 1:
        return found[0].path
    prog = load(program, decode_delegates=False, sidecars=False)
    fits = []
    for c in found:
        try:
            record = read_etrecord_graphs(c.path, inside=program.parent).record
        except PteFormatError:
            continue
        if record is not None and not match_source(prog, record)[1]:
            fits.append(c)
    if len(fits) != 1:
        what = "none fits" if not fits else "more than one fits"
        names = ", ".join(c.path.name for c in found)
        raise PteFormatError(
            f"{len(found)} ETRecords beside it ({names}) and {what} this program: pass the one "
            "to use with --etrecord",
            part=program.name,
        )
    return fits[0].path
