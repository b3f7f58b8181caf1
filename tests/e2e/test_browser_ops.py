"""What a program needs from a runtime, in the real Model Explorer: the method's Graph info counts
its CPU kernels, their kernel keys and its backends (`runtime_needs`), and a kernel node's panel
shows its `kernel_key`, which is `gen_oplist`'s key for that call (ExecuTorch's own list of the
program, tests/oracle/test_needs.py).

The screenshot: the `screenshots` fixture (tests/README.md)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pte_adapter.api import open_analysis
from pte_adapter.render.names import partition_group_names
from tests.support.browser import MEPage, require_chromium, served_app
from tests.support.examples import example

pytestmark = pytest.mark.slow

require_chromium()

LRN = "mv2_lrn_ethosu85"


@pytest.fixture(scope="module")
def me() -> Iterator[MEPage]:
    with served_app(example(LRN)) as app, app.page() as page:
        yield page


def _gen_oplist_keys(tmp: Path) -> dict[str, list[str]]:
    from executorch.codegen.tools.gen_oplist import gen_oplist

    out = tmp / "selected_operators.yaml"
    with contextlib.redirect_stdout(io.StringIO()):
        gen_oplist(output_path=out, model_file_path=str(example(LRN)))
    keys: dict[str, list[str]] = yaml.safe_load(out.read_text())["et_kernel_metadata"]
    return keys


def test_graph_info_and_a_kernels_key(me: MEPage, screenshots: Path, tmp_path: Path) -> None:
    keys = _gen_oplist_keys(tmp_path)
    line = me.panel("Graph info")["runtime_needs"]
    n_keys = sum(len(v) for v in keys.values())
    assert (
        line
        == f"{len(keys)} CPU kernels ({n_keys} kernel keys), 1 backend (EthosUBackend) (pte-adapter ops)"
    )
    ma = open_analysis(example(LRN), profile=False).methods[0]
    index = next(
        i for i in ma.kernel_keys if ma.method.kernel_operator(i) == "aten::avg_pool3d.out"
    )
    me.expand_layer(partition_group_names(ma)[ma.partitions.partition_of[index]])
    me.select_node(ma.instruction_ids[index])
    me.screenshot(screenshots / "kernel_key.png")
    shown = me.panel("Attributes")["kernel_key"]
    assert shown.split(" ", 1)[0] in keys["aten::avg_pool3d.out"]
    assert shown.endswith("(float32 ×3)")
