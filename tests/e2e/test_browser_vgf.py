"""VGF partitions in the real Model Explorer (headless Chromium): a partition opens onto the TOSA
operators decoded from its SPIR-V, a compute-shader segment is a node between the graph segments
it connects, and the whole MobileNetV2 graph is drawn. What is expected comes from the decoded
delegate and the partition analysis, not from the renderer.

Screenshots of each step: the `screenshots` fixture (tests/README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import App, layer_node_id, require_chromium, served_app
from tests.support.examples import example
from tests.support.groups import DelegatedPartition, delegated_partitions

pytestmark = pytest.mark.slow

VGF_NODE_BG = "#c8e6c9"  # the VgfBackend colour (backends.py)
MIN_COLOUR_PIXELS = 300


require_chromium()


def _partition(name: str) -> DelegatedPartition:
    """The one VGF partition of an example."""
    (part,) = delegated_partitions(example(name))
    return part


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    with served_app(example("vgf_grid_sample")) as app:
        yield app


def test_a_vgf_partition_opens_on_its_segments_and_operators(app: App, screenshots: Path) -> None:
    part = _partition("vgf_grid_sample")
    name, view, call = part.group, part.view, part.call  # its group, named by what it holds
    with app.page(example("vgf_grid_sample")) as me:
        drawn = me.visible_nodes()
        assert drawn.get(layer_node_id(name)) == name, drawn
        me.screenshot(screenshots / "vgf_grid_sample_1_first_screen.png")
        me.expand_layer(name)
        drawn = me.visible_nodes()
        edges = me.visible_edges()
        # Two graph segments as layers, the compute shader between them as a node.
        segments = [f"{name}/graph_segment_0", f"{name}/graph_segment_1"]
        for seg in segments:
            assert drawn.get(layer_node_id(seg)) == seg.rsplit("/", 1)[1], (seg, drawn)
        (k,) = [i for i, n in enumerate(view.nodes) if n.kind == "COMPUTE_SEGMENT"]
        shader = f"{call}.{k}"
        assert drawn.get(shader) == "compute_segment_0 (compute shader)"
        assert (layer_node_id(segments[0]), shader) in edges, edges
        assert (shader, layer_node_id(segments[1])) in edges, edges
        me.screenshot(screenshots / "vgf_grid_sample_2_partition_open.png")
        me.expand_layer(segments[0])
        labels = [drawn for drawn in me.visible_nodes().values()]
        assert {"TRANSPOSE", "CONV2D", "CLAMP"} <= set(labels), labels
        ink = me.ink(colours=(VGF_NODE_BG,))
        assert ink.colours[VGF_NODE_BG] > MIN_COLOUR_PIXELS, f"no VGF colour drawn: {ink}"
        me.screenshot(screenshots / "vgf_grid_sample_3_segment_open.png")


def test_the_mobilenet_partition_draws_every_operator(app: App, screenshots: Path) -> None:
    part = _partition("vgf_mv2_int")
    name, view, call = part.group, part.view, part.call
    with app.page(example("vgf_mv2_int")) as me:
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
        group = layer_node_id(name)
        assert {a for a, b in edges if b == group}, "nothing enters the partition"
        assert {b for a, b in edges if a == group}, "nothing leaves the partition"
        ink = me.ink(colours=(VGF_NODE_BG,))
        assert ink.colours[VGF_NODE_BG] > MIN_COLOUR_PIXELS, f"no VGF colour drawn: {ink}"
        me.screenshot(screenshots / "vgf_mv2_int_partition_open.png")
