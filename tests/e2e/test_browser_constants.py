"""An LLM export's constant methods in the real Model Explorer (issue 26): the first screen is still
the method with the work, and its graph info lists every constant method with its value; a constant
method's own graph says what it returns, and its Graph Outputs node shows each value. The values
expected are ExecuTorch's deserializer's (tests/support/constants.py), not the renderer's.

Screenshots of what was checked: the `screenshots` fixture (tests/README.md); look at them
after a change to what these graphs show."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import MEPage, require_chromium, served_app
from tests.support.constants import LLM, llm_returns, shown_is
from tests.support.examples import example

pytestmark = pytest.mark.slow


require_chromium()


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    returns = llm_returns()
    assert len(returns) == 14
    return returns


@pytest.fixture(scope="module")
def me() -> Iterator[MEPage]:
    """One tab for the module (opening the program is most of the time): the first test sees the
    first screen, the second picks graphs from there."""
    with served_app(example(LLM)) as app, app.page() as page:
        yield page


def test_the_first_screen_is_forward_with_the_configuration_listed(
    me: MEPage, expected: dict[str, Any], screenshots: Path
) -> None:
    me.page.screenshot(path=str(screenshots / "first_screen.png"))
    assert me.graph_title() == "forward"
    assert "returns" not in me.panel("Graph info")  # forward computes its outputs
    lines = me.panel("Graph info")["constant_methods"].split("\n")
    assert [line.split(" = ", 1)[0] for line in lines] == list(expected)
    for line in lines:
        name, text = line.split(" = ", 1)
        assert shown_is(text, expected[name]), line


def test_a_constant_method_shows_what_it_returns(
    me: MEPage, expected: dict[str, Any], screenshots: Path
) -> None:
    """A list, a float and a small tensor: the graph info says what the method returns (nothing
    selected), the selected Graph Outputs node each value."""
    for method in ("get_eos_ids", "get_logits_scale", "get_kv_cache_scales"):
        me.select_graph(method)
        assert set(me.visible_nodes()) == {"inputs", "outputs"}
        assert shown_is(me.panel("Graph info")["returns"], expected[method])
        me.select_node("outputs")
        me.page.screenshot(path=str(screenshots / f"{method}_outputs.png"))
        attrs = me.panel("Attributes")
        value = expected[method]
        leaves = value if isinstance(value, list) else [value]
        whole = ["returns"] if len(leaves) > 1 else []
        assert list(attrs) == [*whole, *(f"output{i}" for i in range(len(leaves)))], attrs
        assert shown_is(attrs.get("returns", attrs["output0"]), value)
        for i, leaf in enumerate(leaves):
            assert shown_is(attrs[f"output{i}"], leaf), (attrs, leaf)
    assert not [e for e in me.console_errors if "pte" in e.lower() or "graph" in e.lower()]
