"""The files of the same build beside a program, found by the names people and tools give them.

| file | names looked for beside `<stem>.pte` (or `<stem>.bpte`) | written by |
|---|---|---|
| ETRecord | `<stem>.etrecord`, `<stem>_etrecord.bin`, `etrecord.bin` | `ETRecord.save`; Arm's `aot_arm_compiler.py`; ExecuTorch's docs |
| ETDump | `<stem>.etdp`, `<stem>.etdump`, `etdump.bin` (each may carry a time scale: `<stem>.<scale>.etdp`, `etdump.<scale>.bin`, see `time_scale.py`) | the runtime's `ETDumpGen`; Arm's FVP scripts (`run_fvp.sh` decodes `etdump.bin`) |

A name given on the command line (`--etrecord`, the ETDump argument) always wins and nothing else
is looked at. Otherwise every candidate that exists is considered:

- one: it is used, exactly as under its canonical name (the analysis still checks that it
  belongs to the program and says so when it does not);
- several: each is checked against the program (an ETRecord by `match_source`, an ETDump by
  placing its runs), the one that fits is used and the others are named as not belonging; when two
  fit, neither is used and one problem names both, since picking one silently could show the
  wrong build's layers or times.

| debug buffer | `<stem>.debug_buffer.bin`, `<stem>_debug_output.bin` (under the program's stem, and the ETDump's); `debug_buffer.bin`, `debug_output.bin` beside the ETDump | the runtime's `write_etdump_result_to_file(etdump, debug_buffer)`; Arm's FVP scripts (`debug_buffer.bin` beside `etdump.bin`); ExecuTorch's runners (`debug_output.bin`) |

The debug buffer holds the intermediate outputs the ETDump's debug events point into. It is read
only when numbers are compared (`pte-adapter numerics`, `--reference`, `--aot`), given
(`--debug-buffer`, which wins) or found by these names; among several, the one every logged tensor
of the ETDump fits in is used (two that fit: neither, as above). A conversion without numerics only
notes that one is there.
"""

from __future__ import annotations

import copy
import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pte_adapter.analysis.profile.time_scale import TimeScale, scale_in_name
from pte_adapter.analysis.source_match import match_source
from pte_adapter.container import files
from pte_adapter.errors import PteFormatError, detached
from pte_adapter.program.model import Program

# The readers of the files found are imported when one is found: a program alone never reads
# them (issue 49; tests/project/test_dependencies.py).
if TYPE_CHECKING:
    from pte_adapter.container.debug_buffer import DebugBuffer
    from pte_adapter.container.etdump import ETDump, TensorRef
    from pte_adapter.container.etrecord import EtRecord

ETRECORD_NAMES: Final = ("{stem}.etrecord", "{stem}_etrecord.bin", "etrecord.bin")
# The suffixes an ETRecord goes by (`<stem>.etrecord`, `<stem>_etrecord.bin`, `etrecord.bin`).
# Model Explorer picks an adapter by the last suffix alone, so every `.bin` reaches the adapter:
# one that is not an ETRecord is refused with one sentence (`etrecord_view.not_an_etrecord`).
ETRECORD_SUFFIXES: Final = (".etrecord", ".bin")
ETDUMP_NAMES: Final = ("{stem}.etdp", "{stem}.etdump", "etdump.bin")
DEBUG_BUFFER: Final = "debug_buffer.bin"
# Under a stem (the program's, and the ETDump's), then beside the ETDump whatever its name.
DEBUG_BUFFER_STEM_NAMES: Final = ("{stem}.debug_buffer.bin", "{stem}_debug_output.bin")
DEBUG_BUFFER_NAMES: Final = (DEBUG_BUFFER, "debug_output.bin")


@dataclass(frozen=True)
class Candidate:
    path: Path
    rule: str  # the name it was found by: "<stem>_etrecord.bin", "etdump.<scale>.bin", "given"
    time_scale: TimeScale | None = None  # an ETDump's, from its name
    # Why the name could not even be looked up (too long, a symlink loop, no permission): the
    # candidate is then reported, never read.
    error: PteFormatError | None = None


