"""Vulkan partitions in the real Model Explorer (headless Chromium): the CNN with CPU islands opens on
three Vulkan partitions, one partition opens onto every operator call decoded from its VkGraph,
wired as the payload wires them, and a call's attributes name its arguments. What is expected comes
from the decoded delegate and the partition analysis, not from the renderer.

Screenshots of each step are saved in $PTE_SCREENSHOTS (or the test's temporary folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, Partition, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.program.delegate_graph import DelegateGraph
from tests.support.browser import (
    MEPage,
    chromium,
    model_explorer_server,
    model_url,
    new_page,
    require_chromium,
)
from tests.support.examples import example
from tests.support.groups import group_names

pytestmark = pytest.mark.slow

VULKAN_NODE_BG = "#dcedc8"  # the VulkanBackend colour (backends.py)
MIN_COLOUR_PIXELS = 300
NAME = "vulkan_cnn_island"

require_chromium()


def _partitions(name: str) -> list[tuple[Partition, DelegateGraph, str]]:
    """Each Vulkan partition of an example, its decoded graph and its DelegateCall's node id."""
    method = pte_adapter.load(example(name)).methods[0]
    parts = partition_method(method)
    ids = instruction_role_ids(method, parts)
    out = []
    for part in parts.partitions:
        if part.backend == CPU:
            continue
        assert part.delegate_index is not None
        view = method.delegates[part.delegate_index].decoded.graphs[0]
        out.append((part, view, ids[part.instructions[0]]))
    return out


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[str, object]]:
    with model_explorer_server(example(NAME)) as url, chromium() as browser:
        yield url, browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("PTE_SCREENSHOTS")
    return Path(env) if env else tmp_path_factory.mktemp("vulkan_screenshots")


def _open(app: tuple[str, object], name: str) -> Iterator[MEPage]:
    server_url, browser = app
    me = MEPage(new_page(browser))  # type: ignore[arg-type]
    try:
        me.open(model_url(server_url, example(name)))
        yield me
    finally:
        me.page.context.close()


def _layer(name: str) -> str:
    return f"{name}___group___"


def test_a_vulkan_partition_opens_on_its_wired_operators(
    app: tuple[str, object], shots: Path
) -> None:
    partitions = _partitions(NAME)
    names = group_names(example(NAME))["forward"]
    part, view, call = partitions[0]
    name = names[part.index]
    for me in _open(app, NAME):
        drawn = me.visible_nodes()
        # Every Vulkan partition is a group on the first screen, between the CPU islands.
        for p, _, _ in partitions:
            assert drawn.get(_layer(names[p.index])) == names[p.index], drawn
        me.screenshot(shots / f"{NAME}_1_first_screen.png")
        me.expand_layer(name)
        drawn = me.visible_nodes()
        ops = {f"{call}.{k}": op for k, op in enumerate(view.nodes)}
        assert {k: drawn.get(k) for k in ops} == {k: op.label for k, op in ops.items()}
        # Wired as the payload wires them: an operator that reads another's output has an edge.
        producer = {t: f"{call}.{k}" for k, op in enumerate(view.nodes) for t in op.outputs}
        edges = me.visible_edges()
        wired = {
            (producer[t], f"{call}.{k}")
            for k, op in enumerate(view.nodes)
            for t in op.inputs
            if t in producer
        }
        assert wired and wired <= edges, wired - edges
        ink = me.ink(colours=(VULKAN_NODE_BG,))
        assert ink.colours[VULKAN_NODE_BG] > MIN_COLOUR_PIXELS, f"no Vulkan colour drawn: {ink}"
        me.screenshot(shots / f"{NAME}_2_partition_open.png")
        # A call's arguments by their schema names, as decoded.
        first = f"{call}.0"
        me.select_node(first)
        shown = me.panel("Attributes")
        for key in ("weight", "stride", "groups", "output_min", "out"):
            assert shown.get(key) == view.nodes[0].attrs[key], (key, shown)
        me.screenshot(shots / f"{NAME}_3_operator_selected.png")
