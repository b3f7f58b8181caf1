"""The product as a user sees it: the real Model Explorer web app in headless Chromium.

An adapter can return valid JSON that still renders badly (the wrong graph first, no groups, a
blank canvas). These tests start `model-explorer --extensions=pte_adapter`, drive the UI through
Debian's Chromium and check what a user would check: every example opens on a method graph; on the
fragmented Ethos-U example the first screen is its partitions with the tensors that cross between
them, and opening an NPU partition shows its NPU operations wired to the CPU islands around it. The
expectations come from the program model and the partition analysis, not from the renderer.

Model Explorer 0.1.34 dissolves a layer whose only child is one op node unless the user turns on
Advanced settings → "Keep layers with a single op node child" (it ignores the graph's own
`layoutConfigs.keepLayersWithASingleChild`). A partition with a decoded delegate always has several
nodes; a CPU island of one kernel shows as that kernel (its attributes name the island).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, MethodPartitions, Partition, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import Method
from pte_adapter.render.plan.boundaries import tensor_label
from pte_adapter.render.plan.instructions import drawn_kernel_label
from tests.support.browser import (
    KEEP_SINGLE_CHILD_LAYERS,
    LAYER_ID_SUFFIX,
    SHOW_OUT_OF_LAYER_EDGES,
    App,
    MEPage,
    SearchHit,
    layer_node_id,
    model_explorer_server,
    require_chromium,
    served_app,
)
from tests.support.examples import EXAMPLE_PTES, example
from tests.support.groups import group_names

pytestmark = pytest.mark.slow


require_chromium()

EXAMPLE = "mv2_lrn_ethosu85"  # two Ethos-U partitions with CPU work between them
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
    ids: list[str]  # node id of each instruction
    groups: list[str]  # group name of each partition (render/group_facts.py)

    def group(self, part: Partition) -> str:
        return self.groups[part.index]

    @property
    def npu_partitions(self) -> list[Partition]:
        return [p for p in self.parts.partitions if p.backend != CPU]

    def npu_view(self, part: Partition) -> DelegateGraph:
        assert part.delegate_index is not None
        view = self.method.delegates[part.delegate_index].decoded.graphs[0]
        assert view.name == "NPU operations", f"{part.name}: the decoder produced {view.name}"
        return view


@pytest.fixture(scope="module")
def expected() -> Expected:
    path = example(EXAMPLE)
    program = pte_adapter.load(path)
    method = program.methods[0]
    parts = partition_method(method)
    groups = group_names(path)[method.name]
    exp = Expected(path, method, parts, instruction_role_ids(method, parts), groups)
    # The example must still be what these tests are about.
    assert len(exp.npu_partitions) >= 2
    assert any(len(p.instructions) >= 2 and p.backend == CPU for p in parts.partitions)
    return exp


@pytest.fixture(scope="module")
def app(expected: Expected) -> Iterator[App]:
    with served_app(expected.path) as app:
        yield app


@pytest.fixture(scope="module")
def default_ui(app: App) -> Iterator[MEPage]:
    """A first-time user: Model Explorer's default settings, the page as it first opens."""
    with app.page() as me:
        yield me


@pytest.fixture(scope="module")
def layers_ui(app: App) -> Iterator[MEPage]:
    """A user who turned on "Keep layers with a single op node child"."""
    with app.page(settings={KEEP_SINGLE_CHILD_LAYERS: True}) as me:
        yield me


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


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_every_example_opens_on_a_method_graph(app: App, pte: Path) -> None:
    """The README's plain command, for every example: the first graph drawn is a method."""
    methods = {m.name for m in pte_adapter.load(pte).methods}
    with app.page(pte) as me:
        assert me.graph_title() in methods, f"{pte.name} opened on {me.graph_title()!r}"
        assert me.visible_nodes(), f"{pte.name}: nothing drawn"


