"""What a fix would buy, on the first screen: the method's Graph info leads with what fixing every
fixable island gives (partitions, calls, NPU time), and an island opens on its own what-if. Read
from the real web app's panel; expected numbers come from the analysis (checked against re-exports
in tests/oracle/test_what_if_pairs.py). Screenshots: the `screenshots` fixture (tests/README.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.render.group_facts import partition_group_names
from pte_adapter.wording import us_text
from tests.support.browser import KEEP_SINGLE_CHILD_LAYERS, App, require_chromium, served_app
from tests.support.examples import example

pytestmark = pytest.mark.slow

require_chromium()


NAMES = ["mv2_residual_cpu_ethosu85", "mv2_lrn_ethosu85"]


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    with served_app(*(example(name) for name in NAMES)) as app:
        yield app


@pytest.mark.parametrize("name", NAMES)
def test_the_first_screen_says_what_the_fix_buys(app: App, name: str, screenshots: Path) -> None:
    ma = pte_adapter.open_analysis(example(name)).methods[0]
    assert ma.what_if is not None and ma.what_if.all is not None
    every = ma.what_if.all
    first = ma.what_if.islands[0]
    assert first.partition is not None
    island = partition_group_names(ma)[first.partition]
    with app.page(example(name), {KEEP_SINGLE_CHILD_LAYERS: True}) as me:
        info = me.panel("Graph info")
        # Right under the file and method: the headline, then its detail.
        assert list(info)[:4] == [
            "file",
            "method",
            "what_if_all_fixed",
            "what_if_all_fixed_detail",
        ]
        calls = every.delegate_calls_removed
        assert info["what_if_all_fixed"].startswith(
            f"{every.npu_partitions_after} partition{'s' if every.npu_partitions_after != 1 else ''}, −{calls} call"
        )
        us = every.npu_time_after_us
        assert us is not None
        assert info["what_if_all_fixed"].endswith(f"NPU {us_text(us)}")
        me.screenshot(screenshots / f"what_if_{name}_first_screen.png")
        me.select_layer(island)
        attrs = me.panel("Layer attributes")
        assert list(attrs)[:3] == ["what_if", "what_if_fix", "what_if_detail"]
        assert attrs["what_if_fix"].startswith(f"{first.fix}: ")
        assert attrs["what_if"].startswith(f"{first.npu_partitions_after} partition")
        me.screenshot(screenshots / f"what_if_{name}_island.png")
        assert not me.console_errors, me.console_errors