MAX_SCALED = 64  # `<base>.<scale><suffix>` files considered per name (the first, by name)


def _scaled(folder: Path, name: str) -> list[tuple[Path, TimeScale]]:
    """`<base>.<scale><suffix>` files for `name` = `<base><suffix>` (`model.cycles.etdp`)."""
    base, dot, suffix = name.rpartition(".")
    found = []
    try:
        paths = sorted(folder.glob(f"{glob.escape(base)}.*.{suffix}"))
    except OSError:  # a folder that cannot be listed holds no candidates
        return []
    for p in paths:
        token = p.name[len(base) + 1 : -len(suffix) - 1]
        scale = scale_in_name(token)
        if scale is not None and dot:
            found.append((p, scale))
    return found


def _exists(path: Path, rule: str) -> Candidate | None:
    """The candidate at `path` when anything goes by that name (read later, and refused then if it
    is not a regular file inside the program's folder), or one that says why it cannot be looked
    up."""
    try:
        return Candidate(path, rule) if files.probe(path) else None
    except PteFormatError as e:
        return Candidate(path, rule, error=detached(e))


def candidates(program_path: Path, names: tuple[str, ...], scaled: bool = False) -> list[Candidate]:
    """The files beside the program named by `names` (and their scaled forms), in that order."""
    folder, stem = program_path.parent, program_path.stem
    out: list[Candidate] = []
    for pattern in names:
        name = pattern.format(stem=stem)
        rule = pattern.replace("{stem}", "<stem>")
        found = _exists(folder / name, rule) if folder / name != program_path else None
        out += [found] if found is not None else []
        for path, scale in _scaled(folder, name)[:MAX_SCALED] if scaled else []:
            base, _, suffix = rule.rpartition(".")
            out.append(Candidate(path, f"{base}.<scale>.{suffix}", scale))
    return out


def _read_etrecord(c: Candidate, folder: Path) -> EtRecord:
    if c.error is not None:
        raise copy.copy(c.error)  # the kept one stays without a traceback (`detached`)
    from pte_adapter.container.etrecord import read_etrecord

    return read_etrecord(c.path, inside=folder)


def _read_etdump(c: Candidate, folder: Path | None) -> ETDump:
    if c.error is not None:
        raise copy.copy(c.error)
    from pte_adapter.container.etdump import load_etdump

    return load_etdump(c.path, inside=folder)


def _scale_of(path: Path) -> TimeScale | None:
    """The scale a given file's name carries (`run1.cycles.etdp`), if any."""
    parts = path.name.split(".")
    return scale_in_name(parts[-2]) if len(parts) > 2 else None


def _names(program_path: Path, names: tuple[str, ...]) -> str:
    return ", ".join(n.format(stem=program_path.stem) for n in names)


def no_etdump(program_path: Path) -> PteFormatError:
    """The error of a command that needs an ETDump and found none beside the program."""
    return PteFormatError(
        f"no ETDump beside it (looked for {_names(program_path, ETDUMP_NAMES)}): pass its path",
        part=program_path.name,
    )


def ambiguity(what: str, fits: list[Candidate], how: str) -> str:
    files = " and ".join(f"{c.path.name} (as {c.rule})" for c in fits)
    return f"{len(fits)} {what}s beside it fit this program: {files}; none is used ({how})"


@dataclass
class EtRecordChoice:
    record: EtRecord | None = None
    problems: list[str] = field(default_factory=list)


def choose_etrecord(program: Program, program_path: Path) -> EtRecordChoice:
    """The ETRecord beside the program, by every name it goes by (module docstring)."""
    found = candidates(program_path, ETRECORD_NAMES)
    choice = EtRecordChoice()
    read: list[tuple[Candidate, EtRecord]] = []
    for c in found:
        try:
            read.append((c, _read_etrecord(c, program_path.parent)))
        except PteFormatError as e:
            choice.problems.append(f"ETRecord not used: {e}")
    if len(found) == 1:
        choice.record = read[0][1] if read else None
        return choice
    fits = []
    for c, record in read:
        _, mismatch = match_source(program, record)
        if mismatch:
            choice.problems.extend(mismatch)
        else:
            fits.append((c, record))
    if len(fits) == 1:
        choice.record = fits[0][1]
    elif fits:
        how = "pass the one to use with --etrecord, or remove the other"
        choice.problems.append(ambiguity("ETRecord", [c for c, _ in fits], how))
    return choice


