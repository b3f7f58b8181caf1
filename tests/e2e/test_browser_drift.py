"""The runs over time as a user sees them: the report of the recorded slowdown (examples/drift/)
opened from disk in headless Chromium. The latency plot shows the onset as a red line at the run
where it began, labelled, with the warm-up shaded; the sentence under it says the drift. Expected
figures come from ExecuTorch's reading of the runs (tests/support/drift.py); positions from the
plot's own coordinates (runs spread evenly between its left margin and its right edge).
Screenshots: the `screenshots` fixture (tests/README.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.cli import main
from pte_adapter.render.html.runs import ONSET
from tests.support.browser import chromium, new_page, require_chromium
from tests.support.drift import deserialized_runs, oracle
from tests.support.examples import EXAMPLES

pytestmark = pytest.mark.slow

DRIFT = EXAMPLES / "drift"
RECORDING = json.loads((DRIFT / "recordings.json").read_text())["recordings"]["slowdown"]

require_chromium()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def test_the_report_marks_the_onset_and_the_warmup(
    browser: Any, screenshots: Path, tmp_path: Path
) -> None:
    out = tmp_path / "slowdown.html"
    pte, etdp = EXAMPLES / RECORDING["program"], DRIFT / RECORDING["etdump"]
    assert main(["report", str(pte), "--etdump", str(etdp), "-o", str(out)]) == 0
    runs = [r["Method::execute"] for r in deserialized_runs(etdp)]
    want = oracle(runs)
    onset = want["onset_run"]
    assert onset is not None
    page = new_page(browser, viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(out.resolve().as_uri())
        page.wait_for_load_state("load")
        plot = page.locator("svg.latency").first
        plot.scroll_into_view_if_needed()
        assert plot.is_visible()
        mark = plot.locator(f'line[stroke="{ONSET}"]')
        assert mark.count() == 1
        # In the plot's coordinates: runs from x = 60 to x = 990 (width 1000, 10 to spare).
        x = float(mark.get_attribute("x1") or "nan")
        assert x == pytest.approx(60 + 930 * (onset - 0.5) / (len(runs) - 1), abs=0.1)
        assert plot.get_by_text(f"onset: run {onset}").is_visible()
        # What a user sees: the onset's red drawn down the plot at that x, and nowhere else.
        shot = plot.screenshot(path=str(screenshots / "drift_onset_plot.png"))
        red = _columns_of(shot, ONSET)
        assert red, "no onset mark drawn"
        width = _width(shot)
        line_px = [c for c in red if abs(c / width - x / 1000) < 0.01]
        assert line_px, (red, x / 1000 * width)
        if want["warmup_runs"]:
            assert plot.get_by_text(f"warm-up ({want['warmup_runs']})").is_visible()
        sentence = page.locator("p.drift").first.inner_text()
        said = re.search(rf"latency rose ([0-9]+) % from run {onset}: ", sentence)
        assert said and int(said.group(1)) == pytest.approx(want["change_pct"], abs=0.51)
        table = page.locator("table", has_text="where the time went").first
        assert table.is_visible() and "XNNPACK partition 1" in table.inner_text()
        page.screenshot(path=str(screenshots / "drift_onset.png"), full_page=True)
        assert errors == []
    finally:
        page.context.close()


def _pixels(png: bytes) -> Any:
    import io

    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]


def _width(png: bytes) -> int:
    return int(_pixels(png).shape[1])


def _columns_of(png: bytes, colour: str, rows: int = 20) -> list[int]:
    """The pixel columns with at least `rows` pixels of `colour` (within anti-aliasing)."""
    import numpy as np

    want = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    near = np.abs(_pixels(png) - want).max(axis=2) < 0.12
    counts = near.sum(axis=0)
    return [int(c) for c in np.flatnonzero(counts >= rows)]