def test_first_screen_is_the_partitions_and_what_crosses(
    default_ui: MEPage, expected: Expected
) -> None:
    me = default_ui
    assert me.graph_title() == expected.method.name
    drawn = me.visible_nodes()
    # Every delegate partition and every CPU island of several instructions is a collapsed layer,
    # named for what it holds: the CPU island names the operator that fell off the NPU.
    for part in expected.parts.partitions:
        group = expected.group(part)
        if part.backend != CPU or len(part.instructions) > 1:
            assert layer_node_id(group) in drawn, f"{group} is not drawn as a layer: {drawn}"
            assert drawn[layer_node_id(group)] == group
        else:
            assert expected.ids[part.instructions[0]] in drawn  # dissolved by default
    culprit = [label for label in drawn.values() if label.startswith("CPU island")]
    assert any("aten::avg_pool3d" in label for label in culprit), culprit
    # Every tensor that crosses a boundary is readable on the first screen, on its edge.
    labels = set(drawn.values())
    for c in expected.parts.crossings:
        text = tensor_label(expected.method, c.value).rsplit(",", 1)[0]
        assert any(label.startswith(text) for label in labels), f"{text} not drawn: {labels}"
    ink = me.ink(colours=(NPU_NODE_BG, CPU_GROUP_BG))
    assert ink.fraction > MIN_INK, f"the canvas is (nearly) blank: {ink}"
    assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"no Ethos-U colour drawn: {ink}"
    assert ink.colours[CPU_GROUP_BG] > MIN_COLOUR_PIXELS, f"no CPU island colour drawn: {ink}"
    assert not [e for e in me.console_errors if "pte" in e.lower() or "graph" in e.lower()]


def test_opening_an_npu_partition_shows_its_operations_wired_to_the_cpu(
    app: App, expected: Expected
) -> None:
    for part in expected.npu_partitions:
        name = expected.group(part)
        group = layer_node_id(name)
        # Default settings: the open partition's edges meet its border, from boundary nodes.
        with app.page() as me:  # each partition opened from the first screen
            me.expand_layer(name)
            edges = me.visible_edges()
            assert {a for a, b in edges if b == group} and all(
                a.startswith("b.") for a, b in edges if b == group
            ), edges
            assert {b for a, b in edges if a == group}, f"{part.name}: nothing leaves it"
        # With out-of-layer edges drawn, they reach the NPU operations themselves.
        with app.page(settings={SHOW_OUT_OF_LAYER_EDGES: True}) as me:
            me.expand_layer(name)
            drawn = me.visible_nodes()
            edges = me.visible_edges()
            view = expected.npu_view(part)
            call = expected.ids[part.instructions[0]]
            ops = {f"{call}.{k}": op for k, op in enumerate(view.nodes)}
            assert set(ops) <= set(drawn), f"{part.name}: NPU operations not drawn"
            assert {drawn[k] for k in ops} == {op.label for op in view.nodes}
            # Edges come in from outside the partition and leave it, through boundary nodes that
            # are drawn between the NPU operations and the CPU islands on either side.
            incoming = {(a, b) for a, b in edges if b in ops and a not in ops}
            outgoing = {(a, b) for a, b in edges if a in ops and b not in ops}
            assert incoming and outgoing, f"{part.name}: not connected to its neighbours"
            sides = {x for e in incoming | outgoing for x in e if x not in ops}
            assert sides and all(s.startswith("b.") for s in sides), sides
            beyond = {b for a, b in edges if a in sides} | {a for a, b in edges if b in sides}
            others = {expected.group(p) for p in expected.parts.partitions if p is not part}
            assert beyond - set(ops), f"{part.name}: boundary nodes lead nowhere"
            index_of = {node: i for i, node in enumerate(expected.ids)}
            neighbours = {
                expected.group(expected.parts.partitions[expected.parts.partition_of[index_of[n]]])
                for n in beyond
                if n in index_of
            }
            neighbours |= {
                n.removesuffix(LAYER_ID_SUFFIX) for n in beyond if n.endswith(LAYER_ID_SUFFIX)
            }
            assert neighbours & others, f"{part.name}: no neighbouring partition reached"
            # The matched TOSA source is a collapsed sub-layer of the partition.
            assert layer_node_id(f"{name}/TOSA source") in drawn, (
                f"{part.name}: no TOSA source layer"
            )
            ink = me.ink(colours=(NPU_NODE_BG,))
            assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"NPU ops not in NPU colour: {ink}"


