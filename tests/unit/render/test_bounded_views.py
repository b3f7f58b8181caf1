"""Delegate views drawn with work bounded by what they read (issue 44), on programs the minimal
writer makes from real examples (`tests/support/pte_writer.py`, `hostile_programs.py`):

- a tensor read and written in place by every operation gets one edge per read, not one from
  every earlier writer;
- a tensor written by many operations and read by many more gets edges from all its writers only
  while they stay within the view's budget, then from the last writer;
- a delegate called many times is drawn once, as graphs of its own that every call opens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.model_explorer import graphs_to_json
from pte_adapter.render.plan.views import MARGIN_EDGES
from tests.support.examples import EXAMPLES
from tests.support.hostile_programs import (
    VULKAN,
    case_vulkan_one_tensor,
    instructions_unit,
    repeated_chain,
    vk_graph,
    vk_tensor,
    with_vulkan,
)
from tests.support.pte_writer import program_json, vulkan_payload, write_program


def _graphs(pte: Path) -> dict[str, dict[str, Any]]:
    graphs = json.loads(json.dumps(graphs_to_json(convert_path(pte))))["graphs"]
    return {g["id"]: g for g in graphs}


def _edges(graph: dict[str, Any], prefix: str) -> list[tuple[str, str]]:
    """(source, target) of every edge into a node whose id starts with `prefix`."""
    return [
        (e["sourceNodeId"], n["id"])
        for n in graph["nodes"]
        if n["id"].startswith(prefix)
        for e in n["incomingEdges"]
    ]


def test_in_place_operations_get_one_edge_per_read(tmp_path: Path) -> None:
    pte = case_vulkan_one_tensor(tmp_path, 1)  # 2,000 calls, each reading and writing v0
    graph = _graphs(pte)["forward"]
    inner = [n["id"] for n in graph["nodes"] if n["id"].startswith("VulkanBackend_1.")]
    assert len(inner) == 2000
    edges = _edges(graph, "VulkanBackend_1.")
    # Each call reads what the one before it wrote (the first: the call's input from outside).
    assert len(edges) == 2000
    inside = {(a, b) for a, b in edges if a.startswith("VulkanBackend_1.")}
    assert inside == {(inner[k - 1], inner[k]) for k in range(1, 2000)}


def test_many_writers_and_many_readers_stay_within_the_budget(tmp_path: Path) -> None:
    """W calls write v1 (from v0), then R calls read v1: every reader had an edge from every
    writer (W x R); now from all W while they fit the budget, then from the last writer."""
    writers, readers = 300, 300
    chain = [{"node_id": i, "name": "aten.relu.default", "args": [0, 1]} for i in range(writers)]
    chain += [{"node_id": i, "name": "aten.relu.default", "args": [1, 2]} for i in range(readers)]
    values = [vk_tensor([1, 8])] * 3
    pte = with_vulkan(tmp_path, vulkan_payload(vk_graph(values, chain, [0], [2])))
    edges = _edges(_graphs(pte)["forward"], "VulkanBackend_1.")
    inputs = writers + readers  # each call reads one tensor
    assert writers * readers > inputs + 2 * inputs + MARGIN_EDGES  # what it was
    assert len(edges) <= inputs + 2 * inputs + MARGIN_EDGES
    last_writer = f"VulkanBackend_1.{writers - 1}"
    for k in range(writers, writers + readers):
        sources = {a for a, b in edges if b == f"VulkanBackend_1.{k}"}
        assert last_writer in sources
    # The first readers still see every writer (a concatenation written in slices, drawn whole).
    first = {a for a, b in edges if b == f"VulkanBackend_1.{writers}"}
    assert len(first) == writers


def test_a_delegate_called_many_times_is_drawn_once(tmp_path: Path) -> None:
    program, segments = program_json(EXAMPLES / f"{VULKAN}.pte")
    calls = 500
    pte = tmp_path / f"{VULKAN}.pte"
    unit = instructions_unit(("delegate", 0, [0, 1]))
    write_program(program, segments, pte, repeated_chain(unit, calls))
    graphs = _graphs(pte)
    method = graphs["forward"]
    heads = [n for n in method["nodes"] if n["label"] == "VulkanBackend"]
    assert len(heads) == calls
    opened = {tuple(n["subgraphIds"]) for n in heads}
    assert len(opened) == 1, opened  # every call opens the same graph
    (ids,) = opened
    assert ids and all(i in graphs for i in ids)
    assert all("delegate 0 (VulkanBackend)" in i for i in ids)
    # Its operations are drawn there once, not inside each call's group.
    view_ops = sum(len(graphs[i]["nodes"]) - 2 for i in ids)  # less the inputs and outputs
    assert 0 < view_ops < 20
    assert not any(n["id"].startswith("VulkanBackend_1.") for n in method["nodes"])
