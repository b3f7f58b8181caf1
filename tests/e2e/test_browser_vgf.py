"""VGF partitions in the real Model Explorer (headless Chromium): a partition opens onto the TOSA
operators decoded from its SPIR-V, a compute-shader segment is a node between the graph segments
it connects, and the whole MobileNetV2 graph is drawn. What is expected comes from the decoded
delegate and the partition analysis, not from the renderer.

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

VGF_NODE_BG = "#c8e6c9"  # the VgfBackend colour (backends.py)
MIN_COLOUR_PIXELS = 300


require_chromium()


def _partition(name: str) -> tuple[Partition, DelegateGraph, str]:
    """The VGF partition of an example, its main view and the node id of its DelegateCall."""
    method = pte_adapter.load(example(name)).methods[0]
    parts = partition_method(method)
    (part,) = [p for p in parts.partitions if p.backend != CPU]
    assert part.delegate_index is not None
    view = method.delegates[part.delegate_index].decoded.graphs[0]
    call = instruction_role_ids(method, parts)[part.instructions[0]]
    return part, view, call


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[str, object]]:
    with model_explorer_server(example("vgf_grid_sample")) as url, chromium() as browser:
        yield url, browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("PTE_SCREENSHOTS")
    return Path(env) if env else tmp_path_factory.mktemp("vgf_screenshots")


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


def test_a_vgf_partition_opens_on_its_segments_and_operators(
    app: tuple[str, object], shots: Path
) -> None:
    part, view, call = _partition("vgf_grid_sample")
    name = group_names(example("vgf_grid_sample"))["forward"][
        part.index
    ]  # its group, named by what it holds
    for me in _open(app, "vgf_grid_sample"):
        drawn = me.visible_nodes()
        assert drawn.get(_layer(name)) == name, drawn
        me.screenshot(shots / "vgf_grid_sample_1_first_screen.png")
        me.expand_layer(name)
        drawn = me.visible_nodes()
        edges = me.visible_edges()
        # Two graph segments as layers, the compute shader between them as a node.
        segments = [f"{name}/graph_segment_0", f"{name}/graph_segment_1"]
        for seg in segments:
            assert drawn.get(_layer(seg)) == seg.rsplit("/", 1)[1], (seg, drawn)
        (k,) = [i for i, n in enumerate(view.nodes) if n.kind == "COMPUTE_SEGMENT"]
        shader = f"{call}.{k}"
        assert drawn.get(shader) == "compute_segment_0 (compute shader)"
        assert (_layer(segments[0]), shader) in edges, edges
        assert (shader, _layer(segments[1])) in edges, edges
        me.screenshot(shots / "vgf_grid_sample_2_partition_open.png")
        me.expand_layer(segments[0])
        labels = [drawn for drawn in me.visible_nodes().values()]
        assert {"TRANSPOSE", "CONV2D", "CLAMP"} <= set(labels), labels
        ink = me.ink(colours=(VGF_NODE_BG,))
        assert ink.colours[VGF_NODE_BG] > MIN_COLOUR_PIXELS, f"no VGF colour drawn: {ink}"
        me.screenshot(shots / "vgf_grid_sample_3_segment_open.png")


def test_the_mobilenet_partition_draws_every_operator(app: tuple[str, object], shots: Path) -> None:
    part, view, call = _partition("vgf_mv2_int")
    name = group_names(example("vgf_mv2_int"))["forward"][
        part.index
    ]  # its group, named by what it holds
    for me in _open(app, "vgf_mv2_int"):
        me.expand_layer(name)
        drawn = me.visible_nodes()
        ops = {f"{call}.{k}": op for k, op in enumerate(view.nodes)}
        assert set(ops) <= set(drawn), sorted(set(ops) - set(drawn))[:5]
        assert all(drawn[k] == op.label for k, op in ops.items())
        edges = me.visible_edges()
        # Wired inside (edges by SPIR-V id) and, at the partition's border (Model Explorer's
        # default settings), to the CPU islands on both sides.
        inner = {(a, b) for a, b in edges if a in ops and b in ops}
        assert len(inner) >= len(ops) - 1, len(inner)
        group = _layer(name)
        assert {a for a, b in edges if b == group}, "nothing enters the partition"
        assert {b for a, b in edges if a == group}, "nothing leaves the partition"
        ink = me.ink(colours=(VGF_NODE_BG,))
        assert ink.colours[VGF_NODE_BG] > MIN_COLOUR_PIXELS, f"no VGF colour drawn: {ink}"
        me.screenshot(shots / "vgf_mv2_int_partition_open.png")
