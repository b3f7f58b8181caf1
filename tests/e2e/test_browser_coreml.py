"""A Core ML partition in the real Model Explorer (headless Chromium): it opens onto every MIL
operation decoded from the model specification inside its payload, wired by the names they bind,
and an operation's attributes name its inputs. What is expected comes from the decoded delegate and
the partition analysis, not from the renderer.

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

COREML_NODE_BG = "#b2dfdb"  # the CoreMLBackend colour (backends.py)
MIN_COLOUR_PIXELS = 300
NAME = "coreml_small"

require_chromium()


def _partitions(name: str) -> list[tuple[Partition, DelegateGraph, str]]:
    """Each Core ML partition of an example, its MIL graph and its DelegateCall's node id."""
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
    return Path(env) if env else tmp_path_factory.mktemp("coreml_screenshots")


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


def test_a_coreml_partition_opens_on_its_wired_operations(
    app: tuple[str, object], shots: Path
) -> None:
    partitions = _partitions(NAME)
    names = group_names(example(NAME))["forward"]
    part, view, call = partitions[0]
    name = names[part.index]
    for me in _open(app, NAME):
        drawn = me.visible_nodes()
        # The partition is a group on the first screen.
        for p, _, _ in partitions:
            assert drawn.get(_layer(names[p.index])) == names[p.index], drawn
        me.screenshot(shots / f"{NAME}_1_first_screen.png")
        me.expand_layer(name)
        drawn = me.visible_nodes()
        # Model Explorer's default settings hide op nodes labelled "const" (its "Hide op nodes
        # with labels" list): every other MIL operation is drawn.
        ops = {f"{call}.{k}": op for k, op in enumerate(view.nodes) if op.kind != "const"}
        assert ops and {k: drawn.get(k) for k in ops} == {k: op.label for k, op in ops.items()}
        hidden = [f"{call}.{k}" for k, op in enumerate(view.nodes) if op.kind == "const"]
        assert not set(hidden) & set(drawn)
        # Wired as the payload wires them: an operator that reads another's output has an edge.
        producer = {
            t: f"{call}.{k}"
            for k, op in enumerate(view.nodes)
            if op.kind != "const"
            for t in op.outputs
        }
        edges = me.visible_edges()
        wired = {
            (producer[t], f"{call}.{k}")
            for k, op in enumerate(view.nodes)
            for t in op.inputs
            if t in producer
        }
        assert wired and wired <= edges, wired - edges
        ink = me.ink(colours=(COREML_NODE_BG,))
        assert ink.colours[COREML_NODE_BG] > MIN_COLOUR_PIXELS, f"no Core ML colour drawn: {ink}"
        me.screenshot(shots / f"{NAME}_2_partition_open.png")
        # An operation's inputs by their parameter names, as decoded.
        (k,) = [k for k, op in enumerate(view.nodes) if op.kind == "conv"]
        me.select_node(f"{call}.{k}")
        shown = me.panel("Attributes")
        for key in ("x", "weight", "bias", "strides", "op_name"):
            assert shown.get(key) == view.nodes[k].attrs[key], (key, shown)
        me.screenshot(shots / f"{NAME}_3_operation_selected.png")
