"""A method of more blocks than MAX_TOP_LEVEL opens on runs of blocks (analysis/blocks.py), drawn
with each edge into a run passing through the run's boundary node and then its block's
(render/plan/boundaries.py). The committed toy GPT has only a few layers, so these tests fold it
as a program of hundreds of layers is folded, with the bound lowered to 2: the real export, the
rule's bound changed. The layer count comes from the build (manifest.json)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis import blocks as blocks_module
from pte_adapter.analysis.blocks import Block, block_runs
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.group_facts import block_and_run_names
from pte_adapter.render.model_explorer import graphs_to_json
from pte_adapter.wording import bytes_short
from tests.support.examples import EXAMPLES
from tests.support.groups import group_paths

GPT = EXAMPLES / "tiny_gpt_xnnpack.pte"
BOUND = 2


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(blocks_module, "MAX_TOP_LEVEL", BOUND)
    return BOUND


def _layers() -> int:
    manifest = json.loads((EXAMPLES / "manifest.json").read_text())
    entry = next(e for e in manifest["examples"] if e["name"] == "tiny_gpt_xnnpack")
    return int(entry["settings"]["layers"])


@pytest.mark.parametrize("etrecord", [True, False], ids=["etrecord", "repeats"])
def test_runs_are_consecutive_blocks_named_by_their_ends(bound: int, etrecord: bool) -> None:
    program = pte_adapter.load(GPT, sidecars=etrecord)
    ma = pte_adapter.analyse(program).methods[0]
    layers = _layers()
    assert len(ma.blocks) == layers > bound
    size = math.ceil(layers / bound)
    assert [r.blocks for r in ma.block_runs] == [
        tuple(range(k, min(k + size, layers))) for k in range(0, layers, size)
    ]
    for run in ma.block_runs:
        first, last = ma.blocks[run.blocks[0]], ma.blocks[run.blocks[-1]]
        if etrecord:
            assert run.name == f"{first.name} to {last.name}"
        else:
            assert first.repeat == (run.blocks[0] + 1, layers)
            assert last.repeat == (run.blocks[-1] + 1, layers)
            assert run.name == f"repeats {run.blocks[0] + 1}-{run.blocks[-1] + 1} of {layers}"


def test_a_partition_on_its_own_ends_a_run(bound: int) -> None:
    """Blocks are grouped only when adjacent; a block between two partitions on their own stays on
    its own too (a run of one would only add a box)."""
    spans = [(0, 1), (2, 3), (4, 5), (7, 8), (10, 11), (12, 13)]  # 6 and 9 on their own
    blocks = [Block(f"b{k}", span, "test") for k, span in enumerate(spans)]
    assert [r.blocks for r in block_runs(blocks)] == [(0, 1, 2), (4, 5)]
    assert [r.name for r in block_runs(blocks)] == ["b0 to b2", "b4 to b5"]
    assert block_runs(blocks[:bound]) == []


def _graph() -> dict[str, Any]:
    graph: dict[str, Any] = json.loads(json.dumps(graphs_to_json(convert_path(GPT))))["graphs"][0]
    return graph


def test_the_first_screen_is_runs_and_no_edge_reaches_into_a_run_past_its_node(bound: int) -> None:
    g = _graph()
    ma = pte_adapter.open_analysis(GPT).methods[0]
    assert ma.block_runs
    paths = group_paths(GPT)["forward"]
    labels, run_labels = block_and_run_names(ma)
    runs = set(run_labels)
    in_block = {i for b in ma.blocks for i in b.partitions}
    lone = {paths[p.index] for p in ma.partitions.partitions if p.index not in in_block}
    tops = {n["namespace"].split("/")[0] for n in g["nodes"]} - {""}
    assert tops == runs | lone
    for run, label in zip(ma.block_runs, run_labels, strict=True):
        for k in run.blocks:
            for i in ma.blocks[k].partitions:
                assert paths[i].split("/")[:2] == [label, labels[k]]
    nodes = {n["id"]: n for n in g["nodes"]}
    # What enters a run from outside it enters through one node at the top level.
    into_runs = [n for n in g["nodes"] if n["id"].startswith("b.into.") and not n["namespace"]]
    assert sorted(n["id"] for n in into_runs) == sorted(f"b.into.{r.name}" for r in ma.block_runs)
    for n in g["nodes"]:
        run = n["namespace"].split("/")[0]
        for e in n.get("incomingEdges", []):
            source = nodes[e["sourceNodeId"]]["namespace"].split("/")[0]
            if run in runs and source != run:
                # From outside a run: only into its own boundary node, inside the run itself.
                assert n["id"].startswith("b.into.") and n["namespace"] == run, (n["id"], source)
    for n in g["nodes"]:
        if not n["id"].startswith("b."):
            continue
        attrs = {a["key"]: a["value"] for a in n["attrs"]}
        size = bytes_short(int(attrs["bytes"]))
        if n["namespace"]:
            assert n["label"] == size  # inside a run or block: the bytes alone
        else:
            assert n["label"].endswith(", " + size) and n["label"].startswith("[")
    groups = g["groupNodeAttributes"]
    for run, label in zip(ma.block_runs, run_labels, strict=True):
        attrs = groups[label]
        first, last = ma.blocks[run.blocks[0]], ma.blocks[run.blocks[-1]]
        assert attrs["blocks"] == f"{first.name} to {last.name} ({len(run.blocks)})"
        assert {"crossings_into_run", "crossings_out_of_run", "crossings_inside_run"} <= set(attrs)
    for part in ma.partitions.partitions:
        attrs = groups[paths[part.index]]
        if part.index in in_block:
            assert attrs["partition"] == part.name
    regexes = {c["namespaceRegex"] for c in g["groupNodeConfigs"]}
    for path in paths:
        escaped = "".join("\\" + c if c in r"\.^$*+?{}[]|()" else c for c in path)
        assert f"^{escaped}$" in regexes
