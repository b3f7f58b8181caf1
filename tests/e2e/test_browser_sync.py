"""The program and its ETRecord side by side in the real Model Explorer (headless Chromium), synced:
`pte_adapter.visualize` opens the `.pte`'s method graph (left) and the ETRecord's exported program
(right) with the sync mapping loaded; selecting a delegate call on the left selects and highlights
on the right every node the partition swallowed, and selecting a node on the right selects what it
ran in on the left. What is expected comes from the mapping (`pte-adapter sync`, checked against
the Inspector in tests/oracle/test_sync_oracle.py), not from the renderer.

Screenshots: the `screenshots` fixture (tests/README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.api import open_analysis
from pte_adapter.explorer.visualize import Visualization
from pte_adapter.render.plan.program import program_plan
from tests.support.browser import MEPage, chromium, new_page, require_chromium
from tests.support.examples import example

pytestmark = pytest.mark.slow

require_chromium()

STEM = "sync_xnnpack"
# The right pane's renderer, what it selected, and what it highlights as related.
_RIGHT_JS = """() => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[1];
  if (!r || !r.curModelGraph) return null;
  const h = r.syncNavigationRelatedNodesHighlights;
  return {graph: r.curModelGraph.id, selected: r.selectedNodeId || '',
          highlighted: h ? Object.keys(h.highlights()) : []};
}"""
_LEFT_SELECTED_JS = "() => window.me_test.renderers[0].selectedNodeId || ''"
# The right pane's canvas on the screen.
_RIGHT_BOX_JS = """() => {
  const b = window.me_test.renderers[1].container.nativeElement.getBoundingClientRect();
  return {x: b.left, y: b.top, w: b.width, h: b.height};
}"""
# Where a drawn node of the right pane is on the screen (null while it is not drawn).
_RIGHT_CENTRE_JS = """(nodeId) => {
  const r = window.me_test.renderers[1];
  const n = r && r.curModelGraph.nodesById[nodeId];
  if (!n || !r.nodesToRender.some(x => x.node.id === nodeId)) return null;
  const box = r.container.nativeElement.getBoundingClientRect();
  const p = r.webglRendererThreejsService.convertScenePosToScreen(
      (n.globalX || 0) + (n.x || 0) + (n.width || 0) / 2,
      (n.globalY || 0) + (n.y || 0) + (n.height || 0) / 2);
  return {x: box.left + p.x, y: box.top + p.y};
}"""


@pytest.fixture(scope="module")
def view() -> Iterator[Visualization]:
    running = pte_adapter.visualize(
        example(STEM), host="127.0.0.1", port=0, open_browser=False, block=False
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def _open(view: Visualization, browser: Any) -> MEPage:
    me = MEPage(new_page(browser))
    me.page.goto(view.url)
    me.page.wait_for_function("() => window.pteAdapterSync !== undefined", timeout=120_000)
    assert me.page.evaluate("() => window.pteAdapterSync") == "loaded"
    me.page.wait_for_function(f"() => ({_RIGHT_JS})() !== null", timeout=120_000)
    me.wait_drawn()
    return me


def _delegate_entry(view: Visualization) -> tuple[str, str, list[str]]:
    """The first delegate call's node id, its partition's group, and its entry's right nodes."""
    result = open_analysis(view.mapping.program, profile=False)
    ma = result.methods[0]
    placement = program_plan(result).methods[ma.name]
    part = next(p for p in ma.partitions.partitions if not p.is_cpu)
    call = placement.instructions[part.instructions[0]]
    entry = next(e for e in view.mapping.document["mappingEntries"] if call in e["leftNodeIds"])
    return call, placement.groups[part.index], entry["rightNodeIds"]


def test_both_graphs_open_with_the_mapping(view: Visualization, browser: Any) -> None:
    me = _open(view, browser)
    try:
        right = me.page.evaluate(_RIGHT_JS)
        assert right["graph"] == view.mapping.right_graph == "exported_program"
        assert me.graph_title() == "forward"
        mode = me.page.evaluate("() => window.me_test.renderers[0].syncNavigationService.mode()")
        assert mode == "from_computer"
        assert not me.console_errors, me.console_errors
    finally:
        me.page.context.close()


def test_a_delegate_call_selects_its_nodes(
    view: Visualization, browser: Any, screenshots: Path
) -> None:
    call, group, nodes = _delegate_entry(view)
    assert len(nodes) > 3
    me = _open(view, browser)
    try:
        me.expand_layer(group)
        me.select_node(call)
        me.page.wait_for_function(
            f"""(nodes) => {{ const r = ({_RIGHT_JS})();
                  return r && nodes.includes(r.selected) && r.highlighted.length > 0; }}""",
            arg=nodes,
            timeout=60_000,
        )
        right = me.page.evaluate(_RIGHT_JS)
        assert right["selected"] == nodes[0]
        assert set(right["highlighted"]) == set(nodes)  # every node the partition swallowed
        me.screenshot(screenshots / "sync_delegate_call.png")
    finally:
        me.page.context.close()


def test_a_node_selects_where_it_ran(view: Visualization, browser: Any, screenshots: Path) -> None:
    """The other way: clicking a node of the model selects its runtime step's first node on the
    left (the node is first revealed as Model Explorer's search reveals one: its layers open)."""
    call, _, nodes = _delegate_entry(view)
    me = _open(view, browser)
    try:
        target = nodes[-1]
        # Revealing a node also selects it (without syncing): a click on the empty canvas clears
        # that, so that the click on the node below is a new selection, as a user's would be.
        me.page.evaluate("(id) => window.me_test.renderers[1].revealNode(id, false)", target)
        point = None
        for _ in range(100):
            point = me.page.evaluate(_RIGHT_CENTRE_JS, target)
            if point is not None:
                break
            me.page.wait_for_timeout(200)
        assert point is not None, f"{target} is not drawn in the right pane"
        me.page.wait_for_timeout(800)  # the zoom onto it settles
        box = me.page.evaluate(_RIGHT_BOX_JS)
        me.page.mouse.click(box["x"] + 8, box["y"] + box["h"] - 8)
        me.page.wait_for_function(f"() => ({_RIGHT_JS})().selected === ''", timeout=10_000)
        point = me.page.evaluate(_RIGHT_CENTRE_JS, target)
        me.page.mouse.click(point["x"], point["y"])
        me.page.wait_for_function(
            f"(id) => ({_LEFT_SELECTED_JS})() === id", arg=call, timeout=60_000
        )
        me.screenshot(screenshots / "sync_node_to_call.png")
    finally:
        me.page.context.close()
