"""The product as a user sees it: the real Model Explorer web app in headless Chromium.

An adapter can return valid JSON that still renders badly (no groups, a subgraph that does not
open, a blank canvas). These tests start `model-explorer --extensions=pte_adapter` on the fragmented
Ethos-U example, drive the UI through Debian's Chromium and check what a user would check. The
expectations come from the program model and the partition analysis, not from the renderer, so a
renderer that drops namespaces or subgraphs fails here.

Model Explorer dissolves a layer whose only child is one op node unless the user turns on Advanced
settings → "Keep layers with a single op node child". With default settings, only partitions with
two or more instructions show as layers; every instruction still carries its partition (found by
searching the partition name). With the setting on, every partition is a layer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, MethodPartitions, Partition, partition_method
from pte_adapter.delegates.graph import DelegateGraph
from pte_adapter.program import Method
from pte_adapter.render.model_explorer import delegate_graph_id, instruction_node_ids
from tests.browser_support import (
    KEEP_SINGLE_CHILD_LAYERS,
    MEPage,
    SearchHit,
    chromium,
    find_chromium,
    model_explorer_server,
    new_page,
)
from tests.conftest import example

pytestmark = pytest.mark.slow


def _require_chromium() -> None:
    """Without Debian's Chromium a developer's run skips these tests with the reason; CI (which
    installs it) never skips: CI=true turns a missing browser into a failure."""
    try:
        find_chromium()
    except RuntimeError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{e}; CI runs these tests", allow_module_level=True)


_require_chromium()

EXAMPLE = "mv2_lrn_ethosu85"  # two Ethos-U partitions with CPU work between them
NPU_VIEW = "NPU operations"
MIN_INK = 0.01  # share of the graph area that must differ from the background
# Colours from the renderer's palette that must actually be drawn.
NPU_NODE_BG = "#ffe0b2"
CPU_GROUP_BG = "#fff3f3"
CPU_COMPUTE_BG = "#ffcdd2"
MIN_COLOUR_PIXELS = 300


@dataclass(frozen=True)
class Expected:
    path: Path
    method: Method
    parts: MethodPartitions

    @property
    def npu_partitions(self) -> list[Partition]:
        return [p for p in self.parts.partitions if p.backend != CPU]

    def npu_view(self, part: Partition) -> DelegateGraph:
        assert part.delegate_index is not None
        views = {v.name: v for v in self.method.delegates[part.delegate_index].decoded.graphs}
        assert NPU_VIEW in views, f"{part.name}: the decoder produced {sorted(views)}"
        return views[NPU_VIEW]

    def view_id(self, part: Partition, view: str = NPU_VIEW) -> str:
        return delegate_graph_id(self.method.name, part.name, view)

    def node_ids(self, part: Partition) -> set[str]:
        """The node ids of the partition's instructions (their role ids)."""
        ids = instruction_node_ids(self.method, self.parts)
        return {ids[i] for i in part.instructions}


@pytest.fixture(scope="module")
def expected() -> Expected:
    path = example(EXAMPLE)
    program = pte_adapter.load(path)
    method = program.methods[0]
    parts = partition_method(method)
    exp = Expected(path, method, parts)
    # The example must still be what these tests are about.
    assert len(exp.npu_partitions) >= 2
    assert any(len(p.instructions) >= 2 and p.backend == CPU for p in parts.partitions)
    return exp


@pytest.fixture(scope="module")
def app(expected: Expected) -> Iterator[tuple[str, object]]:
    with model_explorer_server(expected.path) as url, chromium() as browser:
        yield url, browser


def _page(app: tuple[str, object], settings: dict[str, bool] | None) -> Iterator[MEPage]:
    url, browser = app
    me = MEPage(new_page(browser))  # type: ignore[arg-type]
    try:
        me.open(url, settings)
        yield me
    finally:
        me.page.context.close()


@pytest.fixture(scope="module")
def default_ui(app: tuple[str, object]) -> Iterator[MEPage]:
    """A first-time user: Model Explorer's default settings."""
    yield from _page(app, None)


@pytest.fixture(scope="module")
def layers_ui(app: tuple[str, object]) -> Iterator[MEPage]:
    """A user who turned on "Keep layers with a single op node child"."""
    yield from _page(app, {KEEP_SINGLE_CHILD_LAYERS: True})


def _escape(text: str) -> str:
    # Model Explorer splits the query on spaces into terms that must all match; "\\ " is a
    # literal space.
    return "".join("\\" + c if c in r"\.^$*+?{}[]|()" else c for c in text).replace(" ", "\\ ")


def _exact(label: str) -> str:
    """A search-box query matching exactly this node or layer label."""
    return f"^{_escape(label)}$"


def _attr(key: str, value: str) -> str:
    """A search-box query matching nodes whose attribute `key` is exactly `value`."""
    return f"^{_escape(key)}={_escape(value)}$"


def _ids(hits: list[SearchHit]) -> set[str]:
    return {h.node_id for h in hits}


def _layer(name: str) -> str:
    return f"{name}___group___"


def test_every_graph_is_listed(default_ui: MEPage, expected: Expected) -> None:
    choices = default_ui.graph_choices()
    # Graph Inputs/Outputs, one node per instruction, one pinned info node per partition.
    method_nodes = len(expected.method.instructions) + 2 + len(expected.parts.partitions)
    assert choices.get(expected.method.name) == method_nodes, choices
    for part in expected.npu_partitions:
        view = expected.npu_view(part)
        assert choices.get(expected.view_id(part)) == len(view.nodes) + 2, choices


