"""The memory picture (analysis/memory.py) against ExecuTorch's own memory planning.

The oracle is recorded while each example is built (examples/memory_plan.py, `<stem>.memory.json`):
for every tensor spec the planner placed, its value index, arena (`mem_id`), offset (`mem_offset`),
size, and its lifetime as the planner computed it (first and last graph node that mentions it),
mapped onto the instructions the emitter wrote for those nodes. The adapter reads none of it: it
works lifetimes out from the instructions of the `.pte`. Here both must agree tensor by tensor,
and so must the live bytes at every instruction and the peak, save the one thing the file
cannot show (`_planned_lives`). Every shipped example has its plan: a missing one fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.dataflow import tensor_values
from pte_adapter.analysis.memory import MethodMemory
from pte_adapter.analysis.program_analysis import MethodAnalysis
from tests.support.examples import EXAMPLE_PTES, EXAMPLES


def _oracle(pte: Path) -> dict[str, Any]:
    path = pte.with_suffix(".memory.json")
    if not path.is_file():
        # Every shipped example has its plan beside it (examples/build_examples.py records it
        # while it builds): a missing one is a failure, not a skip, or an example could ship
        # whose memory picture nothing checks.
        pytest.fail(
            f"{path.name} was not recorded: rebuild with python -m examples.build_examples "
            f"--only {pte.stem} (it records ExecuTorch's memory plan beside the .pte)"
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


def _never_read(ma: MethodAnalysis) -> set[int]:
    """Tensors an instruction writes that no instruction reads and the caller does not get back."""
    method, io = ma.method, ma.partitions.dataflow.io
    written = {v for step in io for v in step.output_tensors}
    read = {v for step in io for v in tensor_values(method, step.inputs)}
    return written - read - set(tensor_values(method, method.outputs))


def _methods(pte: Path) -> list[tuple[dict[str, Any], MethodMemory, list[int], set[int]]]:
    doc = _oracle(pte)
    result = pte_adapter.analyse(pte_adapter.load(pte))
    out = []
    for m in doc["methods"]:
        ma = result.method(m["name"])
        assert ma is not None, m["name"]
        sizes = list(ma.method.non_const_buffer_sizes)
        out.append((m, ma.memory, sizes, _never_read(ma)))
    assert {m["name"] for m in doc["methods"]} == {ma.name for ma in result.methods}
    return out


def _planned_lives(
    oracle: dict[str, Any], memory: MethodMemory, never_read: set[int]
) -> list[dict[str, Any]]:
    """The planner's tensors, as the `.pte` can show them.

    One thing the planner knows is not in the file: where the `getitem` node of an unread output
    of a multi-output kernel sits (`native_layer_norm`'s mean and rstd: the tuple node is an
    argument of its `getitem` nodes, so `update_all_tensors_lifetime` keeps every element alive
    to the last of them). A `getitem` writes no instruction, and graph passes may move it
    (tiny_gpt_xnnpack: four instructions past its kernel). The adapter ends such a tensor at the
    instruction that writes it, which is when the runtime last touches its bytes; the planner's
    reservation may only be longer, never start elsewhere. For those tensors alone the planner's
    end is taken as the adapter's, after checking exactly that."""
    ours = {t.value: t for t in memory.tensors}
    out = []
    for t in oracle["tensors"]:
        o = ours.get(t["value"])
        if o is not None and t["value"] in never_read and o.last != t["last"]:
            assert (o.first, o.producer) == (t["first"], o.last), (oracle["name"], t["value"])
            assert o.kind == "intermediate" and o.last < t["last"], (oracle["name"], t["value"])
            t = {**t, "last": o.last}
        out.append(t)
    return out


def test_every_recorded_plan_belongs_to_a_shipped_example() -> None:
    """A plan left beside no program (an example renamed or dropped) would check nothing."""
    plans = {p.name.removesuffix(".memory.json") for p in EXAMPLES.glob("*.memory.json")}
    assert plans, EXAMPLES
    assert plans <= {p.stem for p in EXAMPLE_PTES}


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_every_planned_tensor_lives_as_executorch_planned_it(pte: Path) -> None:
    for oracle, memory, sizes, never_read in _methods(pte):
        assert sizes == oracle["non_const_buffer_sizes"]
        ours = {t.value: t for t in memory.tensors}
        theirs = {t["value"]: t for t in _planned_lives(oracle, memory, never_read)}
        assert set(ours) == set(theirs), (oracle["name"], set(ours) ^ set(theirs))
        for v, t in theirs.items():
            o = ours[v]
            got = (o.arena, o.offset, o.nbytes, o.first, o.last)
            want = (t["mem_id"], t["mem_offset"], t["nbytes"], t["first"], t["last"])
            assert got == want, f"{oracle['name']} %{v} ({o.kind}): ours {got}, planner {want}"


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_live_bytes_and_the_peak_agree_with_the_planner(pte: Path) -> None:
    for oracle, memory, sizes, never_read in _methods(pte):
        steps = oracle["instructions"]
        tensors = _planned_lives(oracle, memory, never_read)
        live = _live(tensors, steps)
        assert memory.live_bytes == live, oracle["name"]
        peak = max(live, default=0)
        assert memory.peak_live_bytes == peak
        if steps:
            at = live.index(peak)
            assert memory.peak_at == at
            want = {t["value"] for t in tensors if t["first"] <= at <= t["last"]}
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
        for _, memory, _, _ in _methods(pte)
        for t in memory.tensors
    }
    assert {"state", "input", "output", "intermediate"} <= kinds