@dataclass
class EtDumpChoice:
    dump: ETDump | None = None
    time_scale: TimeScale | None = None  # from the ETDump's name, when it names one
    error: PteFormatError | None = None  # the one ETDump beside it cannot be used
    problems: list[str] = field(default_factory=list)
    path: Path | None = None  # the ETDump used
    # That a debug buffer lies beside it, said when no numbers are compared (they read it).
    debug_buffer_note: list[str] = field(default_factory=list)


def debug_buffer_candidates(program_path: Path, dump_path: Path) -> list[Candidate]:
    """The debug buffers by every name they go by (module docstring), each file once."""
    out: list[Candidate] = []
    seen: set[Path] = set()
    stems = dict.fromkeys((program_path.stem, dump_path.stem.split(".")[0]))
    names = [
        (p.format(stem=s), p.replace("{stem}", "<stem>"))
        for s in stems
        for p in DEBUG_BUFFER_STEM_NAMES
    ]
    for folder, pairs in (
        (program_path.parent, names),
        (dump_path.parent, names + [(n, n) for n in DEBUG_BUFFER_NAMES]),
    ):
        for name, rule in pairs:
            path = folder / name
            if path not in seen:
                seen.add(path)
                found = _exists(path, rule)
                out += [found] if found is not None else []
    return out


def _debug_buffer_note(program_path: Path, dump_path: Path) -> list[str]:
    """A conversion without numerics reads no debug buffer; it says that one is there."""
    found = [c for c in debug_buffer_candidates(program_path, dump_path) if c.error is None]
    if not found:
        return []
    return [
        f"{found[0].path.name} beside {dump_path.name} holds intermediate outputs, read when "
        "numbers are compared: pte-adapter numerics (--reference OTHER.pte or --aot)"
    ]


def misfit(buffer: DebugBuffer, dump: ETDump) -> str:
    """'' when every tensor the ETDump logged lies inside the debug buffer, else one line."""
    from pte_adapter.analysis.numerics.logged import element_size
    from pte_adapter.container.debug_buffer import elements

    refs: list[TensorRef] = []
    for run in dump.runs:
        for e in run.debug_events:
            try:
                refs += e.value.tensors if e.value is not None else ()
            except PteFormatError:  # the numerics say so, run by run
                continue
    if buffer.size == 0 and refs:
        return (
            f"{buffer.name} is empty: it holds none of the {len(refs)} tensors {dump.name} logged"
        )
    outside = 0
    for t in refs:
        try:
            nbytes = elements(t) * element_size(t)
        except PteFormatError:
            outside += 1
            continue
        # An empty tensor holds no bytes (the runtime logs it at offset -1).
        outside += nbytes > 0 and (t.offset < 0 or t.offset + nbytes > buffer.size)
    if not outside:
        return ""
    return (
        f"{outside} of the {len(refs)} tensors {dump.name} logged lie outside {buffer.name} "
        f"({buffer.size} bytes): a debug buffer of another run, or cut short?"
    )


@dataclass
class DebugBufferChoice:
    buffer: DebugBuffer | None = None
    problem: str = ""  # why none is used, or what is wrong with the one used
    problems: list[str] = field(default_factory=list)  # the candidates not used


