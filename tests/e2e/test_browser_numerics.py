"""The numeric gap as a user sees it in Model Explorer: real Model Explorer in headless Chromium,
on an INT8-vs-float pair (XNNPACK with a CPU island between two partitions, the same input), and
on the Ethos-U LRN example's emulated run against its float export (examples/emulated/).

`pte-adapter numerics --node-data` writes the SNR overlay; Model Explorer opens the INT8 `.pte`
with it (what "Add per-node data" or `--node_data_paths` does): each instruction is painted in
the overlay's gradient, the worst (lowest SNR) in its deepest colour and the best in its palest
(colours that are not in the renderer's palette, so they can only come from the node data); under
each partition's group Model Explorer draws a bar of the colours of the instructions inside it
(sampled across its middle: its top edge is blended with the group's fill); and
the side panel's aggregated minimum is the worst row's SNR. `pte-adapter export --reference`
writes the graph with the numbers on it: Graph info's `accuracy` line names where the SNR first
falls below 30 dB, and each partition's `output SNR`. Expected values come from the analysis,
whose numbers `tests/oracle/test_numerics.py` checks against numpy.

On `mv2_lrn_ethosu85` (its emulated run: `tests/oracle/test_emulated_numerics.py` checks its rows
against the numpy oracle) each partition's bar holds its instructions' colours (the island's
several), and the overlay's name and Graph info say the run is emulated. The group's own value in
the node data (its output SNR) is not what Model Explorer draws: Graph info and the group's
`output SNR` attribute carry it (`export --reference`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pte_adapter.analysis.numerics.rows import NumericRow
from pte_adapter.api import NumericsOptions, open_analysis
from pte_adapter.cli import main as cli_main
from pte_adapter.render.numerics_overlay import gradient
from tests.support import emulated
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
def app(made: tuple[Path, Path], lrn_made: tuple[Path, Path, dict[int, float]]) -> Iterator[App]:
    """One server for both programs (one Playwright per thread: a second one cannot start while
    the first runs); it opens the INT8 island program first."""
    with served_app(example(INT8), made[1], emulated.PROGRAM, lrn_made[1]) as served:
        yield served


def _expected() -> tuple[float, list[float]]:
    result = open_analysis(example(INT8), numerics=NumericsOptions(reference=example(FP32)))
    assert result.numerics is not None
    m = result.numerics.methods["forward"]
    lowest = min(r.snr_db for r in m.compared if r.snr_db is not None)
    return lowest, list(_output_snr(m.compared).values())


def _output_snr(rows: list[NumericRow]) -> dict[int, float]:
    """Partition index -> its output SNR: the worst of its rows that leave it."""
    by_partition: dict[int, float] = {}
    for r in rows:
        assert r.snr_db is not None
        if r.boundary:
            by_partition[r.partition] = min(by_partition.get(r.partition, r.snr_db), r.snr_db)
    return dict(sorted(by_partition.items()))


def test_the_overlay_paints_each_partition_by_its_output_snr(
    app: App, made: tuple[Path, Path], screenshots: Path
) -> None:
    worst, per_partition = _expected()
    groups = group_names(example(INT8))["forward"]
    with app.page(url=with_node_data(app.url, made[0])) as me:
        me.select_graph("forward")
        text = me.page.locator("body").inner_text()
        assert f"numeric gap vs {FP32}.pte: SNR dB" in text
        m = re.search(r"Aggregated stats.*?\bMin\s+(-?[0-9.]+)", text, re.S)
        assert m, "no aggregated node data stats in the side panel"
        assert float(m.group(1)) == pytest.approx(worst, abs=1e-4)
        # Under each partition's group, Model Explorer's bar of its instructions' colours (one
        # delegate call each here): the worst partition's in the deepest colour, the best's paler.
        lowest = groups[min(range(len(per_partition)), key=per_partition.__getitem__)]
        highest = groups[max(range(len(per_partition)), key=per_partition.__getitem__)]
        ids = [f"{lowest}___group___", f"{highest}___group___"]
        bars = me.layer_bars(ids)
        red, pale = ({c for c in bars[i] or [] if (bars[i] or []).count(c) > 1} for i in ids)
        assert red == {WORST} and len(pale) == 1, bars
        assert int(WORST[3:5], 16) + 40 < int(next(iter(pale))[3:5], 16), bars
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
        assert f"worst {worst:.2f} dB" in info["accuracy"]
        me.screenshot(screenshots / "numerics_graph_info.png")
        # The worst partition's group carries its output SNR (its "Layer attributes").
        me.select_layer(groups[0])
        attrs = me.panel("Layer attributes")
        assert attrs.get("output SNR", "").startswith(f"{worst:.2f} dB at "), attrs


def _lrn_args(float_reference: Path) -> list[str]:
    return [
        str(emulated.PROGRAM),
        "--etdump",
        str(emulated.ETDUMP),
        "--debug-buffer",
        str(emulated.DEBUG_BUFFER),
        "--reference",
        str(float_reference / f"{emulated.FLOAT_STEM}.pte"),
    ]


@pytest.fixture(scope="module")
def lrn_made(
    tmp_path_factory: pytest.TempPathFactory, float_reference: Path
) -> tuple[Path, Path, dict[int, float]]:
    """The emulated LRN run against its float export: the SNR node data, the exported graph, and
    each partition's output SNR (the analysis's)."""
    folder = tmp_path_factory.mktemp("numerics_lrn")
    node_data, graph = folder / "snr.json", folder / f"{emulated.PROGRAM.stem}.json"
    args = _lrn_args(float_reference)
    assert cli_main(["numerics", *args, "--node-data", str(node_data)]) == 0
    assert cli_main(["export", *args, "-o", str(graph)]) == 0
    options = NumericsOptions(
        debug_buffer=emulated.DEBUG_BUFFER, reference=float_reference / f"{emulated.FLOAT_STEM}.pte"
    )
    result = open_analysis(emulated.PROGRAM, etdump=emulated.ETDUMP, numerics=options)
    assert result.numerics is not None
    return node_data, graph, _output_snr(result.numerics.methods["forward"].compared)


def test_the_emulated_lrn_run_paints_each_partition_by_its_instructions(
    app: App, lrn_made: tuple[Path, Path, dict[int, float]], screenshots: Path
) -> None:
    """mv2_lrn_ethosu85 with the overlay. Model Explorer draws under each partition's group a bar
    of the colours of the instructions inside it (its own rule: one segment per colour, widths by
    count; the group's own value in the node data is not what it draws). NPU partition 2, whose
    one call is the worst, in the overlay's deepest colour; NPU partition 1's call paler; CPU
    island 2's three instructions in more than one colour, one of them NPU partition 1's (both
    the LRN's padded squares, 39.81 dB); the overlay names the run as emulated."""
    node_data, _, output_snr = lrn_made
    groups = group_names(emulated.PROGRAM)["forward"]
    url = with_node_data(app.model_url(emulated.PROGRAM), node_data)
    with app.page(url=url) as me:
        me.select_graph("forward")
        text = me.page.locator("body").inner_text()
        assert f"EMULATED run: numeric gap vs {emulated.FLOAT_STEM}.pte" in text, text[:2000]
        m = re.search(r"Aggregated stats.*?\bMin\s+(-?[0-9.]+)", text, re.S)
        assert m, "no aggregated node data stats in the side panel"
        assert float(m.group(1)) == pytest.approx(min(output_snr.values()), abs=1e-4)
        ids = {
            name: next(f"{g}___group___" for g in groups if g.startswith(f"{name} "))
            for name in ("NPU partition 1", "CPU island 2", "NPU partition 2")
        }
        bars = me.layer_bars(list(ids.values()))
        me.screenshot(screenshots / "numerics_emulated_lrn.png")
        colours = {}
        for name, gid in ids.items():
            found = bars[gid]
            assert found is not None, (name, bars)
            # A colour seen at one point only is the blend at a segment's edge.
            colours[name] = {c for c in found if found.count(c) > 1}
        npu1, island, npu2 = (colours[n] for n in ids)
        assert npu2 == {WORST.lower()}, colours
        assert len(npu1) == 1 and len(island) >= 2, colours
        assert npu1 < island, colours
        greens = {c: int(c[3:5], 16) for c in npu1 | island}
        assert min(greens.values()) > int(WORST[3:5], 16) + 40, colours
        # CPU island 3's one dequantize, drawn as an op, carries the worst value.
        assert me.ink(colours=(WORST,)).colours[WORST] > MIN_COLOUR_PIXELS


def test_the_emulated_lrn_graph_info_says_emulated(
    app: App, lrn_made: tuple[Path, Path, dict[int, float]], screenshots: Path
) -> None:
    _, graph, output_snr = lrn_made
    groups = group_names(emulated.PROGRAM)["forward"]
    with app.page(model=graph) as me:
        me.select_graph("forward")
        info = me.panel("Graph info")
        assert info["accuracy"].endswith("(emulated)"), info
        assert info["numeric gap values"].startswith("EMULATED"), info
        me.screenshot(screenshots / "numerics_emulated_lrn_graph_info.png")
        island = next(p for p in output_snr if groups[p].startswith("CPU island 2"))
        me.select_layer(groups[island])
        attrs = me.panel("Layer attributes")
        assert attrs.get("output SNR", "").startswith(f"{output_snr[island]:.2f} dB at "), attrs
