"""Open a `.pte` with its ETDump: the profile beside the program unless another path is given."""

from __future__ import annotations

from pathlib import Path

from pte_adapter.analysis.profile.join import ProgramProfile, join_profile
from pte_adapter.api import load
from pte_adapter.container.etdump import load_etdump
from pte_adapter.program.model import Program

ETDUMP_SUFFIX = ".etdp"


def etdump_beside(pte: str | Path) -> Path:
    """`model.etdp` for `model.pte`: where `examples/profile_examples.py` (and people) put it."""
    return Path(pte).with_suffix(ETDUMP_SUFFIX)


def load_profile(
    pte: str | Path, etdump: str | Path | None = None, program: Program | None = None
) -> tuple[Program, ProgramProfile]:
    """Read the program and its ETDump and place the events.

    Raises `PteFormatError` for an unreadable file and `ProfileMismatchError` (a subclass) when
    the ETDump was recorded running another program."""
    program = program if program is not None else load(pte)
    path = Path(etdump) if etdump is not None else etdump_beside(pte)
    return program, join_profile(program, load_etdump(path))
