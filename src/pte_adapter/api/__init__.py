"""The Python API: load a `.pte` into the typed model, with every delegate payload decoded."""

from __future__ import annotations

from pathlib import Path

from pte_adapter.analysis.source import match_source
from pte_adapter.container.etrecord import read_etrecord
from pte_adapter.container.pte import PteFile, map_file
from pte_adapter.delegates.registry import DecodeContext, decode_payload
from pte_adapter.delegates.tosa.sidecars import attach_tosa_sidecars
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Delegate, Program
from pte_adapter.program.reader import read_program


def load(
    path: str | Path,
    *,
    decode_delegates: bool = True,
    sidecars: bool = True,
    etrecord: str | Path | None = None,
) -> Program:
    """Read a `.pte` (memory-mapped) and decode its delegate payloads.

    Raises `PteFormatError` when the program itself cannot be read. A delegate payload that cannot
    be decoded does not raise: its problems are recorded on the delegate. The ETRecord
    (`etrecord`, else `<stem>.etrecord` beside the `.pte` when `sidecars`) is attached when it
    belongs to the program; a corrupt or foreign one is only a problem on the program.
    """
    path = Path(path)
    try:
        data = map_file(path)
    except OSError as e:
        raise PteFormatError(f"cannot open: {e.strerror or e}", part=str(path)) from e
    program = read_program(PteFile(data, path.name), path)
    if decode_delegates:
        decode_all(program)
        if sidecars:
            attach_tosa_sidecars(program)
    note_side_file_problems(program)
    if etrecord is not None or sidecars:
        attach_etrecord(
            program,
            Path(etrecord) if etrecord is not None else path.with_suffix(".etrecord"),
            explicit=etrecord is not None,
        )
    return program


def attach_etrecord(program: Program, path: Path, *, explicit: bool = False) -> None:
    """Read the ETRecord at `path` and keep it on the program if it belongs to it.

    A missing file is silent when it was only looked for beside the `.pte`."""
    if not explicit and not path.is_file():
        return
    try:
        record = read_etrecord(path)
    except PteFormatError as e:
        program.problems.append(f"ETRecord not used: {e}")
        return
    _, problems = match_source(program, record)
    if problems:
        program.problems.extend(problems)
        return
    program.etrecord = record


def load_bytes(data: bytes | memoryview, name: str = "<bytes>") -> Program:
    """Like `load`, for bytes already in memory (no sidecar files are searched)."""
    program = read_program(PteFile(data, name), None)
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


def delegate_payload(program: Program, delegate: Delegate) -> memoryview | None:
    """The delegate's payload bytes (see `Program.delegate_payload`)."""
    return program.delegate_payload(delegate)


def decode_all(program: Program) -> None:
    for method in program.methods:
        for delegate in method.delegates:
            try:
                payload = program.delegate_payload(delegate)
            except PteFormatError as e:
                delegate.problems.append(str(e))
                continue
            if payload is None:
                continue
            ctx = DecodeContext(
                delegate_id=delegate.id,
                compile_specs={s.key: s.value for s in delegate.compile_specs},
                sources=program.sources,
                pte_path=program.path,
                payload_offset=delegate.payload_offset,
            )
            delegate.decoded = decode_payload(payload, ctx)
