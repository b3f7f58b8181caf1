"""A Core ML or Vulkan partition in the real Model Explorer (headless Chromium): the program opens
with every such partition a group on the first screen, between the CPU islands; a partition opens
onto every operation decoded from its payload (a Core ML model specification's MIL operations, a
VkGraph's operator calls), wired as the payload wires them; and an operation's attributes name its
arguments as decoded. What is expected comes from the decoded delegate and the partition analysis,
not from the renderer.

Screenshots of each step: the `screenshots` fixture (tests/README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.browser import App, layer_node_id, require_chromium, served_app
from tests.support.examples import example
from tests.support.groups import delegated_partitions

pytestmark = pytest.mark.slow

MIN_COLOUR_PIXELS = 300

require_chromium()


@dataclass(frozen=True)
class Case:
    example: str
    colour: str  # the backend's node colour (backends.py)
    backend: str  # for people, in a failure message
    hidden_kinds: frozenset[str]  # operations Model Explorer's default settings do not draw
    selected_kind: str | None  # the operation whose attributes are read (None: the first)
    attributes: tuple[str, ...]  # argument names its panel must show as decoded


CASES = [
    Case(
        "coreml_small",
        "#b2dfdb",
        "Core ML",
        # Model Explorer's default settings hide op nodes labelled "const" (its "Hide op nodes
        # with labels" list): every other MIL operation is drawn.
        frozenset({"const"}),
        "conv",
        ("x", "weight", "bias", "strides", "op_name"),  # its inputs by their parameter names
    ),
    Case(
        "vulkan_cnn_island",
        "#dcedc8",
        "Vulkan",
        frozenset(),
        None,
        ("weight", "stride", "groups", "output_min", "out"),  # a call's schema argument names
    ),
]


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    with served_app(*(example(case.example) for case in CASES)) as app:
        yield app


@pytest.mark.parametrize("case", CASES, ids=[c.example for c in CASES])
def test_a_partition_opens_on_its_wired_operations(app: App, case: Case, screenshots: Path) -> None:
    name = case.example
    partitions = delegated_partitions(example(name))
    first = partitions[0]
    view, call = first.view, first.call
    with app.page(example(name)) as me:
        drawn = me.visible_nodes()
        for p in partitions:
            assert drawn.get(layer_node_id(p.group)) == p.group, drawn
        me.screenshot(screenshots / f"{name}_1_first_screen.png")
        me.expand_layer(first.group)
        drawn = me.visible_nodes()
        shown_ops = [(k, op) for k, op in enumerate(view.nodes) if op.kind not in case.hidden_kinds]
        ops = {f"{call}.{k}": op for k, op in shown_ops}
        assert ops and {k: drawn.get(k) for k in ops} == {k: op.label for k, op in ops.items()}
        hidden = [f"{call}.{k}" for k, op in enumerate(view.nodes) if op.kind in case.hidden_kinds]
        assert not set(hidden) & set(drawn)
        # Wired as the payload wires them: an operation that reads another's output has an edge.
        producer = {t: f"{call}.{k}" for k, op in shown_ops for t in op.outputs}
        edges = me.visible_edges()
        wired = {
            (producer[t], f"{call}.{k}")
            for k, op in enumerate(view.nodes)
            for t in op.inputs
            if t in producer
        }
        assert wired and wired <= edges, wired - edges
        ink = me.ink(colours=(case.colour,))
        assert ink.colours[case.colour] > MIN_COLOUR_PIXELS, f"no {case.backend} colour: {ink}"
        me.screenshot(screenshots / f"{name}_2_partition_open.png")
        if case.selected_kind is None:
            k = 0
        else:
            (k,) = [k for k, op in enumerate(view.nodes) if op.kind == case.selected_kind]
        me.select_node(f"{call}.{k}")
        shown = me.panel("Attributes")
        for key in case.attributes:
            assert shown.get(key) == view.nodes[k].attrs[key], (key, shown)
        me.screenshot(screenshots / f"{name}_3_operation_selected.png")
