"""The numeric gap as a user sees it in Model Explorer: real Model Explorer in headless Chromium,
on an INT8-vs-float pair (XNNPACK with a CPU island between two partitions, the same input).

`pte-adapter numerics --node-data` writes the SNR overlay; Model Explorer opens the INT8 `.pte`
with it (what "Add per-node data" or `--node_data_paths` does): each partition's group is painted
in the overlay's gradient, the worst (lowest SNR) in its deepest colour and the best in its palest
(colours that are not in the renderer's palette, so they can only come from the node data), and
the side panel's aggregated minimum is the worst row's SNR. `pte-adapter export --reference`
writes the graph with the numbers on it: Graph info's `accuracy` line names where the SNR first
falls below 30 dB, and each partition's `output SNR`. Expected values come from the analysis,
whose numbers `tests/oracle/test_numerics.py` checks against numpy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pte_adapter.api import NumericsOptions, open_analysis
from pte_adapter.cli import main as cli_main
from pte_adapter.render.numerics_overlay import gradient
from tests.support.browser import (
    App,
    require_chromium,
    served_app,
    with_node_data,
)
from tests.support.examples import example
from tests.support.groups import group_names

pytestmark = pytest.mark.slow

INT8, FP32 = "numerics_island_int8", "numerics_island_fp32"
WORST, BEST = gradient(True)[0]["bgColor"], gradient(True)[-1]["bgColor"]
MIN_COLOUR_PIXELS = 150

require_chromium()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The SNR node data and the exported graph of the pair."""
    folder = tmp_path_factory.mktemp("numerics")
    pair = [str(example(INT8)), "--reference", str(example(FP32))]
    node_data, graph = folder / "snr.json", folder / f"{INT8}.json"
    assert cli_main(["numerics", *pair, "--node-data", str(node_data)]) == 0
    assert cli_main(["export", *pair, "-o", str(graph)]) == 0
    return node_data, graph


@pytest.fixture(scope="module")
def app(made: tuple[Path, Path]) -> Iterator[App]:
    with served_app(example(INT8), made[1]) as served:
        yield served


def _expected() -> tuple[float, list[float]]:
    result = open_analysis(example(INT8), numerics=NumericsOptions(reference=example(FP32)))
    assert result.numerics is not None
    m = result.numerics.methods["forward"]
    assert m.worst is not None and m.worst.snr_db is not None
    by_partition: dict[int, float] = {}
    for r in m.compared:
        assert r.snr_db is not None
        by_partition[r.partition] = min(by_partition.get(r.partition, r.snr_db), r.snr_db)
    return m.worst.snr_db, [by_partition[p] for p in sorted(by_partition)]


def test_the_overlay_paints_each_partition_by_its_output_snr(
    app: App, made: tuple[Path, Path], screenshots: Path
) -> None:
    worst, per_partition = _expected()
    groups = group_names(example(INT8))["forward"]
    with app.page(url=with_node_data(app.url, made[0])) as me:
        me.select_graph("forward")
        text = me.page.locator("body").inner_text()
        assert "numeric gap: SNR dB" in text and f"vs {FP32}.pte" in text
        m = re.search(r"Aggregated stats.*?\bMin\s+(-?[0-9.]+)", text, re.S)
        assert m, "no aggregated node data stats in the side panel"
        assert float(m.group(1)) == pytest.approx(worst, abs=1e-4)
        # Each partition's group is tinted by its output SNR: the worst one redder (less green)
        # than the best one.
        lowest = groups[min(range(len(per_partition)), key=per_partition.__getitem__)]
        highest = groups[max(range(len(per_partition)), key=per_partition.__getitem__)]
        fills = me.layer_fills([f"{lowest}___group___", f"{highest}___group___"])
        red, pale = fills[f"{lowest}___group___"], fills[f"{highest}___group___"]
        assert red is not None and pale is not None, fills
        assert int(red[3:5], 16) + 40 < int(pale[3:5], 16), fills
        me.screenshot(screenshots / "numerics_overlay_first_screen.png")
        # Inside, the instructions are painted in the overlay's own colours: the worst call in
        # its deepest, the best in its palest.
        me.expand_all()
        me.screenshot(screenshots / "numerics_overlay.png")
        ink = me.ink(colours=(WORST, BEST))
        assert ink.colours[WORST] > MIN_COLOUR_PIXELS, ink
        assert ink.colours[BEST] > MIN_COLOUR_PIXELS, ink


def test_graph_info_says_where_accuracy_is_lost(
    app: App, made: tuple[Path, Path], screenshots: Path
) -> None:
    worst, _ = _expected()
    groups = group_names(example(INT8))["forward"]
    with app.page(model=made[1]) as me:
        me.select_graph("forward")
        info = me.panel("Graph info")
        assert info["accuracy"].startswith("first below 30 dB at "), info
        assert f"worst {worst:.1f} dB" in info["accuracy"]
        me.screenshot(screenshots / "numerics_graph_info.png")
        # The worst partition's group carries its output SNR (its "Layer attributes").
        me.select_layer(groups[0])
        attrs = me.panel("Layer attributes")
        assert attrs.get("output SNR", "").startswith(f"{worst:.2f} dB at "), attrs