def choose_debug_buffer(
    program_path: Path, dump_path: Path | None, dump: ETDump, given: Path | None
) -> DebugBufferChoice:
    """The debug buffer given, else the one beside the ETDump that fits it (module docstring).
    Raises nothing: a buffer that cannot be used is the choice's `problem`."""
    choice = DebugBufferChoice()
    if given is not None:
        found = [Candidate(given, "given")]
    elif dump_path is not None:
        found = debug_buffer_candidates(program_path, dump_path)
    else:
        found = []
    if not found:
        where = f"beside {dump_path.name}" if dump_path is not None else "given"
        choice.problem = (
            f"no debug buffer {where} (looked for "
            f"{', '.join(c for c in _buffer_names(program_path, dump_path))}): pass --debug-buffer"
        )
        return choice
    from pte_adapter.container.debug_buffer import load_debug_buffer

    read = []
    for c in found:
        try:
            if c.error is not None:
                raise c.error
            inside = None if given is not None else c.path.parent
            read.append((c, load_debug_buffer(c.path, inside=inside)))
        except PteFormatError as e:
            choice.problems.append(f"debug buffer not used: {e}")
    if len(found) == 1:
        if read:
            choice.buffer = read[0][1]
            choice.problem = misfit(choice.buffer, dump)
        else:
            choice.problem = choice.problems.pop()
        return choice
    fits = [(c, b) for c, b in read if not misfit(b, dump)]
    if len(fits) == 1:
        choice.buffer = fits[0][1]
    elif fits:
        how = "pass the one to use with --debug-buffer, or remove the other"
        choice.problem = ambiguity("debug buffer", [c for c, _ in fits], how)
    else:
        choice.problem = (
            "; ".join(choice.problems + [misfit(b, dump) for _, b in read])
            or "no debug buffer fits the ETDump"
        )
    return choice


def _buffer_names(program_path: Path, dump_path: Path | None) -> list[str]:
    stem = program_path.stem
    names = [p.format(stem=stem) for p in DEBUG_BUFFER_STEM_NAMES]
    return names + (list(DEBUG_BUFFER_NAMES) if dump_path is not None else [])


def choose_etdump(program: Program, program_path: Path, given: Path | None) -> EtDumpChoice:
    """The ETDump given, else the one beside the program (module docstring). Raises nothing: an
    ETDump that cannot be used is the choice's `error`, as a foreign one is the analysis's."""
    choice = EtDumpChoice()
    found = (
        [Candidate(given, "given", _scale_of(given))]
        if given is not None
        else candidates(program_path, ETDUMP_NAMES, scaled=True)
    )
    if not found:
        return choice
    read: list[tuple[Candidate, ETDump]] = []
    for c in found:
        try:
            read.append((c, _read_etdump(c, None if given is not None else program_path.parent)))
        except PteFormatError as e:
            if len(found) == 1:
                choice.error = detached(e)
            else:
                choice.problems.append(f"ETDump not used: {e}")
    if len(found) == 1:
        if read:
            choice.dump, choice.time_scale = read[0][1], found[0].time_scale
            choice.path = found[0].path
        choice.debug_buffer_note = _debug_buffer_note(program_path, found[0].path)
        return choice
    if not read:  # several, none readable: the error says why, as for one
        shown = "; ".join(p.removeprefix("ETDump not used: ") for p in choice.problems[:3])
        more = len(choice.problems) - 3
        choice.error = PteFormatError(
            f"none of the {len(found)} ETDumps beside it can be read: {shown}"
            + (f"; and {more} more" if more > 0 else ""),
            part=program_path.name,
        )
        return choice
    return _fitting_etdump(program, program_path, read, choice)


def _fitting_etdump(
    program: Program,
    program_path: Path,
    read: list[tuple[Candidate, ETDump]],
    choice: EtDumpChoice,
) -> EtDumpChoice:
    from pte_adapter.analysis.profile.join import join_profile

    fits = []
    for c, dump in read:
        try:
            join_profile(program, dump)
        except PteFormatError as e:
            choice.problems.append(f"ETDump not used: {e}")
        else:
            fits.append((c, dump))
    if len(fits) == 1:
        ((c, dump),) = fits
        choice.dump, choice.time_scale, choice.path = dump, c.time_scale, c.path
        choice.debug_buffer_note = _debug_buffer_note(program_path, c.path)
    elif fits:
        how = "pass the one to use: pte-adapter profile PROGRAM ETDUMP, or remove the other"
        choice.error = PteFormatError(ambiguity("ETDump", [c for c, _ in fits], how))
    return choice
