"""Regenerate the pictures of the README and docs/ from what the current code shows.

    python -m scripts.make_readme_images            # writes docs/images/*.png

Uses the same machinery as tests/e2e/test_browser.py (the system Chromium, headless, driven by
Playwright; `model-explorer --extensions=pte_adapter` on a free port):

- method_graph.png: the fragmented Ethos-U example as Model Explorer first shows it (default
  settings): its partitions and CPU islands with the tensors that cross between them;
- npu_operations.png: the same with NPU partition 1 opened: its decoded NPU operations;
- summary.png: `pte-adapter summary` on the same example;
- report.png: the top of `pte-adapter report` on the same example (docs/report.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tests.support.browser import (
    MEPage,
    chromium,
    model_explorer_server,
    new_page,
    text_to_png,
)

ROOT = Path(__file__).resolve().parent.parent

EXAMPLE = ROOT / "examples" / "mv2_lrn_ethosu85.pte"
OUT = ROOT / "docs" / "images"


def _summary_text(path: Path) -> str:
    exe = Path(sys.executable).parent / "pte-adapter"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pte_adapter.cli"]
    result = subprocess.run(
        [*cmd, "summary", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def _report_png(browser: object, path: Path) -> None:
    """The first screen of the HTML report, at 2x."""
    import tempfile

    import pte_adapter

    with tempfile.TemporaryDirectory() as tmp:
        html = pte_adapter.report(EXAMPLE).save(Path(tmp) / "report.html")
        page = new_page(browser, scale=2, viewport={"width": 1100, "height": 760})  # type: ignore[arg-type]
        try:
            page.goto(html.resolve().as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(path))
        finally:
            page.context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (docs/images)")
    args = parser.parse_args(argv)
    out: Path = args.out

    import pte_adapter
    from pte_adapter.analysis.partitions import CPU
    from pte_adapter.render.group_facts import partition_group_names

    result = pte_adapter.open_analysis(EXAMPLE)
    ma = result.methods[0]
    npu = next(p for p in ma.partitions.partitions if p.backend != CPU)
    npu_group = partition_group_names(ma)[npu.index]  # the layer's name as drawn

    start = time.monotonic()
    with model_explorer_server(EXAMPLE) as url, chromium() as browser:
        # A smaller window at 2x: Model Explorer zooms the graph to fit, so labels come out
        # larger and sharp when the README scales the picture down.
        me = MEPage(new_page(browser, scale=2, viewport={"width": 1500, "height": 1000}))
        me.open(url)  # what a user sees first, default settings
        me.zoom_out()  # clear of the search toolbar that floats over the top of the graph
        me.screenshot(out / "method_graph.png")

        me.expand_layer(npu_group)
        # Opening a layer selects it (drawn blue); a click on empty canvas at the right deselects.
        box = me.renderer().bounding_box()
        assert box is not None
        me.page.mouse.click(box["x"] + box["width"] - 20, box["y"] + box["height"] / 2)
        me.wait_drawn()
        me.zoom_out()
        me.screenshot(out / "npu_operations.png")
        me.page.context.close()

        text_to_png(
            browser,
            _summary_text(EXAMPLE),
            out / "summary.png",
            title=f"pte-adapter summary {EXAMPLE.relative_to(ROOT)}",
        )
        _report_png(browser, out / "report.png")
    for name in ("method_graph.png", "npu_operations.png", "summary.png", "report.png"):
        print(out / name)
    print(f"done in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
