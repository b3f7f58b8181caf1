"""A method of many partitions in the real Model Explorer: the toy GPT (4 layers, 44 partitions and
CPU islands, with its ETRecord) opens on its layers as blocks, a block opens onto its partitions and
the boundaries between them, and a DelegateCall inside opens its XNNPACK graph. What is expected
comes from the program model, the partition analysis and the ETRecord, not from the renderer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.blocks import Block, fold_partitions
from pte_adapter.analysis.partitions import CPU, MethodPartitions, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.explorer.convert import convert_path
from pte_adapter.program.model import Method
from pte_adapter.render.model_explorer import graphs_to_json
from pte_adapter.render.plan.boundaries import tensor_label
from pte_adapter.render.plan.views import delegate_graph_id
from tests.support.browser import App, MEPage, layer_node_id, require_chromium, served_app
from tests.support.examples import example
from tests.support.groups import group_paths

pytestmark = pytest.mark.slow

require_chromium()

EXAMPLE = "tiny_gpt_xnnpack"
MIN_INK = 0.01


@dataclass(frozen=True)
class Expected:
    method: Method
    parts: MethodPartitions
    blocks: list[Block]
    ids: list[str]
    graph: dict[str, Any]  # the method graph as the adapter sends it
    paths: list[str]  # each partition's group path ("<block group>/<partition group>")

    def label(self, block: Block) -> str:
        """The block's group name (`blocks.1 | XNNPACK 5 | CPU ...`)."""
        return self.paths[block.partitions[0]].split("/")[0]


@pytest.fixture(scope="module")
def expected() -> Expected:
    path = example(EXAMPLE)
    program = pte_adapter.load(path)
    method = program.methods[0]
    parts = partition_method(method)
    source = pte_adapter.analyse(program).source
    assert source is not None, "the example's ETRecord must be attached"
    blocks = fold_partitions(method, parts, source.methods[method.name])
    assert blocks and len(blocks) >= 3
    graph = json.loads(json.dumps(graphs_to_json(convert_path(path))))["graphs"][0]
    paths = group_paths(path)[method.name]
    return Expected(method, parts, blocks, instruction_role_ids(method, parts), graph, paths)


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    with served_app(example(EXAMPLE)) as app:
        yield app


@pytest.fixture
def me(app: App) -> Iterator[MEPage]:
    with app.page() as page:
        yield page


def test_a_method_of_many_partitions_opens_on_its_layers(me: MEPage, expected: Expected) -> None:
    assert me.graph_title() == expected.method.name
    drawn = me.visible_nodes()
    edges = me.visible_edges()
    in_blocks = {i for b in expected.blocks for i in b.partitions}
    for b in expected.blocks:
        label = expected.label(b)
        assert label.startswith(f"{b.name} | XNNPACK ")  # what it holds, in its name
        assert drawn.get(layer_node_id(label)) == label, f"{b.name} is not a layer: {drawn}"
        # Collapsed: nothing of its partitions is drawn yet.
        for i in b.partitions:
            part = expected.parts.partitions[i]
            assert layer_node_id(expected.paths[i]) not in drawn
            assert not {expected.ids[k] for k in part.instructions} & set(drawn)
        # What enters the block is readable on the edge into it.
        into = f"b.into.{b.name}"
        assert (into, layer_node_id(label)) in edges, f"no edge from {into}: {edges}"
        names = {expected.parts.partitions[i].name for i in b.partitions}
        texts = {
            tensor_label(expected.method, c.value).rsplit(",", 1)[0]
            for c in expected.parts.crossings
            if c.target in names and c.source not in names
        }
        assert any(drawn[into].startswith(t) for t in texts), (drawn[into], texts)
    # Partitions outside every block are drawn on their own, as before.
    for part in expected.parts.partitions:
        if part.index not in in_blocks:
            group = expected.paths[part.index]
            assert layer_node_id(group) in drawn or expected.ids[part.instructions[0]] in drawn
    ink = me.ink()
    assert ink.fraction > MIN_INK, f"the canvas is (nearly) blank: {ink}"


def test_opening_a_block_shows_its_partitions_and_their_boundaries(
    me: MEPage, expected: Expected
) -> None:
    block = expected.blocks[1]
    me.expand_layer(expected.label(block))
    drawn = me.visible_nodes()
    for i in block.partitions:
        part = expected.parts.partitions[i]
        # A layer, or (one-node partitions, dissolved by Model Explorer's default) the node.
        shown = layer_node_id(expected.paths[i]) in drawn or (
            len(part.instructions) == 1 and expected.ids[part.instructions[0]] in drawn
        )
        assert shown, f"{part.name} not drawn in {block.name}: {sorted(drawn)}"
    inside = [
        n
        for n in expected.graph["nodes"]
        if n["id"].startswith("b.") and n["namespace"] == expected.label(block)
    ]
    assert inside, f"no boundary between the partitions of {block.name}"
    for n in inside:
        assert drawn.get(n["id"]) == n["label"], n["id"]
    # The other blocks stay closed.
    for other in expected.blocks:
        if other is not block:
            assert drawn.get(layer_node_id(expected.label(other))) == expected.label(other)


def test_a_delegate_call_in_a_block_opens_its_xnnpack_graph(me: MEPage, expected: Expected) -> None:
    block = expected.blocks[1]
    part = next(
        expected.parts.partitions[i]
        for i in block.partitions
        if expected.parts.partitions[i].backend != CPU
        and (expected.parts.partitions[i].inner_ops or 0) > 1
    )
    assert part.delegate_index is not None
    view = expected.method.delegates[part.delegate_index].decoded.graphs[0]
    call = expected.ids[part.instructions[0]]
    me.expand_layer(expected.label(block))
    if call not in me.visible_nodes():
        me.expand_layer(expected.paths[part.index])
    sub = delegate_graph_id(expected.method.name, part.name, view.name)
    me.open_subgraph(call, sub)
    assert me.graph_title() == sub
    labels = set(me.visible_nodes().values())
    assert {op.label or op.kind for op in view.nodes} <= labels, labels
