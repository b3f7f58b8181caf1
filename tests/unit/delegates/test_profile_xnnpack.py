"""XNNPACK's per-operator events placed on the decoded XNNPACK nodes
(delegates/xnnpack/profile_events.py).

Times: ExecuTorch's Inspector over the same `.etdp` (run by run). Structure: the decoded XNNPACK
graph (itself checked against ExecuTorch's XNNPACK schema in test_xnnpack.py) — every event lands
on a node whose kind and geometry can produce that operator, and a misaligned event list is refused
rather than guessed."""

from __future__ import annotations

import warnings
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.analysis.profile.summary import delegate_inner_times, profile_summary
from pte_adapter.delegates.xnnpack.profile_events import fits, match_events, operator_type
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.node_data import model_node_data
from pte_adapter.render.plan.program import program_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
STEMS = ["mv2_xnnpack_fp32", "mv2_xnnpack_int8", "xnnpack_ptd"]


def _node_ids(path: Path, method: str = "forward") -> list[str]:
    """The renderer's node id of each instruction (its role id)."""
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids as instruction_node_ids

    m = next(m for m in pte_adapter.load(path).methods if m.name == method)
    return instruction_node_ids(m, partition_method(m))


@cache
def _inspector_events(stem: str) -> list[Any]:
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ins = Inspector(etdump_path=str(EXAMPLES / f"{stem}.etdp"))
    return [e for b in ins.event_blocks for e in b.events if e.perf_data is not None]


def _delegated(stem: str) -> dict[str, list[float]]:
    return {e.name: list(e.perf_data.raw) for e in _inspector_events(stem) if e.is_delegated_op}


def _setup(stem: str) -> tuple[Any, Any, Any]:
    result = pte_adapter.open_analysis(EXAMPLES / f"{stem}.pte")
    program, profile = result.program, result.profile
    assert profile is not None
    mp = profile.methods[0]
    (part,) = mp.partitions.delegate_partitions
    return program, mp, part


@pytest.mark.parametrize("stem", STEMS)
def test_every_event_lands_on_a_fitting_node(stem: str) -> None:
    program, mp, part = _setup(stem)
    graph = program.methods[0].delegates[0].decoded.graphs[0]
    names = [e.label for e in mp.runs[0].delegate_events[part.instructions[0]]]
    match = match_events(graph, names)
    assert match is not None
    assert set(match) == {n.id for n in graph.nodes}  # every node: its operator, or fused
    assert sorted(set(match.values())) == list(range(len(names)))  # every event, in order
    kinds = {n.id: n for n in graph.nodes}
    owners = {}
    for node_id, e in sorted(match.items(), key=lambda kv: int(kv[0].removeprefix("xnode"))):
        if e in owners:
            assert kinds[node_id].kind == "Clamp"  # only clamps fuse
        else:
            owners[e] = node_id
            assert fits(names[e], kinds[node_id])
    # Per operator type, as many events as nodes that produce it.
    ops = Counter(operator_type(n).split(" (")[0] for n in names)
    nodes = Counter(n.kind for n in graph.nodes)
    assert ops["Add"] == nodes["Add"]
    dw = sum(1 for n in names if "DWConv" in n)
    assert dw == nodes["DepthwiseConv2d"]
    assert ops["Convolution"] + ops["Fully Connected"] == (
        nodes["Conv2d"] + nodes["DepthwiseConv2d"] + nodes["FullyConnected"]
    )
    # The nodes left over after one node per event are exactly the graph's clamps (fused).
    assert len(match) - len(names) == nodes["Clamp"]


@pytest.mark.parametrize("stem", STEMS)
def test_node_times_are_inspectors_run_by_run(stem: str) -> None:
    _, mp, part = _setup(stem)
    inner = delegate_inner_times(mp, part)
    assert inner is not None
    graph, times, fused = inner
    names = [e.label for e in mp.runs[0].delegate_events[part.instructions[0]]]
    match = match_events(graph, names)
    assert match is not None
    expected = _delegated(stem)
    assert len(times) == len(expected)
    for node_id, values in times.items():
        assert values == pytest.approx(expected[names[match[node_id]]], abs=1e-9)
    assert all(graph.nodes[int(k.removeprefix("xnode"))].kind == "Clamp" for k in fused)
    if stem == "mv2_xnnpack_int8":
        assert len(fused) == 35  # every ReLU6 clamp of the int8 graph runs inside its conv


@pytest.mark.parametrize("edit", ["drop", "swap", "extra"])
def test_misaligned_events_are_refused(edit: str) -> None:
    program, mp, part = _setup("mv2_xnnpack_fp32")
    graph = program.methods[0].delegates[0].decoded.graphs[0]
    names = [e.label for e in mp.runs[0].delegate_events[part.instructions[0]]]
    if edit == "drop":
        names = names[:10] + names[11:]
    elif edit == "swap":
        i = next(
            i
            for i in range(len(names) - 1)
            if operator_type(names[i]) != operator_type(names[i + 1])
        )
        names[i], names[i + 1] = names[i + 1], names[i]
    else:
        names = [*names, names[-1]]
    assert match_events(graph, names) is None


def test_operations_in_the_method_graph_get_node_data_and_attributes() -> None:
    result = pte_adapter.open_analysis(EXAMPLES / "mv2_xnnpack_int8.pte")
    profile = result.profile
    assert profile is not None
    data = model_node_data(result, program_plan(result))
    assert set(data) == {"forward"}
    (graph,) = [g for g in convert_path(EXAMPLES / "mv2_xnnpack_int8.pte") if g.id == "forward"]
    nodes = {n.id: n for n in graph.nodes}
    results = data["forward"]["results"]
    assert set(results) <= set(nodes)
    expected = _delegated("mv2_xnnpack_int8")
    # One value per XNNPACK operator, on the node of the operation it ran, plus the call itself.
    assert len(results) == len(expected) + 1
    by_label = sorted(float(np.median(v)) for v in expected.values())
    call_id = _node_ids(EXAMPLES / "mv2_xnnpack_int8.pte")[0]
    assert sorted(v["value"] for k, v in results.items() if k != call_id) == pytest.approx(
        by_label, abs=1e-6
    )
    # The call keeps only its time outside the operators: the group's sum is the call's time.
    (call,) = [e for e in _inspector_events("mv2_xnnpack_int8") if e.name == "DELEGATE_CALL"]
    outside = [c - sum(v[i] for v in expected.values()) for i, c in enumerate(call.perf_data.raw)]
    assert results[call_id]["value"] == pytest.approx(float(np.median(outside)), abs=1e-6)
    attrs = {n.id: {a.key: a.value for a in n.attrs} for n in graph.nodes}
    fused = [k for k, a in attrs.items() if "measured" in a]
    assert len(fused) == 35
    assert all(nodes[k].label == "Clamp" for k in fused)
    assert (
        sum("measured median" in a for k, a in attrs.items() if k.startswith(f"{call_id}.")) == 69
    )
    summary = profile_summary(profile)
    inner = summary["methods"][0]["partitions"][0]["inner_nodes"]
    assert (inner["matched"], inner["of"]) == (104, 104)
