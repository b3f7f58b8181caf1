"""`live_bytes` has two exact ways (analysis/live_bytes.py), chosen by cost: on every example, both
give the same bytes at every instruction, whichever the example's arenas take (the oracle test
checks the chosen one against ExecuTorch's planner)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis import live_bytes, memory
from tests.support.examples import EXAMPLE_PTES


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=lambda p: p.stem)
def test_the_two_ways_agree(pte: Path) -> None:
    result = pte_adapter.analyse(pte_adapter.load(pte))
    compared = 0
    for ma in result.methods:
        steps = len(ma.method.instructions)
        lives = memory.tensor_lives(ma.method, ma.partitions)
        for arena in {t.arena for t in lives}:
            mine = [t for t in lives if t.arena == arena and 0 <= t.first < steps]
            cuts, where = live_bytes._segments(mine)
            by_step = live_bytes._live_bytes_by_step(mine, steps)
            assert live_bytes._live_bytes_by_segment(mine, steps, cuts, where) == by_step
            assert live_bytes.live_bytes(mine, steps) == by_step
            compared += any(by_step)
    if any(ma.memory.peak_live_bytes for ma in result.methods):
        assert compared
