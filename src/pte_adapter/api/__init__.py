"""The Python API: open a `.pte` (or its bytes), analyse it, and get the numbers.

    program = load("model.pte")          # the typed model, every delegate payload decoded
    result = analyse(program)            # partitions, layers, reasons, estimates ... once
    numbers = summarize(program)         # what `pte-adapter summary --json` prints
    report("model.pte").save("r.html")   # what `pte-adapter report` writes (inline in Jupyter)

Side files are found beside the program: `.ptd` external data, the Arm backend's intermediate
`.tosa` files, the ETRecord and the ETDump by the names people and tools give them
(`api/sidefiles.py`: `<stem>.etrecord`, `<stem>_etrecord.bin`, `etrecord.bin`; `<stem>.etdp`,
`<stem>.etdump`, `etdump.bin`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pte_adapter.analysis.profile.time_scale import NANOSECONDS, TimeScale
from pte_adapter.analysis.program_analysis import ProgramAnalysis, analyse
from pte_adapter.api.report import Report, Summary
from pte_adapter.api.sidefiles import EtDumpChoice, choose_etdump, choose_etrecord
from pte_adapter.container import files
from pte_adapter.container.pte import PTE_IDENTIFIER, PteFile, map_file
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.registry import (
    attach_partition_reports,
    attach_side_files,
    decode_payload,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from pte_adapter.program.model import Program
from pte_adapter.program.reader import read_program

# What serves only side files (a bundle's reader, the ETRecord's, the numeric gap) and what only
# `summarize` uses is imported when used: a conversion of a program alone does not pay for it
# (issue 49; tests/project/test_dependencies.py). The public names among them are looked up on
# first use (`__getattr__`). (`api/report.py` is imported here: importing it later would make
# this package's `report` the module, not the function below.)
if TYPE_CHECKING:
    from pte_adapter.api.numerics import AotUnavailable, NumericsOptions

_LAZY = {
    "AotUnavailable": "pte_adapter.api.numerics",
    "NumericsOptions": "pte_adapter.api.numerics",
}


def __getattr__(name: str) -> Any:
    """The public names whose modules are imported on first use (`_LAZY`)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AotUnavailable",
    "NumericsOptions",
    "ProgramAnalysis",
    "Report",
    "Summary",
    "analyse",
    "load",
    "load_bytes",
    "open_analysis",
    "report",
    "summarize",
]


def load(
    path: str | Path,
    *,
    decode_delegates: bool = True,
    sidecars: bool = True,
    etrecord: str | Path | None = None,
) -> Program:
    """Read a `.pte` or a BundledProgram (memory-mapped) and decode its delegate payloads.

    Raises `PteFormatError` when the program itself cannot be read. A delegate payload that cannot
    be decoded does not raise: its problems are recorded on the delegate. The ETRecord
    (`etrecord`, else `<stem>.etrecord` beside the `.pte` when `sidecars`) is read and kept on the
    program; `analyse` uses it only if it belongs to the program. A corrupt one is a problem on the
    program.
    """
    path = Path(path)
    data = map_file(path)
    program = read_container(data, path.name, path)
    if decode_delegates:
        decode_all(program)
        if sidecars:
            attach_side_files(program)
            attach_partition_reports(program)
    note_side_file_problems(program)
    if etrecord is not None:
        read_etrecord_into(program, Path(etrecord), explicit=True)
    elif sidecars:
        choice = choose_etrecord(program, path)
        program.etrecord = choice.record
        program.problems.extend(choice.problems)
    return program


def read_etrecord_into(program: Program, path: Path, *, explicit: bool = False) -> None:
    """Read the ETRecord at `path` onto the program. A missing file is silent when it was only
    looked for beside the `.pte`; an unreadable one is a problem of the program."""
    from pte_adapter.container.etrecord import read_etrecord

    try:
        if not explicit and not files.probe(path):
            return
        program.etrecord = read_etrecord(path)
    except PteFormatError as e:
        program.problems.append(f"ETRecord not used: {e}")


def read_container(data: memoryview | bytes, name: str, path: Path | None) -> Program:
    """The program of a `.pte`, or of the BundledProgram that wraps one (told by its identifier,
    whatever the file is called); no delegate decoding."""
    if bytes(data[4:8]) == PTE_IDENTIFIER:  # a program: the bundle's reader is not needed
        return read_program(PteFile(data, name), path)
    from pte_adapter.container.bundle import is_bundle, read_bundle, reading_program_of

    bundle = read_bundle(data, name) if is_bundle(data) else None
    with reading_program_of(bundle):
        if bundle is None:
            return read_program(PteFile(data, name), path)
        program = read_program(PteFile(bundle.program_bytes, bundle.program_name), path)
    program.bundle = bundle
    program.file_size = bundle.size
    return program


def load_bytes(data: bytes | memoryview, name: str = "<bytes>") -> Program:
    """Like `load`, for bytes already in memory (no sidecar files are searched)."""
    program = read_container(data, name, None)
    decode_all(program)
    note_side_file_problems(program)
    return program


