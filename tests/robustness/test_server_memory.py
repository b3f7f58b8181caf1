"""A server that stays small (issue 44): one adapter instance opening real programs beside a few
hundred mutated ETRecords and ETDumps (`tests/support/server_memory.py`, in a fresh interpreter)
leaves nothing in reference cycles and stays under 300 MB.

Nothing here is timed: the cycle count is exact, and the memory it used to leave grew by about
half a megabyte per input (about 100 MB over this run), five times the margin allowed."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.examples import example
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


def test_a_kept_numerics_error_holds_no_frames(tmp_path: Path) -> None:
    """The reason a numeric gap cannot be computed is kept on the analysis (which the server's
    cache keeps) without its traceback, whose frames would hold the analysis in a cycle; the
    provider raises a copy, so the kept one never gets one."""
    from pte_adapter.api import NumericsOptions, open_analysis

    pte = tmp_path / "numerics_island_fp32.pte"
    shutil.copyfile(example("numerics_island_fp32"), pte)  # without its ETDump: no run to read
    result = open_analysis(pte, numerics=NumericsOptions())
    assert result.numerics is None and result.numerics_error is not None
    error: BaseException | None = result.numerics_error
    while error is not None:
        assert error.__traceback__ is None, error
        error = error.__cause__ or error.__context__
