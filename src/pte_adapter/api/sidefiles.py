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

`debug_buffer.bin`, which the FVP scripts decode beside `etdump.bin` (intermediate outputs for the
Inspector's numerical comparison), is never read: a note says so.
"""

from __future__ import annotations

import copy
import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pte_adapter.analysis.profile.join import join_profile
from pte_adapter.analysis.profile.time_scale import TimeScale, scale_in_name
from pte_adapter.analysis.source_match import match_source
from pte_adapter.container import files
from pte_adapter.container.etdump import ETDump, load_etdump
from pte_adapter.container.etrecord import EtRecord, read_etrecord
from pte_adapter.errors import PteFormatError, detached
from pte_adapter.program.model import Program

ETRECORD_NAMES: Final = ("{stem}.etrecord", "{stem}_etrecord.bin", "etrecord.bin")
ETDUMP_NAMES: Final = ("{stem}.etdp", "{stem}.etdump", "etdump.bin")
DEBUG_BUFFER: Final = "debug_buffer.bin"


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
    return read_etrecord(c.path, inside=folder)


def _read_etdump(c: Candidate, folder: Path | None) -> ETDump:
    if c.error is not None:
        raise copy.copy(c.error)
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


def _debug_buffer_note(dump_path: Path) -> list[str]:
    try:
        if not files.probe(dump_path.parent / DEBUG_BUFFER):
            return []
    except PteFormatError:
        return []
    return [
        f"{DEBUG_BUFFER} beside {dump_path.name} is not read: it holds intermediate outputs for "
        "the Inspector's numerical comparison, not times"
    ]


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
        choice.problems += _debug_buffer_note(found[0].path)
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
    return _fitting_etdump(program, read, choice)


def _fitting_etdump(
    program: Program, read: list[tuple[Candidate, ETDump]], choice: EtDumpChoice
) -> EtDumpChoice:
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
        choice.dump, choice.time_scale = dump, c.time_scale
        choice.problems += _debug_buffer_note(c.path)
    elif fits:
        how = "pass the one to use: pte-adapter profile PROGRAM ETDUMP, or remove the other"
        choice.error = PteFormatError(ambiguity("ETDump", [c for c, _ in fits], how))
    return choice