def note_side_file_problems(program: Program) -> None:
    """Side files that were looked at but could not be read (a corrupt `.ptd` beside the `.pte`)
    become problems of the program: they never stop it opening, and are never silently dropped."""
    if program.sources is None:
        return
    for problem in program.sources.ptd_problems:
        text = f"external data file {problem} (ignored)"
        if text not in program.problems:
            program.problems.append(text)


def decode_all(program: Program) -> None:
    """Decode every delegate's payload. Entries that name the same bytes with the same backend
    and compile specs (ExecuTorch shares a payload between methods; a file can point thousands of
    entries at one) are decoded once, and each gets its own copy of the result's lists and
    dicts, which the side-file hooks extend per delegate, around the same graphs."""
    decoded: dict[tuple[object, ...], DecodedDelegate] = {}
    for method in program.methods:
        for delegate in method.delegates:
            try:
                payload = program.delegate_payload(delegate)
            except PteFormatError as e:
                delegate.problems.append(str(e))
                continue
            if payload is None:
                continue
            key = (
                delegate.id,
                delegate.payload_offset,
                len(payload),
                tuple((s.key, s.value) for s in delegate.compile_specs),
            )
            first = decoded.get(key)
            if first is not None:
                delegate.decoded = replace(
                    first,
                    graphs=list(first.graphs),
                    summary=dict(first.summary),
                    stats=dict(first.stats),
                    problems=list(first.problems),
                )
                continue
            ctx = DecodeContext(
                delegate_id=delegate.id,
                compile_specs={s.key: s.value for s in delegate.compile_specs},
                sources=program.sources,
                pte_path=program.path,
                payload_offset=delegate.payload_offset,
            )
            delegate.decoded = decoded[key] = decode_payload(payload, ctx)


def open_analysis(
    path: str | Path,
    *,
    etrecord: str | Path | None = None,
    etdump: str | Path | None = None,
    profile: bool = True,
    time_scale: TimeScale | None = None,
    numerics: NumericsOptions | None = None,
) -> ProgramAnalysis:
    """Load and analyse a program with its side files: the ETRecord and, when `profile`, the
    ETDump (`etdump`, else the one beside it by any of its names: `api/sidefiles.py`), its ticks
    in `time_scale`, else the scale its file name gives, else nanoseconds. An ETDump that cannot
    be used (corrupt, recorded running another program, or one of two that fit) is kept as the
    analysis's `profile_error`; what was noticed on the way is in its `problems`.

    With `numerics`, the run's intermediate outputs (its debug buffer) are compared as it says
    (`api/numerics.py`): `result.numerics`, or why not in `result.numerics_error`; raises
    `AotUnavailable` when `numerics.aot` is asked for without torch and executorch."""
    program = load(path, etrecord=etrecord)
    choice = EtDumpChoice()
    if profile or numerics is not None:
        choice = choose_etdump(program, Path(path), Path(etdump) if etdump is not None else None)
    scale = time_scale or choice.time_scale or NANOSECONDS
    result = analyse(program, choice.dump, time_scale=scale)
    result.problems.extend(choice.problems)
    notes = choice.debug_buffer_note if numerics is None else []
    result.notes.extend(notes)
    if result.profile_summary is not None:
        result.profile_summary["problems"].extend(choice.problems)
        result.profile_summary["notes"].extend(notes)
    if choice.error is not None:
        result.profile_error = choice.error
    if numerics is not None:
        from pte_adapter.api.numerics import add_numerics

        add_numerics(result, choice, numerics)
    return result


def summarize(program: Program | ProgramAnalysis) -> Summary:
    """The numbers of `pte-adapter summary --json`, as plain data (docs/json.md): a dict, which
    a notebook shows as the partition strip and the numbers."""
    from pte_adapter.render.summary_json import summary_json

    result = program if isinstance(program, ProgramAnalysis) else analyse(program)
    return Summary(summary_json(result), result)


def _analysis(
    program: str | Path | Program | ProgramAnalysis,
    etrecord: str | Path | None = None,
    etdump: str | Path | None = None,
    numerics: NumericsOptions | None = None,
) -> ProgramAnalysis:
    if isinstance(program, ProgramAnalysis):
        return program
    if isinstance(program, Program):
        return analyse(program)
    return open_analysis(program, etrecord=etrecord, etdump=etdump, numerics=numerics)


def report(
    program: str | Path | Program | ProgramAnalysis,
    after: str | Path | Program | ProgramAnalysis | None = None,
    *,
    etrecord: str | Path | None = None,
    etdump: str | Path | None = None,
    numerics: NumericsOptions | None = None,
) -> Report:
    """The report of a program (its ETRecord and ETDump found beside it, or named), or, with
    `after`, the comparison of two: `.html`, `.save(path)`, and inline in a notebook. With
    `numerics` (a path to open, not an analysis already made), its numeric gap too."""
    before = _analysis(program, etrecord, etdump, numerics)
    return Report(before, _analysis(after) if after is not None else None)
