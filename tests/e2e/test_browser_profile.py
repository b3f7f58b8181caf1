"""The measured-time overlay as a user sees it: real Model Explorer in headless Chromium.

`pte-adapter profile --node-data` writes Model Explorer node data for the XNNPACK MobileNetV2 and
its real ETDump; Model Explorer opens the `.pte` with that node data (what "Add per-node data" or
`--node_data_paths` does), and the test checks what a user would: the XNNPACK operations drawn
inside the partition's group are painted in the overlay's gradient (its top colour is not in the
renderer's palette, so it can only come from the node data), the side panel's largest value is
Inspector's, and the group and the delegate call carry their measured time. Expected
values come from ExecuTorch's Inspector over the same `.etdp`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

import numpy as np
import pytest

import pte_adapter
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.cli import main as cli_main
from pte_adapter.render.node_data import GRADIENT
from tests.support.browser import (
    MEPage,
    layer_node_id,
    require_chromium,
    served_app,
    with_node_data,
)
from tests.support.examples import example
from tests.support.groups import group_names
from tests.support.profiles import inspector, node_ids

pytestmark = pytest.mark.slow

EXAMPLE = "mv2_xnnpack_int8"
LOW, HIGH = GRADIENT[0]["bgColor"], GRADIENT[-1]["bgColor"]


require_chromium()


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MEPage]:
    pte = example(EXAMPLE)
    node_data = tmp_path_factory.mktemp("overlay") / "nd.json"
    assert cli_main(["profile", str(pte), "--node-data", str(node_data), "--json"]) == 0
    with served_app(pte) as app, app.page(url=with_node_data(app.url, node_data)) as me:
        yield me


@cache
def _events() -> dict[str, list[float]]:
    ins = inspector(example(EXAMPLE).with_suffix(".etdp"))
    return {
        e.name: list(e.perf_data.raw)
        for b in ins.event_blocks
        for e in b.events
        if e.perf_data is not None and (e.is_delegated_op or e.name == "DELEGATE_CALL")
    }


def _inspector_events() -> dict[str, list[float]]:
    """Inspector's per-run times of the XNNPACK operators and of DELEGATE_CALL, by event name."""
    return dict(_events())


def _escape(text: str) -> str:
    return "".join("\\" + c if c in r"\.^$*+?{}[]|()" else c for c in text).replace(" ", "\\ ")


def _aggregated_max(me: MEPage) -> float:
    """The "Max" row of the node data panel's aggregated stats, as the side panel shows it."""
    text = me.page.locator("body").inner_text()
    m = re.search(r"Aggregated stats.*?\bMax\s+([0-9.]+)", text, re.S)
    assert m, "no aggregated node data stats in the side panel"
    return float(m.group(1))


def _expected_values() -> list[float]:
    """The overlay's values by Inspector: each XNNPACK operator's median, and the call's median
    time outside its operators (the DelegateCall node; its operators carry the rest)."""
    events = _inspector_events()
    call = events.pop("DELEGATE_CALL")
    outside = [c - sum(v[i] for v in events.values()) for i, c in enumerate(call)]
    return [float(np.median(v)) for v in events.values()] + [float(np.median(outside))]


def test_operations_are_coloured_by_time(overlay: MEPage) -> None:
    me = overlay
    me.select_graph("forward")
    me.expand_all()
    assert "measured time (median ms)" in me.page.locator("body").inner_text()
    slowest = max(_expected_values())
    assert _aggregated_max(me) == pytest.approx(slowest, abs=1e-6)
    # Centre the slowest operation's node (found by its attribute) and read its fill inside its
    # box. (A count of top-colour pixels over the whole capture was flaky: how far Model Explorer
    # zooms when it centres a node depends on when its animation is caught.)
    query = f"^{_escape('measured median')}={_escape(f'{slowest:.3f} ms')}$"
    hits = me.search(query)
    assert hits, query
    # Centred again if the first centring was lost: the expand's own fit to the screen can land
    # after it (the failing screenshot showed the whole graph, the node a few pixels high).
    fill = None
    for _ in range(3):
        me.locate(hits[0].node_id, query)
        fill = me.wait_fill(hits[0].node_id, HIGH, timeout=10)
        if fill == HIGH:
            break
    assert fill == HIGH, f"the slowest node is filled {fill} (None: not drawn), not {HIGH}"


def test_partition_group_carries_its_time(overlay: MEPage) -> None:
    me = overlay
    me.select_graph("forward")
    call = float(np.median(_inspector_events()["DELEGATE_CALL"]))
    (part,) = partition_method(pte_adapter.load(example(EXAMPLE)).methods[0]).partitions
    # The partition's group (a layer, searchable by its group attributes) and the delegate call
    # carry the measured time of the call.
    hits = me.search(f"^{_escape('measured time')}={_escape(f'median {call:.3f} ms')}")
    group = group_names(example(EXAMPLE))["forward"][part.index]
    assert {h.node_id for h in hits} == {layer_node_id(group)}, hits
    hits = me.search(f"^{_escape('measured median')}={_escape(f'{call:.3f} ms')}$")
    assert {h.node_id for h in hits} == {node_ids(example(EXAMPLE))[0]}, hits
    me.clear_search()


def test_graph_info_says_the_runs_over_time(overlay: MEPage) -> None:
    """The method's runs over time (the drift sentence, and the warm-up when there was one) are in
    Graph info as the profile states them."""
    me = overlay
    me.select_graph("forward")
    summary = pte_adapter.open_analysis(example(EXAMPLE)).profile_summary
    assert summary is not None
    (method,) = summary["methods"]
    drift = method["drift"]
    info = me.panel("Graph info")
    assert info["measured drift"] == drift["text"]
    assert ("measured warm-up" in info) == bool(drift["warmup_runs"])
