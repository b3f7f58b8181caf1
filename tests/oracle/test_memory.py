"""The memory picture (analysis/memory.py) against ExecuTorch's own memory planning.

The oracle is recorded while each example is built (examples/memory_plan.py, `<stem>.memory.json`):
for every tensor spec the planner placed, its value index, arena (`mem_id`), offset (`mem_offset`),
size, and its lifetime as the planner computed it (first and last graph node that mentions it),
mapped onto the instructions the emitter wrote for those nodes. The adapter reads none of it: it
works lifetimes out from the instructions of the `.pte`. Here both must agree tensor by tensor,
and so must the live bytes at every instruction and the peak."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.memory import MethodMemory
from tests.support.examples import EXAMPLE_PTES


def _oracle(pte: Path) -> dict[str, Any]:
    path = pte.with_suffix(".memory.json")
    if not path.is_file():
        # Every example built by examples/build_examples.py (or build_vgf_example.py) since the
        # planner is recorded has its plan beside it; one built before must be rebuilt.
        pytest.skip(
            f"{path.name} was not recorded: rebuild with examples/build_examples.py --only "
            f"{pte.stem} (it records ExecuTorch's memory plan beside the .pte)"
        )
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _live(tensors: list[dict[str, Any]], steps: int) -> list[int]:
    """Planned bytes live at each instruction by the oracle's lifetimes, per arena each byte once."""
    out = []
    for i in range(steps):
        per_arena: dict[int, list[tuple[int, int]]] = {}
        for t in tensors:
            if t["first"] <= i <= t["last"]:
                per_arena.setdefault(t["mem_id"], []).append(
                    (t["mem_offset"], t["mem_offset"] + t["nbytes"])
                )
        total = 0
        for ranges in per_arena.values():
            covered: set[int] = set()
            for a, b in ranges:
                covered.update(range(a, b))
            total += len(covered)
        out.append(total)
    return out


def _methods(pte: Path) -> list[tuple[dict[str, Any], MethodMemory, list[int]]]:
    doc = _oracle(pte)
    result = pte_adapter.analyse(pte_adapter.load(pte))
    out = []
    for m in doc["methods"]:
        ma = result.method(m["name"])
        assert ma is not None, m["name"]
        out.append((m, ma.memory, list(ma.method.non_const_buffer_sizes)))
    assert {m["name"] for m in doc["methods"]} == {ma.name for ma in result.methods}
    return out


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_every_planned_tensor_lives_as_executorch_planned_it(pte: Path) -> None:
    for oracle, memory, sizes in _methods(pte):
        assert sizes == oracle["non_const_buffer_sizes"]
        ours = {t.value: t for t in memory.tensors}
        theirs = {t["value"]: t for t in oracle["tensors"]}
        assert set(ours) == set(theirs), (oracle["name"], set(ours) ^ set(theirs))
        for v, t in theirs.items():
            o = ours[v]
            got = (o.arena, o.offset, o.nbytes, o.first, o.last)
            want = (t["mem_id"], t["mem_offset"], t["nbytes"], t["first"], t["last"])
            assert got == want, f"{oracle['name']} %{v} ({o.kind}): ours {got}, planner {want}"


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_live_bytes_and_the_peak_agree_with_the_planner(pte: Path) -> None:
    for oracle, memory, sizes in _methods(pte):
        steps = oracle["instructions"]
        live = _live(oracle["tensors"], steps)
        assert memory.live_bytes == live, oracle["name"]
        peak = max(live, default=0)
        assert memory.peak_live_bytes == peak
        if steps:
            at = live.index(peak)
            assert memory.peak_at == at
            want = {t["value"] for t in oracle["tensors"] if t["first"] <= at <= t["last"]}
            assert {t.value for t in memory.live_at_peak} == want
        # The planner never needs more than the arenas it sized (each byte counted once).
        for arena in memory.arenas:
            assert arena.peak_bytes <= sizes[arena.arena]


def test_the_oracle_covers_views_state_and_control_flow() -> None:
    """The examples exercise the lifetime rules that are not first-write-to-last-read: a tensor
    that carries state between calls (mutable_buffer) and values held across a torch.cond."""
    kinds = {
        t.kind
        for pte in EXAMPLE_PTES
        if pte.stem in ("mutable_buffer", "cond")
        for _, memory, _ in _methods(pte)
        for t in memory.tensors
    }
    assert {"state", "input", "output", "intermediate"} <= kinds
