"""The numeric gap of a program's run, with the files it needs found or given.

    result = open_analysis("int8.pte", numerics=NumericsOptions(reference=Path("float.pte")))
    result.numerics.methods["forward"].worst     # the lowest SNR, and where

This program's ETDump is the one `open_analysis` chose (`etdump=`, else beside it); its debug
buffer is `debug_buffer`, else found beside the ETDump (`api/sidefiles.py`). With `reference`, the
other program's ETRecord, ETDump and debug buffer are found beside it the same way unless given;
with `aot`, ExecuTorch's Inspector runs this program's ETRecord graph (opt-in: it runs code the
ETRecord describes; `AotUnavailable` without torch and executorch).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pte_adapter.analysis.numerics.aot import AotUnavailable
from pte_adapter.analysis.numerics.rows import DEFAULT_THRESHOLD_DB, ProgramNumerics
from pte_adapter.analysis.program_analysis import ProgramAnalysis, analyse
from pte_adapter.api.sidefiles import (
    EtDumpChoice,
    choose_debug_buffer,
    choose_etdump,
    no_etdump,
)
from pte_adapter.errors import PteFormatError, detached
from pte_adapter.program.model import Program

if TYPE_CHECKING:  # imported when numbers are compared: `import pte_adapter` does not pay for them
    from pte_adapter.analysis.numerics.side import Side

__all__ = ["AotUnavailable", "NumericsOptions", "add_numerics"]


@dataclass(frozen=True)
class NumericsOptions:
    """What to compare this program's run with, and which files to read (None: found)."""

    debug_buffer: Path | None = None
    reference: Path | None = None  # another program's run (`--reference`)
    reference_etdump: Path | None = None
    reference_debug_buffer: Path | None = None
    reference_etrecord: Path | None = None
    aot: bool = False  # the ETRecord's graph run by ExecuTorch's Inspector (`--aot`)
    threshold_db: float = DEFAULT_THRESHOLD_DB
    run: int = 0  # which run of each method (0: the first)


def _side(
    program: Program, result: ProgramAnalysis, choice: EtDumpChoice, given: Path | None
) -> Side:
    """A program and its run (the ETDump chosen, its debug buffer found or given)."""
    from pte_adapter.analysis.numerics.side import RecordedRun, Side

    if choice.error is not None:
        raise choice.error
    if choice.dump is None:
        assert program.path is not None
        raise no_etdump(program.path)
    assert program.path is not None
    buffers = choose_debug_buffer(program.path, choice.path, choice.dump, given)
    run = RecordedRun(choice.dump, buffers.buffer, buffers.problem)
    side = Side(program, {m.name: m.partitions for m in result.methods}, result.source, run)
    side.logs.problems += buffers.problems
    return side


def _reference(options: NumericsOptions) -> Side:
    from pte_adapter.api import load

    assert options.reference is not None
    program = load(options.reference, etrecord=options.reference_etrecord)
    result = analyse(program)
    choice = choose_etdump(program, options.reference, options.reference_etdump)
    try:
        return _side(program, result, choice, options.reference_debug_buffer)
    except PteFormatError as e:
        raise PteFormatError(f"reference: {e}") from e


def program_numerics(
    result: ProgramAnalysis, choice: EtDumpChoice, options: NumericsOptions
) -> ProgramNumerics:
    """The numeric gap (module docstring). Raises `PteFormatError` when there is no run to read
    (no ETDump, an unusable one) and `AotUnavailable` for `aot` without torch and executorch."""
    from pte_adapter.analysis.numerics.aot import aot_numerics
    from pte_adapter.analysis.numerics.compare import numerics_of

    side = _side(result.program, result, choice, options.debug_buffer)
    if options.aot:
        record = result.program.etrecord
        if record is None or record.path is None or result.source is None:
            raise PteFormatError(
                "--aot needs the program's ETRecord with its representative inputs "
                "(generate_etrecord=True, update_representative_inputs): none belongs to it",
                part=side.name,
            )
        if side.run.buffer is None or choice.path is None:
            raise PteFormatError(side.run.buffer_problem or "no debug buffer", part=side.name)
        # The Inspector reads the buffer itself, from the file this reader mapped.
        buffer_path = _buffer_path(side, choice.path, options)
        return aot_numerics(side, choice.path, record.path, buffer_path, options.threshold_db)
    reference = _reference(options) if options.reference is not None else None
    return numerics_of(side, reference, options.threshold_db, options.run)


def _buffer_path(side: Side, dump_path: Path, options: NumericsOptions) -> Path:
    if options.debug_buffer is not None:
        return options.debug_buffer
    assert side.run.buffer is not None and side.program.path is not None
    for folder in (dump_path.parent, side.program.path.parent):
        if (folder / side.run.buffer.name).is_file():
            return folder / side.run.buffer.name
    return dump_path.parent / side.run.buffer.name


def add_numerics(result: ProgramAnalysis, choice: EtDumpChoice, options: NumericsOptions) -> None:
    """Put the numeric gap on the analysis (each method's `numerics`), or the reason there is none
    on `numerics_error`. `AotUnavailable` propagates: it is the caller's to word."""
    try:
        numerics = program_numerics(result, choice, options)
    except PteFormatError as e:
        result.numerics_error = detached(e)  # kept on the analysis: no traceback (issue 44)
        return
    result.numerics = numerics
    for m in result.methods:
        m.numerics = numerics.methods.get(m.name)