def test_inputs_show_their_source_s_metadata_and_edgeless_ones_are_attributes(
    app: App, expected: Expected
) -> None:
    """Model Explorer lists each input with its source output's metadata merged under its own (so
    the plan leaves out what the source shows: render/plan/inputs.py), and shows an input without
    an edge nowhere (so that one is the attribute `input<k>`)."""
    method, parts = expected.method, expected.parts
    # A CPU kernel reading what the instruction before it wrote: its input carries nothing of its
    # own, and the panel still lists the tensor's facts.
    ins = next(
        i for i in method.instructions if "avg_pool3d" in method.operators[i.op_index or 0].name
    )
    part = parts.partitions[parts.partition_of[ins.index]]
    tensor = method.tensor(ins.args[0])
    assert tensor is not None
    with app.page() as me:
        me.expand_layer(expected.group(part))
        me.select_node(expected.ids[ins.index])
        (source, rows), *_ = me.inputs()
        # The source is named by its drawn label (the rule: tests/unit/render/test_defaults.py).
        writer = method.operators[method.instructions[ins.index - 1].op_index or 0].full_name
        assert source == drawn_kernel_label(writer), (source, writer)
        assert rows["value_index"] == str(ins.args[0]), (source, rows)
        assert rows["shape"] == str(list(tensor.sizes)) and rows["dtype"] == tensor.dtype
    # An NPU partition's call heads its group without edges (its tensors flow through the
    # operations inside): its ExecuTorch input is an attribute.
    npu = expected.npu_partitions[0]
    call = method.instructions[npu.instructions[0]]
    given = method.tensor(call.args[0])
    assert given is not None
    with app.page() as me:
        me.expand_layer(expected.group(npu))
        me.select_node(expected.ids[call.index])
        shown = me.panel("Attributes")["input0"]
        assert f"shape: {list(given.sizes)}" in shown and f"value_index: {call.args[0]}" in shown


def test_every_partition_is_a_layer_when_single_child_layers_are_kept(
    layers_ui: MEPage, expected: Expected
) -> None:
    me = layers_ui
    for part in expected.parts.partitions:
        group = expected.group(part)
        hits = me.search(_exact(group))
        layer = [h for h in hits if h.node_id == layer_node_id(group)]
        assert layer, f"{group} is not a layer: {hits}"
        assert layer[0].label == group and "label" in layer[0].match_types
        hits = me.search(_attr("partition", part.name))
        assert _ids(hits) - {layer_node_id(group)} == {
            expected.ids[i] for i in part.instructions
        }, hits
    me.clear_search()
    ink = me.ink(colours=(NPU_NODE_BG, CPU_GROUP_BG))
    assert ink.fraction > MIN_INK, f"the canvas is (nearly) blank: {ink}"
    for colour in (NPU_NODE_BG, CPU_GROUP_BG):
        assert ink.colours[colour] > MIN_COLOUR_PIXELS, f"{colour} is not drawn: {ink}"
    # The CPU work that splits the NPU graph is drawn in the compute colour.
    island = next(p for p in expected.parts.partitions if p.compute_ops)
    me.expand_layer(expected.group(island))
    ink = me.ink(colours=(CPU_COMPUTE_BG,))
    assert ink.colours[CPU_COMPUTE_BG] > MIN_COLOUR_PIXELS, f"no CPU compute colour: {ink}"


def test_layer_and_node_labels_are_drawable(layers_ui: MEPage, expected: Expected) -> None:
    me = layers_ui
    drawable = me.drawable_chars()
    assert {chr(c) for c in range(32, 127)} <= drawable  # sanity: the atlas was read
    bad = {
        label: sorted(set(label) - drawable) for label in me.drawn_labels() if set(label) - drawable
    }
    assert not bad, f"labels drawn with '?' in place of characters: {bad}"


def test_exported_json_opens_without_the_extension(
    app: App, default_ui: MEPage, expected: Expected, tmp_path: Path
) -> None:
    """`pte-adapter export` writes JSON that Model Explorer's own loader opens, no extension."""
    import json

    from pte_adapter.cli import main

    out = tmp_path / "graph.json"
    assert main(["export", str(expected.path), "-o", str(out)]) == 0
    assert expected.method.name in {g["id"] for g in json.loads(out.read_text())["graphs"]}
    method_nodes = default_ui.node_count()  # as the extension shows it (hidden CONSTs excluded)
    # One Playwright session per module: the plain server's page opens in the module's browser.
    with model_explorer_server(out, extension=False) as url, App(url, app.browser).page() as me:
        assert me.graph_title() == expected.method.name
        assert me.node_count() == method_nodes
        ink = me.ink(colours=(NPU_NODE_BG,))
        assert ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, f"no Ethos-U colour drawn: {ink}"
