"""`pte-adapter report` in a real headless Chromium: the file opens from disk, draws, logs no
console error and makes no request besides itself; the strip has one box per partition in its
backend's colour, its width toggle works without a script, and the comparison draws both programs.
Expected values come from the analysis and the backend palette. Screenshots: the `screenshots`
fixture (tests/README.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.cli import main
from pte_adapter.render.html.strip import box_colour
from tests.support.browser import chromium, new_page, require_chromium
from tests.support.examples import example

pytestmark = pytest.mark.slow

SINGLE = ["mv2_lrn_ethosu85", "mv2_residual_cpu_ethosu85", "tiny_gpt_xnnpack", "mv2_xnnpack_int8"]
PAIR = ("mv2_lrn2_ethosu85", "mv2_lrn_ethosu85")


require_chromium()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


class Opened:
    """A report opened from disk, with everything the page logged and asked for."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = new_page(browser, viewport={"width": 1200, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def visible_strips(self) -> Any:
        return self.page.locator(".toggle .panel svg.strip").filter(visible=True)

    def box_fills(self, strip: int) -> list[str]:
        fills: list[str] = (
            self.visible_strips()
            .nth(strip)
            .evaluate(
                "s => Array.from(s.querySelectorAll('rect')).map(r => r.getAttribute('fill'))"
            )
        )
        return fills


def _write(tmp_path: Path, *names: str) -> Path:
    out = tmp_path / f"{'_vs_'.join(names)}.html"
    assert main(["report", *(str(example(n)) for n in names), "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("name", SINGLE)
def test_a_report_renders_alone(browser: Any, screenshots: Path, tmp_path: Path, name: str) -> None:
    result = pte_adapter.open_analysis(example(name))
    opened = Opened(browser, _write(tmp_path, name))
    try:
        assert opened.errors == []
        assert opened.requests == [opened.url], opened.requests  # itself, nothing else
        assert opened.page.title().startswith(example(name).name)
        # One visible strip per method, one box per partition in its backend's colour.
        assert opened.visible_strips().count() == len(result.methods)
        for k, ma in enumerate(result.methods):
            want = [box_colour(p)[0] for p in ma.partitions.partitions]
            assert opened.box_fills(k) == want
        text = opened.page.locator("body").inner_text()
        assert "Memory" in text and "Peak" in text and "Size" in text
        # The deployment memory map, one bar part per item of the map: for a board's program only
        # (a phone or desktop backend's gets none unless a board or a size is asked for).
        if result.deployment is not None:
            assert "Will it fit" in text
            rects = opened.page.locator("section#fit svg rect").count()
            assert rects == len(result.deployment.items)
        else:
            assert "Will it fit" not in text
        if result.profile_summary is not None:
            assert "Measured" in text and opened.page.locator("svg.latency").count() == 1
        opened.page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)
    finally:
        opened.page.context.close()


def test_the_lrn_report_names_the_culprit_and_toggles_its_width(
    browser: Any, screenshots: Path, tmp_path: Path
) -> None:
    opened = Opened(browser, _write(tmp_path, "mv2_lrn_ethosu85"))
    try:
        strip = opened.visible_strips().first
        assert "aten::avg_pool3d" in strip.evaluate("s => s.textContent")
        reasons = opened.page.locator("table", has_text="why not delegated").first.inner_text()
        assert "aten::avg_pool3d" in reasons and "features.4 (LocalResponseNorm)" in reasons
        assert "examples/models/mobilenet.py:" in reasons  # the source line
        before = strip.evaluate("s => s.outerHTML")
        opened.page.get_by_text("estimated time", exact=True).click()
        assert opened.visible_strips().count() == 1
        after = opened.visible_strips().first.evaluate("s => s.outerHTML")
        assert after != before and "estimated time" in after
        opened.page.screenshot(path=str(screenshots / "lrn_by_estimate.png"))
        assert opened.errors == [] and opened.requests == [opened.url]
    finally:
        opened.page.context.close()


def test_a_comparison_renders_both_programs(
    browser: Any, screenshots: Path, tmp_path: Path
) -> None:
    before, after = (pte_adapter.open_analysis(example(n)) for n in PAIR)
    opened = Opened(browser, _write(tmp_path, *PAIR))
    try:
        assert opened.errors == [] and opened.requests == [opened.url]
        assert opened.visible_strips().count() == 2
        for k, result in enumerate((before, after)):
            parts = result.methods[0].partitions.partitions
            assert opened.box_fills(k) == [box_colour(p)[0] for p in parts]
        text = opened.page.locator("body").inner_text()
        assert "delegate partitions" in text and "Partitions, paired by role" in text
        opened.page.screenshot(path=str(screenshots / "comparison.png"), full_page=True)
    finally:
        opened.page.context.close()
