"""The deployment memory map's line in the real Model Explorer: the Graph info of the method the
runner loads shows `deployment_memory`, with the NPU scratch as Arm's own reader gives it.

The screenshot: the `screenshots` fixture (tests/README.md)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import MEPage, require_chromium, served_app
from tests.support.examples import example

pytestmark = pytest.mark.slow

require_chromium()

WIDE = "wide_scratch_ethosu55"


@pytest.fixture(scope="module")
def me() -> Iterator[MEPage]:
    with served_app(example(WIDE)) as app, app.page() as page:
        yield page


def test_graph_info_has_the_deployment_memory_line(me: MEPage, screenshots: Path) -> None:
    from executorch.backends.arm.scripts.get_ethosu_scratch_from_pte import get_scratch_from_pte

    with contextlib.redirect_stdout(io.StringIO()):
        scratch = get_scratch_from_pte(str(example(WIDE)))
    assert scratch is not None
    me.page.screenshot(path=str(screenshots / "graph_info_fit.png"))
    assert me.graph_title() == "forward"
    line = me.panel("Graph info")["deployment_memory"]
    assert line.startswith(f"SRAM {scratch / 1024**2:.2f} MiB, DRAM ")
    assert f"temp allocator {scratch / 1024**2:.2f} MiB" in line
    assert line.endswith("(pte-adapter fit)")