def test_method_graph_is_drawn(default_ui: MEPage, expected: Expected) -> None:
    me = default_ui
    me.select_graph(expected.method.name)
    assert me.graph_title() == expected.method.name
    assert me.node_count() == (len(expected.method.instructions) + 2
                               + len(expected.parts.partitions))
    ink = me.ink(colours=(NPU_NODE_BG, CPU_GROUP_BG))
    assert ink.fraction > MIN_INK, f"the canvas is (nearly) blank: {ink}"
    assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"no Ethos-U node colour drawn: {ink}"
    assert ink.colours[CPU_GROUP_BG] > MIN_COLOUR_PIXELS, f"no CPU island colour drawn: {ink}"
    assert not [e for e in me.console_errors if "pte" in e.lower() or "graph" in e.lower()]


def test_every_partition_is_a_layer_with_default_settings(
    default_ui: MEPage, expected: Expected
) -> None:
    """Model Explorer dissolves single-child layers by default; the pinned partition info node
    keeps even a one-DelegateCall NPU partition a visible group."""
    me = default_ui
    me.select_graph(expected.method.name)
    for part in expected.parts.partitions:
        hits = me.search(_attr("partition", part.name))
        members = expected.node_ids(part)
        assert _ids(hits) - {_layer(part.name)} == members, f"{part.name}: search found {hits}"
        hits = me.search(_exact(part.name))
        layer = [h for h in hits if h.node_id == _layer(part.name)]
        assert layer and layer[0].is_layer and "label" in layer[0].match_types, \
            f"{part.name} is not drawn as a layer: {hits}"
    me.clear_search()


def test_every_partition_is_a_layer_when_single_child_layers_are_kept(
    layers_ui: MEPage, expected: Expected
) -> None:
    me = layers_ui
    me.select_graph(expected.method.name)
    for part in expected.parts.partitions:
        hits = me.search(_exact(part.name))
        layer = [h for h in hits if h.node_id == _layer(part.name)]
        assert layer, f"{part.name} is not a layer: {hits}"
        assert layer[0].label == part.name and "label" in layer[0].match_types
        hits = me.search(_attr("partition", part.name))
        assert _ids(hits) - {_layer(part.name)} == expected.node_ids(part), hits
    me.clear_search()
    me.expand_all()
    ink = me.ink(colours=(NPU_NODE_BG, CPU_GROUP_BG, CPU_COMPUTE_BG))
    assert ink.fraction > MIN_INK, f"the canvas is (nearly) blank: {ink}"
    for colour in (NPU_NODE_BG, CPU_GROUP_BG, CPU_COMPUTE_BG):
        assert ink.colours[colour] > MIN_COLOUR_PIXELS, f"{colour} is not drawn: {ink}"


def test_delegate_subgraph_opens_from_the_node(default_ui: MEPage, expected: Expected) -> None:
    me = default_ui
    for part in expected.npu_partitions:
        view = expected.npu_view(part)
        assert view.nodes, f"{part.name}: the decoder found no NPU operations"
        me.select_graph(expected.method.name)
        me.expand_all()  # partitions are groups, drawn collapsed at first
        (call_id,) = expected.node_ids(part)
        me.open_subgraph(call_id, expected.view_id(part))
        assert me.graph_title() == expected.view_id(part)
        assert me.node_count() == len(view.nodes) + 2
        ink = me.ink(colours=(NPU_NODE_BG,))
        assert ink.fraction > MIN_INK, f"the subgraph canvas is (nearly) blank: {ink}"
        assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"NPU ops not in NPU colour: {ink}"
        # The decoded operations are really in the drawn graph, under their labels.
        label = view.nodes[0].label or view.nodes[0].kind
        hits = me.search(_exact(label))
        assert any(h.label == label for h in hits), f"{label!r} not found: {hits}"
        me.clear_search()


def test_layer_and_node_labels_are_drawable(layers_ui: MEPage, expected: Expected) -> None:
    me = layers_ui
    drawable = me.drawable_chars()
    assert {chr(c) for c in range(32, 127)} <= drawable  # sanity: the atlas was read
    me.select_graph(expected.method.name)
    bad = {label: sorted(set(label) - drawable) for label in me.drawn_labels()
           if set(label) - drawable}
    part = expected.npu_partitions[0]
    me.select_graph(expected.view_id(part))
    bad.update({label: sorted(set(label) - drawable) for label in me.drawn_labels()
                if set(label) - drawable})
    assert not bad, f"labels drawn with '?' in place of characters: {bad}"


def test_exported_json_opens_without_the_extension(
    app: tuple[str, object], expected: Expected, tmp_path: Path
) -> None:
    """`pte-adapter export` writes JSON that Model Explorer's own loader opens, no extension."""
    from pte_adapter.cli import main

    out = tmp_path / "graph.json"
    assert main(["export", str(expected.path), "-o", str(out)]) == 0
    _, browser = app  # one Playwright session per module: reuse its browser
    with model_explorer_server(out, extension=False) as url:
        me = MEPage(new_page(browser))  # type: ignore[arg-type]
        me.open(url)
        choices = me.graph_choices()
        method_nodes = len(expected.method.instructions) + 2 + len(expected.parts.partitions)
        assert choices.get(expected.method.name) == method_nodes, choices
        me.select_graph(expected.method.name)
        assert me.node_count() == method_nodes
        ink = me.ink(colours=(NPU_NODE_BG,))
        assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"no Ethos-U colour drawn: {ink}"
        me.page.context.close()
