"""Folding a method of many partitions into blocks (analysis/blocks.py) and drawing it
(render/model_explorer.py), on the toy GPT the build script exports (4 layers, 44 partitions and
CPU islands). The layer count comes from the build (manifest.json), not from this code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.blocks import (
    FIRST_SCREEN_BUDGET,
    FOLD_PAYS,
    MIN_BLOCK,
    _by_count,
    first_screen_cost,
    fold_partitions,
)
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.model_explorer import graphs_to_json
from tests.support.examples import EXAMPLE_PTES, EXAMPLES
from tests.support.groups import group_paths

GPT = EXAMPLES / "tiny_gpt_xnnpack.pte"


def _layers() -> int:
    manifest = json.loads((EXAMPLES / "manifest.json").read_text())
    entry = next(e for e in manifest["examples"] if e["name"] == "tiny_gpt_xnnpack")
    return int(entry["settings"]["layers"])


def _blocks(etrecord: bool) -> tuple[Any, Any, list[Any]]:
    program = pte_adapter.load(GPT, sidecars=etrecord)
    method = program.methods[0]
    parts = partition_method(method)
    source = pte_adapter.analyse(program).source
    assert (source is not None) == etrecord
    blocks = fold_partitions(method, parts, source.methods[method.name] if source else None)
    assert blocks is not None
    return method, parts, blocks


def _consecutive_and_disjoint(blocks: list[Any], n: int) -> None:
    seen: set[int] = set()
    for b in blocks:
        assert list(b.partitions) == list(range(b.partitions[0], b.partitions[-1] + 1)), b.name
        assert not seen & set(b.partitions), b.name
        seen |= set(b.partitions)
        assert "/" not in b.name
    assert seen <= set(range(n))
    assert len({b.name for b in blocks}) == len(blocks)


def test_the_etrecord_names_one_block_per_layer() -> None:
    method, parts, blocks = _blocks(etrecord=True)
    assert first_screen_cost(parts, []) > FIRST_SCREEN_BUDGET
    _consecutive_and_disjoint(blocks, len(parts.partitions))
    assert [b.name for b in blocks] == [f"blocks.{k}" for k in range(_layers())]
    source = pte_adapter.analyse(pte_adapter.load(GPT)).source
    assert source is not None
    msrc = source.methods[method.name]
    for b in blocks:
        assert b.basis == f"ETRecord module {b.name}"
        # Every recorded node of every partition in the block that belongs to a layer belongs to
        # this one (the mapping itself is checked against ExecuTorch's parse_etrecord in
        # test_etrecord_oracle.py).
        for i in b.partitions:
            layers = {
                m.path
                for ins in parts.partitions[i].instructions
                if ins in msrc.instructions
                for stack in msrc.instructions[ins].stacks
                for m in stack
                if m.path.startswith("blocks.")
            }
            assert layers, (b.name, i)
            assert all(p == b.name or p.startswith(b.name + ".") for p in layers), (b.name, layers)


def test_without_an_etrecord_the_repeating_structure_gives_the_layers() -> None:
    method, parts, blocks = _blocks(etrecord=False)
    _consecutive_and_disjoint(blocks, len(parts.partitions))
    layers = _layers()
    assert len(blocks) == layers
    assert [b.name for b in blocks] == [f"repeat {k + 1} of {layers}" for k in range(layers)]
    period = len(blocks[0].partitions)
    assert all(len(b.partitions) == period for b in blocks)

    # Each block does what the first does: same backends and kernels, partition by partition.
    def what(i: int) -> tuple[object, ...]:
        p = parts.partitions[i]
        return (
            p.backend,
            tuple(method.instructions[k].op_index for k in p.instructions),
            p.inner_ops,
        )

    for b in blocks[1:]:
        assert [what(i) for i in b.partitions] == [what(i) for i in blocks[0].partitions]


def test_runs_of_a_fixed_size_when_nothing_else_is_known() -> None:
    _, parts, _ = _blocks(etrecord=False)
    blocks = _by_count(parts.partitions)
    assert len(blocks) <= 16
    _consecutive_and_disjoint(blocks, len(parts.partitions))
    assert sum(len(b.partitions) for b in blocks) == len(parts.partitions)
    assert all(len(b.partitions) >= MIN_BLOCK for b in blocks[:-1])


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=lambda p: p.stem)
def test_a_method_is_folded_only_when_it_pays(pte: Path) -> None:
    """Folded exactly when the first screen of collapsed partitions would cost more than the
    budget, into blocks of at least three that at least halve it; never into blocks of two."""
    program = pte_adapter.load(pte)
    for method in program.methods:
        parts = partition_method(method)
        folded = fold_partitions(method, parts, None)
        unfolded = first_screen_cost(parts, [])
        if unfolded <= FIRST_SCREEN_BUDGET:
            assert folded is None
        if folded is not None:
            assert all(len(b.partitions) >= MIN_BLOCK for b in folded)
            assert first_screen_cost(parts, folded) <= unfolded * FOLD_PAYS


def test_the_first_screen_cost_counts_what_is_drawn() -> None:
    """On the LRN example every group is one item: 5 partitions, Graph Inputs and Outputs, and
    a boundary node with an edge in and out between each pair that tensors cross between."""
    method = pte_adapter.load(EXAMPLES / "mv2_lrn_ethosu85.pte").methods[0]
    parts = partition_method(method)
    pairs = {
        (c.source, c.target)
        for c in parts.crossings
        if not (c.source.startswith(("CPU", "method")) and c.target.startswith(("CPU", "method")))
    }
    assert first_screen_cost(parts, []) == len(parts.partitions) + 2 + 3 * len(pairs)


def test_a_mobilenet_split_by_its_residual_adds_opens_unfolded() -> None:
    """Eleven NPU partitions and twelve CPU islands: a few dozen groups, cheap to draw, and the
    split is what the screen is for."""
    program = pte_adapter.load(EXAMPLES / "mv2_residual_cpu_ethosu85.pte")
    method = program.methods[0]
    parts = partition_method(method)
    assert len(parts.delegate_partitions) == 11 and len(parts.cpu_islands) == 12
    assert fold_partitions(method, parts, None) is None
    assert pte_adapter.analyse(program).methods[0].blocks == []


def _method_graph() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    graphs = json.loads(json.dumps(graphs_to_json(convert_path(GPT))))["graphs"]
    return graphs[0], graphs


def test_the_first_screen_is_blocks_and_what_crosses_between_them() -> None:
    g, _ = _method_graph()
    _, parts, blocks = _blocks(etrecord=True)
    paths = group_paths(GPT)["forward"]  # each partition's group path
    label = {b.name: paths[b.partitions[0]].split("/")[0] for b in blocks}
    for b in blocks:
        assert label[b.name].startswith(f"{b.name} | XNNPACK ")
        assert all(paths[i].split("/")[0] == label[b.name] for i in b.partitions)
    group = {p.name: paths[p.index].split("/")[-1] for p in parts.partitions}
    block_of = {
        group[parts.partitions[i].name]: label[b.name] for b in blocks for i in b.partitions
    }
    tops = {n["namespace"].split("/")[0] for n in g["nodes"]} - {""}
    lone = set(group.values()) - set(block_of)
    assert tops == set(label.values()) | lone
    for n in g["nodes"]:
        part = n["namespace"].split("/")[0]
        if n["id"].startswith("b.") or n["id"] in ("inputs", "outputs"):
            continue
        # Every instruction node sits in "<block>/<partition>" or "<partition>".
        first, _, rest = n["namespace"].partition("/")
        if first in set(label.values()):
            assert rest.split("/")[0] in block_of and block_of[rest.split("/")[0]] == first
        else:
            assert part in lone
    # Top-level boundary nodes: one into each block (its id names the block), plus one per pair
    # of lone partitions.
    top_boundaries = [n for n in g["nodes"] if n["id"].startswith("b.") and not n["namespace"]]
    into = [n for n in top_boundaries if n["id"].startswith("b.into.")]
    assert sorted(n["id"] for n in into) == sorted(f"b.into.{b.name}" for b in blocks)
    for n in into:
        assert n["label"].endswith("KiB"), n["label"]
    # A boundary between two partitions of one block is drawn inside that block; its attributes
    # name the partitions by their own names.
    block_by_name = {
        p.name: label[b.name] for b in blocks for p in (parts.partitions[i] for i in b.partitions)
    }
    for n in g["nodes"]:
        if n["id"].startswith("b.") and n["namespace"]:
            attrs = {a["key"]: a["value"] for a in n["attrs"]}
            source, target = attrs["boundary"].split(" to ")
            assert block_by_name[source] == block_by_name[target] == n["namespace"]
    # Group attributes and colours follow the partitions into their blocks.
    keys = set(g["groupNodeAttributes"])
    assert set(paths) <= keys
    for b in blocks:
        assert g["groupNodeAttributes"][label[b.name]]["block"] == b.basis
    regexes = {c["namespaceRegex"] for c in g["groupNodeConfigs"]}
    for name in paths:
        escaped = "".join("\\" + c if c in r"\.^$*+?{}[]|()" else c for c in name)
        assert f"^{escaped}$" in regexes


def test_a_folded_method_opens_each_delegate_graph_from_its_call() -> None:
    g, graphs = _method_graph()
    by_id = {x["id"]: x for x in graphs}
    program = pte_adapter.load(GPT)
    method = program.methods[0]
    parts = partition_method(method)
    ids = instruction_role_ids(method, parts)
    nodes = {n["id"]: n for n in g["nodes"]}
    for part in parts.delegate_partitions:
        assert part.delegate_index is not None
        call = nodes[ids[part.instructions[0]]]
        views = method.delegates[part.delegate_index].decoded.graphs
        assert views, part.name
        assert len(call["subgraphIds"]) == 1, part.name
        sub = by_id[call["subgraphIds"][0]]
        ops = [n for n in sub["nodes"] if n["id"] not in ("delegate_inputs", "delegate_outputs")]
        assert len(ops) == len(views[0].nodes)
        # Nothing of the delegate is drawn inside the method graph but the call itself.
        assert not any(n.startswith(call["id"] + ".") for n in nodes)
    # The method graph is still the largest: the one Model Explorer opens first.
    assert len(g["nodes"]) == max(len(x["nodes"]) for x in graphs)
