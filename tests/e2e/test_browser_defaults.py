"""Defaults said once, in the real Model Explorer (issue 36, docs/model-explorer.md "Defaults, said
once"): the graph info states them; a tensor with the default dim order and a static shape lists
neither; a dynamic shape and a dim order that is not contiguous are listed, named. The program is
`examples/free_call.pte` (`aten::nonzero`: a data-dependent shape); what is expected is
ExecuTorch's deserializer's reading of it, not the renderer's.

Screenshots of what was checked: the `screenshots` fixture (tests/README.md); look at them
after a change to what the panel shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import MEPage, require_chromium, served_app
from tests.support.examples import example, oracle

pytestmark = pytest.mark.slow


require_chromium()

PROGRAM = "free_call"
ISLAND = "CPU island 1 - aten::gt, aten::mul, aten::nonzero +2"


@pytest.fixture(scope="module")
def me() -> Iterator[MEPage]:
    with served_app(example(PROGRAM)) as app, app.page() as page:
        yield page


def _tensor(index: int) -> Any:
    plan: Any = oracle(example(PROGRAM)).program.execution_plan[0]  # type: ignore[attr-defined]
    return plan.values[index].val


def test_the_panel_lists_a_tensors_facts_only_where_they_differ(
    me: MEPage, screenshots: Path
) -> None:
    assert "shape_dynamism: static" in me.panel("Graph info")["defaults_not_shown"]
    me.expand_layer(ISLAND)
    # aten::gt reads the program's input: static, contiguous.
    me.select_node("cpu.0.aten::gt.Scalar_out")
    (_, rows), *_ = me.inputs()
    t = _tensor(int(rows["value_index"]))
    assert t.shape_dynamism.name == "STATIC" and list(t.dim_order) == [0, 1]
    assert "dim_order" not in rows and "shape_dynamism" not in rows, rows
    # The dim-order copy reads aten::nonzero's result: its size is known only when it runs.
    me.select_node("cpu.2.dim_order_ops::_to_dim_order_copy.out")
    me.screenshot(screenshots / "nonzero_result.png")
    (source, rows), *_ = me.inputs()
    assert source == "nonzero", source  # aten::nonzero.out, drawn short
    t = _tensor(int(rows["value_index"]))
    assert rows["shape_dynamism"].startswith(t.shape_dynamism.name.lower() + " ("), rows
    assert t.shape_dynamism.name != "STATIC"
    assert rows["dim_order"] == f"{list(t.dim_order)} (not contiguous)", rows
