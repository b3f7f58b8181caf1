"""A server that stays small (issue 44): one adapter instance opening real programs beside a few
hundred mutated ETRecords and ETDumps (`tests/support/server_memory.py`, in a fresh interpreter)
leaves nothing in reference cycles and stays under 300 MB.

Nothing here is timed: the cycle count is exact, and the memory it used to leave grew by about
half a megabyte per input (about 100 MB over this run), five times the margin allowed."""

from __future__ import annotations

from tests.support.server_memory import run_in_subprocess

INPUTS = 200
SEED = 44
MAX_MB = 300.0
MAX_GROWTH_MB = 30.0


def test_mutated_side_files_leave_nothing_behind() -> None:
    figures = run_in_subprocess(INPUTS, SEED)
    assert figures["programs"] >= 8, figures
    assert figures["unreachable"] == 0, figures  # no conversion left a cycle
    assert figures["peak_mb"] < MAX_MB, figures
    assert figures["rss_end_mb"] - figures["rss_start_mb"] < MAX_GROWTH_MB, figures
