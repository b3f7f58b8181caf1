"""The deployment facts in the real Model Explorer: the Graph info of the method the runner loads
shows `deployment_memory`, with the NPU scratch as Arm's own reader gives it, and what the method
needs from a runtime (`runtime_needs`), whose kernel keys, on each kernel node's panel, are
ExecuTorch's `gen_oplist`'s (docs/deploy.md).

The screenshots: the `screenshots` fixture (tests/README.md)."""

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
    assert line.startswith(f"SRAM {scratch / 1024**2:.1f} MiB, DRAM ")
    assert f"temp allocator {scratch / 1024**2:.1f} MiB" in line
    assert line.endswith("(pte-adapter fit)")


def test_graph_info_counts_what_a_runtime_needs_and_a_node_shows_its_key(
    me: MEPage, screenshots: Path, tmp_path: Path
) -> None:
    import yaml
    from executorch.codegen.tools.gen_oplist import gen_oplist

    from pte_adapter.api import open_analysis

    out = tmp_path / "selected_operators.yaml"
    with contextlib.redirect_stdout(io.StringIO()):
        gen_oplist(output_path=out, model_file_path=str(example(WIDE)))
    keys: dict[str, list[str]] = yaml.safe_load(out.read_text())["et_kernel_metadata"]
    n_keys = sum(len(v) for v in keys.values())
    assert me.panel("Graph info")["runtime_needs"] == (
        f"{len(keys)} CPU kernels ({n_keys} kernel keys), 1 backend (EthosUBackend) "
        "(pte-adapter ops)"
    )
    ma = open_analysis(example(WIDE), profile=False).methods[0]
    for index in ma.kernel_keys:
        me.select_node(ma.instruction_ids[index])
        shown = me.panel("Attributes")["kernel_key"]
        assert shown.split(" ", 1)[0] in keys[ma.method.kernel_operator(index)], shown
    me.page.screenshot(path=str(screenshots / "kernel_key.png"))
