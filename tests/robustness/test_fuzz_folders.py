"""Folder mutations (issue 33): seeded edits of a real program's folder (FIFOs, directories,
symlinks out and in loops, `/dev/null`, empty and foreign side files, sparse giants, names too
long; `tests/support/folder_fuzz.py`) end, through `summary`, `profile`, `report` and the Model
Explorer conversion, in a clear outcome within the hostile corpus's bounds, opening nothing
outside the folder. A failing input is replayed from its seed: `mutated_folder(seed, folder)`.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.folder_fuzz import EDITS, run_folders

SEED = 3300
INPUTS = 24


def test_folder_mutations_end_clearly(tmp_path: Path) -> None:
    bad, made = run_folders(INPUTS, SEED, tmp_path)
    assert not bad, bad
    assert len(made) >= len(EDITS) - 2, made  # the seeds cover (nearly) every edit kind
