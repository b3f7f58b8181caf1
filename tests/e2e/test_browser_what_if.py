"""What a fix would buy, on the first screen: the method's Graph info leads with what fixing every
fixable island gives (partitions, calls, NPU time), and an island opens on its own what-if. Read
from the real web app's panel; expected numbers come from the analysis (checked against re-exports
in tests/oracle/test_what_if_pairs.py). Screenshots go to PTE_ADAPTER_SCREENSHOTS when set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.render.names import partition_group_names
from tests.support.browser import (
    KEEP_SINGLE_CHILD_LAYERS,
    MEPage,
    chromium,
    model_explorer_server,
    new_page,
    require_chromium,
)
from tests.support.examples import example

pytestmark = pytest.mark.slow

require_chromium()


def _shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("PTE_ADAPTER_SCREENSHOTS") or tmp_path)


@pytest.mark.parametrize("name", ["mv2_residual_cpu_ethosu85", "mv2_lrn_ethosu85"])
def test_the_first_screen_says_what_the_fix_buys(name: str, tmp_path: Path) -> None:
    ma = pte_adapter.open_analysis(example(name)).methods[0]
    assert ma.what_if is not None and ma.what_if.all is not None
    every = ma.what_if.all
    first = ma.what_if.islands[0]
    assert first.partition is not None
    island = partition_group_names(ma)[first.partition]
    with model_explorer_server(example(name)) as url, chromium() as browser:
        me = MEPage(new_page(browser))
        try:
            me.open(url, {KEEP_SINGLE_CHILD_LAYERS: True})
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
            shown = f"{us / 1000:.4g} ms" if us >= 1000 else f"{us:.4g} us"
            assert info["what_if_all_fixed"].endswith(f"NPU {shown}")
            me.screenshot(_shots(tmp_path) / f"what_if_{name}_first_screen.png")
            me.select_layer(island)
            attrs = me.panel("Layer attributes")
            assert list(attrs)[:3] == ["what_if", "what_if_fix", "what_if_detail"]
            assert attrs["what_if_fix"].startswith(f"{first.fix}: ")
            assert attrs["what_if"].startswith(f"{first.npu_partitions_after} partition")
            me.screenshot(_shots(tmp_path) / f"what_if_{name}_island.png")
            assert not me.console_errors, me.console_errors
        finally:
            me.page.context.close()
