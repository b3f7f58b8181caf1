"""The example notebook (examples/notebook.ipynb) runs headless in a real Jupyter kernel, and its
summary and report cells show inline: the partition strip (one box per partition, in its
backend's colour) and the numbers, which agree with `summarize()` in this process."""

from __future__ import annotations

import re
from typing import Any

import pytest

import pte_adapter
from pte_adapter.render.html.strip import box_colour
from tests.support.examples import EXAMPLES, example

pytestmark = pytest.mark.slow

NOTEBOOK = EXAMPLES / "notebook.ipynb"


@pytest.fixture(scope="module")
def executed() -> Any:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel is this interpreter (jupyter_client runs "python" kernels with sys.executable);
    # it finds the examples beside the notebook.
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    ).execute()
    return nb


def _html(cell: Any) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.get("outputs", []))


def _code(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_summary_shows_inline_as_the_strip_and_the_numbers(executed: Any) -> None:
    html = _html(_code(executed)[0])
    assert '<svg class="strip"' in html and "delegate partitions" in html
    result = pte_adapter.open_analysis(example("mv2_lrn_ethosu85"))
    parts = result.methods[0].partitions.partitions
    # The first strip drawn is by operations: one box per partition, in its backend's colour.
    strip = html.split('<svg class="strip"', 2)[1]
    fills = re.findall(
        r'<rect x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*" fill="([^"]+)"', strip
    )
    assert fills == [box_colour(p)[0] for p in parts]
    assert "aten::avg_pool3d" in strip


def test_the_numbers_are_summarize_s(executed: Any) -> None:
    out = _code(executed)[1]["outputs"][0]["data"]["text/plain"]
    forward = pte_adapter.summarize(pte_adapter.load(example("mv2_lrn_ethosu85")))["methods"][0]
    for key in ("delegate_partitions", "cpu_islands", "peak_live_bytes", "peak_scratch_bytes"):
        assert f"'{key}': {forward[key]}" in out, (key, out)


def test_the_comparison_shows_inline(executed: Any) -> None:
    html = _html(_code(executed)[2])
    assert html.count('<svg class="strip"') >= 2
    assert "mv2_lrn2_ethosu85.pte → mv2_lrn_ethosu85.pte" in html
    assert "Partitions, paired by role" in html
