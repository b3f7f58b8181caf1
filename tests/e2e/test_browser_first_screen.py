"""The first screen shows the split: a MobileNetV2 whose residual adds stayed on the CPU (11 NPU
partitions, 12 CPU islands) opens unfolded, with every partition drawn in its backend's colour,
and every island that computes says `aten::add` in its name. Expected values come from the
partition analysis and the backend palette, and each colour is read back from the drawn pixels."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, Partition
from pte_adapter.backends import CPU_GROUP_COLOUR, backend_colour
from pte_adapter.render.group_facts import partition_group_names
from tests.support.browser import (
    KEEP_SINGLE_CHILD_LAYERS,
    MEPage,
    layer_node_id,
    require_chromium,
    served_app,
)
from tests.support.examples import example

pytestmark = pytest.mark.slow

EXAMPLE = "mv2_residual_cpu_ethosu85"


require_chromium()


@pytest.fixture(scope="module")
def expected() -> tuple[list[Partition], list[str]]:
    result = pte_adapter.open_analysis(example(EXAMPLE))
    ma = result.methods[0]
    parts = ma.partitions.partitions
    assert sum(p.backend != CPU for p in parts) == 11 and sum(p.is_cpu for p in parts) == 12
    assert ma.blocks == []
    return parts, partition_group_names(ma)


@pytest.fixture(scope="module")
def me() -> Iterator[MEPage]:
    # Every partition a layer, one-kernel islands too: each has a box whose colour can be read.
    settings = {KEEP_SINGLE_CHILD_LAYERS: True}
    with served_app(example(EXAMPLE)) as app, app.page(settings=settings) as page:
        yield page


def _nearest(colour: str, palette: list[str]) -> str:
    def rgb(c: str) -> tuple[int, int, int]:
        return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)

    r, g, b = rgb(colour)
    return min(
        palette, key=lambda p: sum((x - y) ** 2 for x, y in zip(rgb(p), (r, g, b), strict=True))
    )


def test_every_partition_is_on_the_first_screen_in_its_colour(
    me: MEPage, expected: tuple[list[Partition], list[str]]
) -> None:
    parts, names = expected
    drawn = me.visible_nodes()
    missing = [n for n in names if layer_node_id(n) not in drawn]
    assert not missing, f"not on the first screen: {missing}"
    fills = me.layer_fills([layer_node_id(n) for n in names])
    wanted = [CPU_GROUP_COLOUR[0] if p.is_cpu else backend_colour(p.backend)[0] for p in parts]
    # The whole method fits the window, so a box is a few pixels high and a sampled pixel may
    # blend with its label or border: each is read as the nearest of the group colours drawn
    # (or of white and the grey of a CPU kernel's node, should it miss the box).
    palette = sorted({*wanted, "#ffffff", "#e0e0e0"})
    for name, want in zip(names, wanted, strict=True):
        got = fills[layer_node_id(name)]
        assert got is not None and _nearest(got, palette) == want, (
            f"{name} drawn in {got}, not {want}"
        )
    assert not me.console_errors, me.console_errors


def test_every_add_island_names_its_add(
    me: MEPage, expected: tuple[list[Partition], list[str]]
) -> None:
    parts, names = expected
    drawn = set(me.visible_nodes().values())
    adds = [n for p, n in zip(parts, names, strict=True) if "aten::add.out" in p.compute_ops]
    assert len(adds) == 10
    for name in adds:
        assert name in drawn and " - aten::add" in name, name
