"""Drive the real Model Explorer web app in Debian's headless Chromium.

Shared by tests/e2e/test_browser*.py, scripts/make_readme_images.py and benchmarks/bench_browser.py.
Everything here starts its own processes in their own process groups and stops exactly those
groups, nothing else:

- `model_explorer_server()` (from tests/support/server.py, re-exported here): Model Explorer on a
  free port, yielding the URL it prints;
- `chromium()`: the system Chromium (never a downloaded one) with a fresh profile, driven by
  Playwright over the DevTools protocol;
- `served_app()`: the two together, as a browser test module starts them once, and `App.page()`,
  a tab on them closed after use;
- `MEPage`: what a user does and sees — pick a graph, wait until it is drawn, type in the search box
  and read the result list (labels are drawn in WebGL, so the search results are the DOM view of
  them), select a node and read the side panel, click a node's subgraph indicator, count the
  canvas's non-background pixels.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

# The server is started by tests/support/server.py; re-exported for the browser tests and scripts.
from tests.support.server import ProcessOutput, stop_group
from tests.support.server import free_port as free_port
from tests.support.server import model_explorer_exe as model_explorer_exe
from tests.support.server import model_explorer_server as model_explorer_server
from tests.support.server import model_url as model_url

# Debian's package installs the real binary here; /usr/bin/chromium is a shell wrapper.
CHROMIUM_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)
VIEWPORT = {"width": 1600, "height": 1000}
# The one environment variable that keeps the browser tests' screenshots (screenshot_folder()).
SCREENSHOTS_VARIABLE = "PTE_ADAPTER_SCREENSHOTS"
# Model Explorer's id of a layer is its namespace with this suffix.
LAYER_ID_SUFFIX = "___group___"

# Model Explorer's own settings store (localStorage) and the setting that keeps a layer whose only
# child is one op node (off by default: such layers are dissolved into their parent).
ME_SETTINGS_KEY = "model_explorer_settings"
KEEP_SINGLE_CHILD_LAYERS = "keep_layers_with_a_single_child"
# Draws the edges between an op node inside an open layer and nodes outside it (by default Model
# Explorer draws them only for the selected node, and ends the others at the layer's border).
SHOW_OUT_OF_LAYER_EDGES = "show_op_node_out_of_layer_edges_without_selecting"


def find_chromium() -> str:
    override = os.environ.get("PTE_ADAPTER_CHROMIUM")
    for candidate in (override,) if override else CHROMIUM_CANDIDATES:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no Chromium found (apt-get install chromium; or set PTE_ADAPTER_CHROMIUM)")


def require_chromium() -> None:
    """Call at a browser test module's top: without Debian's Chromium a developer's run skips the
    module with the reason; CI (which installs it) never skips: CI=true turns a missing browser into
    a failure."""
    import pytest

    try:
        find_chromium()
    except RuntimeError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{e}; CI runs these tests", allow_module_level=True)


@contextlib.contextmanager
def chromium(timeout: float = 60) -> Iterator[Browser]:
    """Debian's Chromium, headless with a fresh profile, connected to Playwright over CDP."""
    exe = find_chromium()
    with tempfile.TemporaryDirectory(prefix="pte-adapter-chromium-") as profile:
        proc = subprocess.Popen(
            [
                exe,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out = ProcessOutput(proc.stderr)
        try:
            ws = out.wait_for(r"DevTools listening on (ws://\S+)", proc, timeout).group(1)
            with sync_playwright() as pw:
                browser = pw.chromium.connect_over_cdp(ws)
                try:
                    yield browser
                finally:
                    browser.close()
        finally:
            stop_group(proc)


def new_page(browser: Browser, scale: float = 1, viewport: dict[str, int] | None = None) -> Page:
    context = browser.new_context(
        viewport=viewport or VIEWPORT,  # type: ignore[arg-type]
        device_scale_factor=scale,
    )
    context.set_default_timeout(60_000)
    return context.new_page()


@dataclass(frozen=True)
class App:
    """Model Explorer serving some models, and a headless Chromium to open it in: what a browser
    test module starts once (`served_app()` in a module-scoped fixture) and opens tabs on."""

    url: str  # the URL the server printed: it opens the first model it was given
    browser: Browser

    def model_url(self, model: Path) -> str:
        """The URL that opens `model` (one of the served models) on this server."""
        return model_url(self.url, model)

    @contextlib.contextmanager
    def tab(self) -> Iterator[MEPage]:
        """A fresh tab in its own browser context, not yet opened on anything; closed afterwards
        (for a test that watches the page before it loads, or expects no graph)."""
        me = MEPage(new_page(self.browser))
        try:
            yield me
        finally:
            me.page.context.close()

    @contextlib.contextmanager
    def page(
        self,
        model: Path | None = None,
        settings: dict[str, bool] | None = None,
        url: str | None = None,
    ) -> Iterator[MEPage]:
        """A fresh tab opened on `url`, else on the URL that opens `model`, else on the server's
        own, and drawn (`MEPage.open`, with its Advanced `settings`); closed afterwards."""
        with self.tab() as me:
            me.open(url or (self.model_url(model) if model else self.url), settings)
            yield me


@contextlib.contextmanager
def served_app(*models: Path, extension: bool = True) -> Iterator[App]:
    """`model_explorer_server(*models)` and `chromium()` together, stopped together."""
    with model_explorer_server(*models, extension=extension) as url, chromium() as browser:
        yield App(url, browser)


def with_node_data(url: str, node_data: Path) -> str:
    """The app URL Model Explorer printed, plus a node data file (as `--node_data_paths` adds
    it): the model opens with that overlay applied."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query)
    data = json.loads(query["data"][0])
    data["nodeData"] = [str(node_data.resolve())]
    data["nodeDataTargets"] = [""]
    query["data"] = [json.dumps(data)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, doseq=True)))


def screenshot_folder(test_module: str, fallback: Path) -> Path:
    """Where a browser test saves its screenshots: `$PTE_ADAPTER_SCREENSHOTS/<test module>/` when
    that variable is set (to keep them and look at them), else `fallback` (the test's own
    temporary folder)."""
    chosen = os.environ.get(SCREENSHOTS_VARIABLE)
    if not chosen:
        return fallback
    folder = Path(chosen) / test_module.rsplit(".", 1)[-1]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def layer_node_id(name: str) -> str:
    """The node id Model Explorer gives the layer (group) whose namespace is `name`."""
    return f"{name}{LAYER_ID_SUFFIX}"


# -- what a user sees ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    """One row of Model Explorer's search result list."""

    node_id: str  # op node id, or "<namespace>___group___" for a layer
    label: str
    match_types: tuple[str, ...]  # "label", "attrs", "inputs", "outputs"

    @property
    def is_layer(self) -> bool:
        return self.node_id.endswith(LAYER_ID_SUFFIX)


@dataclass(frozen=True)
class Ink:
    """Pixels of a capture that differ from its dominant (background) colour."""

    ink: int
    total: int
    background: tuple[int, int, int]
    colours: dict[str, int]  # requested "#rrggbb" -> number of pixels of (nearly) that colour

    @property
    def fraction(self) -> float:
        return self.ink / self.total if self.total else 0.0


_MATCH_ICONS = {"title": "label", "list": "attrs", "input": "inputs", "output": "outputs"}

# Decodes a PNG in the page (no imaging library needed on the Python side) and counts pixels.
_INK_JS = """async ([b64, wanted]) => {
  const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  const bmp = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
  const cv = new OffscreenCanvas(bmp.width, bmp.height);
  const ctx = cv.getContext('2d');
  ctx.drawImage(bmp, 0, 0);
  const d = ctx.getImageData(0, 0, bmp.width, bmp.height).data;
  const hist = new Map();
  for (let i = 0; i < d.length; i += 4) {
    const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
    hist.set(k, (hist.get(k) || 0) + 1);
  }
  let bg = 0, best = -1;
  for (const [k, n] of hist) if (n > best) { best = n; bg = k; }
  const near = (k, r, g, b, tol) => Math.abs(((k >> 16) & 255) - r) <= tol &&
      Math.abs(((k >> 8) & 255) - g) <= tol && Math.abs((k & 255) - b) <= tol;
  const br = (bg >> 16) & 255, bgg = (bg >> 8) & 255, bb = bg & 255;
  let ink = 0;
  const colours = {};
  for (const w of wanted) colours[w] = 0;
  for (const [k, n] of hist) {
    if (!near(k, br, bgg, bb, 8)) ink += n;
    for (const w of wanted) {
      const r = parseInt(w.slice(1, 3), 16), g = parseInt(w.slice(3, 5), 16), b = parseInt(w.slice(5, 7), 16);
      if (near(k, r, g, b, 3)) colours[w] += n;
    }
  }
  return {ink, total: bmp.width * bmp.height, background: [br, bgg, bb], colours};
}"""

_SEARCH_HITS_JS = """() => Array.from(document.querySelectorAll(
    'search-bar .search-results-container mat-tree-node[data-id]')).map(n => {
  const lab = n.querySelector('.node-label') || n.querySelector('.label');
  let text = '';
  if (lab) for (const c of lab.childNodes) if (c.nodeType === Node.TEXT_NODE) text += c.textContent;
  if (!text.trim() && lab) text = lab.textContent;
  const icons = Array.from(n.querySelectorAll('.match-types-container mat-icon'))
      .map(i => i.textContent.trim());
  return {id: n.getAttribute('data-id'), label: text.trim(), icons};
})"""

# Screen position (page coordinates) of a node's subgraph indicator, from the renderer's own
# layout (Model Explorer registers its renderers on window.me_test for exactly this kind of test).
_INDICATOR_JS = """(nodeId) => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  if (!r) return null;
  const rect = (r.subgraphIndicatorBgs.curRectangles || []).find(x => x.id === nodeId);
  if (!rect) return null;
  const b = rect.bound;
  const box = r.container.nativeElement.getBoundingClientRect();
  // Candidate points: the bound read as a centre, and as a top-left corner.
  return [[b.x, b.y], [b.x + b.width / 2, b.y + b.height / 2]].map(([x, y]) => {
    const p = r.webglRendererThreejsService.convertScenePosToScreen(x, y);
    return {x: box.left + p.x, y: box.top + p.y,
            inside: p.x >= 0 && p.y >= 0 && p.x <= box.width && p.y <= box.height};
  });
}"""

# Screen position of a layer's expand/collapse icon, which Model Explorer draws at the left of the
# layer's label in its top-left corner.
_LAYER_ICON_JS = """(groupId) => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  const n = r && r.curModelGraph.nodesById[groupId];
  if (!n || !r.nodesToRender.some(x => x.node.id === groupId)) return null;
  const box = r.container.nativeElement.getBoundingClientRect();
  const p = r.webglRendererThreejsService.convertScenePosToScreen(
      (n.globalX || 0) + (n.x || 0) + 12, (n.globalY || 0) + (n.y || 0) + 7);
  return {x: box.left + p.x, y: box.top + p.y};
}"""

# Screen position of the centre of a drawn node.
_NODE_CENTRE_JS = """(nodeId) => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  const n = r && r.curModelGraph.nodesById[nodeId];
  if (!n || !r.nodesToRender.some(x => x.node.id === nodeId)) return null;
  const box = r.container.nativeElement.getBoundingClientRect();
  const p = r.webglRendererThreejsService.convertScenePosToScreen(
      (n.globalX || 0) + (n.x || 0) + (n.width || 0) / 2,
      (n.globalY || 0) + (n.y || 0) + (n.height || 0) / 2);
  return {x: box.left + p.x, y: box.top + p.y};
}"""

# The rows of one section of the side panel ("Graph info", "Node info", "Attributes"): key -> the
# value's full text (multi-line values keep their lines).
_PANEL_JS = """(title) => {
  const out = {};
  for (const section of document.querySelectorAll('.section')) {
    const header = section.querySelector('.header');
    // The header's own text, without its collapse button's icon name.
    const text = header ? [...header.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
        .map(n => n.textContent).join('').trim() : '';
    if (text.toLowerCase() !== title.toLowerCase()) continue;
    for (const row of section.querySelectorAll('table.metadata-table tr')) {
      const key = row.querySelector('td.key');
      const value = row.querySelector('td.value .expanded-text');
      if (key && value) out[key.textContent.trim()] = value.textContent.trim();
    }
  }
  return out;
}"""

# The side panel's Inputs section: per input (one per incoming edge), its source's label and the
# metadata rows Model Explorer lists for it.
_INPUTS_PANEL_JS = """() => {
  const section = document.querySelector('.section.inputs');
  if (!section) return [];
  return [...section.querySelectorAll('.flat-item')].map(item => {
    const rows = {};
    for (const row of item.querySelectorAll('table.metadata-table tr')) {
      const key = row.querySelector('td.key .bubble');  // without the bullet icon's name
      const value = row.querySelector('td.value .expanded-text');
      if (key && value) rows[key.textContent.trim()] = value.textContent.trim();
    }
    const name = item.querySelector('.name');  // its own text, without the icons' names
    const source = name ? [...name.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
        .map(n => n.textContent).join('').trim() : '';
    return {source, rows};
  });
}"""

# Points inside each given layer's box (page coordinates), away from its label at the top: where
# its fill colour shows. From the renderer's own layout, like the layer icon above.
_LAYER_FILL_POINTS_JS = """([ids, fractions]) => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  const box = r.container.nativeElement.getBoundingClientRect();
  const out = {};
  for (const id of ids) {
    const n = r.curModelGraph.nodesById[id];
    if (!n || !r.nodesToRender.some(x => x.node.id === id)) { out[id] = null; continue; }
    const x0 = (n.globalX || 0) + (n.x || 0), y0 = (n.globalY || 0) + (n.y || 0);
    out[id] = fractions.map(([fx, fy]) => {
      const p = r.webglRendererThreejsService.convertScenePosToScreen(
          x0 + (n.width || 0) * fx, y0 + (n.height || 0) * fy);
      return [box.left + p.x, box.top + p.y];
    });
  }
  return out;
}"""

# The colour of a capture at the given points (capture pixel coordinates).
_PIXELS_JS = """async ([b64, points]) => {
  const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  const bmp = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
  const cv = new OffscreenCanvas(bmp.width, bmp.height);
  const ctx = cv.getContext('2d');
  ctx.drawImage(bmp, 0, 0);
  return points.map(([x, y]) => {
    const d = ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data;
    return '#' + [d[0], d[1], d[2]].map(v => v.toString(16).padStart(2, '0')).join('');
  });
}"""

_HOVERED_INDICATOR_JS = """() => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  return r ? r.hoveredSubgraphIndicatorId : null;
}"""


class MEPage:
    """One Model Explorer tab, operated through the UI the way a user would."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console_errors: list[str] = []
        # Model Explorer's web app asks for resources on the internet (none is reachable here):
        # a name that does not resolve is never our server (localhost), so it is kept apart.
        self.offline_misses: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.console_errors.append(str(e)))

    def _on_console(self, message: Any) -> None:
        if message.type != "error":
            return
        if "net::ERR_NAME_NOT_RESOLVED" in message.text:
            self.offline_misses.append(message.text)
        else:
            self.console_errors.append(message.text)

    # navigation and settings

    def open(self, url: str, settings: dict[str, bool] | None = None) -> None:
        """Load the app; `settings` are Model Explorer's Advanced settings, stored as a user would."""
        if settings is not None:
            # Written before the app's own scripts run, as if saved in an earlier session.
            self.page.add_init_script(
                f"localStorage.setItem({json.dumps(ME_SETTINGS_KEY)}, {json.dumps(json.dumps(settings))});"
            )
        self.page.goto(url)
        self.wait_drawn()

    def graph_title(self) -> str:
        return self.page.locator("graph-selector .option-label").first.inner_text().strip()

    def node_count(self) -> int:
        text = self.page.locator("graph-selector .node-count-label").first.inner_text()
        m = re.search(r"(\d+)\s+nodes?", text)
        if not m:
            raise AssertionError(f"no node count in the graph selector: {text!r}")
        return int(m.group(1))

    def graph_choices(self) -> dict[str, int]:
        """The graph selector's list: graph id -> node count."""
        self.page.locator("graph-selector .graph-selector-label").click()
        items = self.page.locator(".graph-item")
        items.first.wait_for()
        out: dict[str, int] = {}
        for i in range(items.count()):
            label = items.nth(i).locator(".graph-label").inner_text().strip()
            count = items.nth(i).locator(".node-count-label").inner_text()
            m = re.search(r"\d+", count)
            out[label] = int(m.group(0)) if m else -1
        self._close_overlay()
        return out

    def _close_overlay(self) -> None:
        backdrop = self.page.locator(".cdk-overlay-backdrop")
        if backdrop.count():
            backdrop.first.click()
            backdrop.first.wait_for(state="detached")

    def select_graph(self, graph_id: str) -> None:
        self.page.locator("graph-selector .graph-selector-label").click()
        item = self.page.locator(
            ".graph-item .graph-label", has_text=re.compile(rf"^\s*{re.escape(graph_id)}\s*$")
        )
        item.first.click()
        self.page.locator(
            "graph-selector .option-label", has_text=re.compile(rf"^\s*{re.escape(graph_id)}\s*$")
        ).wait_for()
        self.wait_drawn()

    # drawing

    def renderer(self) -> Any:
        return self.page.locator("webgl-renderer").first

    def capture(self) -> bytes:
        png: bytes = self.renderer().screenshot(animations="disabled", caret="hide")
        return png

    def wait_drawn(self, timeout: float = 90) -> bytes:
        """Graph canvas present, node count shown, no "Processing" overlay, and two captures a
        moment apart identical. Returns the last capture."""
        deadline = time.monotonic() + timeout
        page = self.page
        page.locator("webgl-renderer canvas").first.wait_for(
            state="visible", timeout=timeout * 1000
        )
        page.locator(
            "graph-selector .node-count-label", has_text=re.compile(r"\d+\s+nodes?")
        ).first.wait_for(timeout=timeout * 1000)
        processing = page.get_by_text(re.compile(r"Processing"))
        previous: bytes | None = None
        while True:
            busy = any(processing.nth(i).is_visible() for i in range(processing.count()))
            if not busy:
                shot = self.capture()
                if shot == previous:
                    return shot
                previous = shot
            else:
                previous = None
            if time.monotonic() > deadline:
                raise AssertionError("the graph did not settle (still processing or animating)")
            page.wait_for_timeout(400)

    def ink(self, png: bytes | None = None, colours: tuple[str, ...] = ()) -> Ink:
        data = png if png is not None else self.capture()
        r = self.page.evaluate(_INK_JS, [base64.b64encode(data).decode(), list(colours)])
        return Ink(
            ink=int(r["ink"]),
            total=int(r["total"]),
            background=(int(r["background"][0]), int(r["background"][1]), int(r["background"][2])),
            colours={k: int(v) for k, v in r["colours"].items()},
        )

    def layer_fills(self, group_ids: list[str]) -> dict[str, str | None]:
        """The colour each drawn layer is filled with ("#rrggbb": the most common of three points
        inside its box, below its label); None for a layer that is not drawn."""
        found = self._layer_colours(group_ids, [[0.12, 0.8], [0.5, 0.85], [0.88, 0.8]])
        return {g: max(set(c), key=c.count) if c else None for g, c in found.items()}

    def layer_bars(self, group_ids: list[str], points: int = 25) -> dict[str, list[str] | None]:
        """The colours along the bar Model Explorer draws at the bottom of each drawn layer when
        node data is shown (the colours of the op nodes inside it, one segment per colour, widths
        by count): `points` evenly spaced across its middle (90% of the layer's height), its ends
        left out; None for a layer that is not drawn. A segment's edge is blended."""
        fractions = [[0.04 + 0.92 * k / (points - 1), 0.9] for k in range(points)]
        return self._layer_colours(group_ids, fractions)

    def _layer_colours(
        self, group_ids: list[str], fractions: list[list[float]]
    ) -> dict[str, list[str] | None]:
        # A layer under the mouse (where the last click left it) is drawn a shade darker: move
        # the mouse off the graph and let two frames render before reading colours.
        self.page.mouse.move(0, 0)
        self.page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        points = self.page.evaluate(_LAYER_FILL_POINTS_JS, [group_ids, fractions])
        origin = self.renderer().bounding_box()
        assert origin is not None
        shot = base64.b64encode(self.capture()).decode()
        out: dict[str, list[str] | None] = {}
        for gid, pts in points.items():
            local = [[x - origin["x"], y - origin["y"]] for x, y in pts] if pts else None
            out[gid] = self.page.evaluate(_PIXELS_JS, [shot, local]) if local else None
        return out

    def wait_fill(self, node_id: str, colour: str, timeout: float = 30) -> str | None:
        """The node's fill (the commonest colour of 12 points well inside it, clear of a selected
        border at any zoom) read until it is `colour` or `timeout` passes (centring animates)."""
        deadline = time.monotonic() + timeout
        inside = [[fx, fy] for fx in (0.25, 0.4, 0.6, 0.75) for fy in (0.3, 0.5, 0.7)]
        while True:
            found = self._layer_colours([node_id], inside)[node_id]
            fill = max(set(found), key=found.count) if found else None
            if fill == colour or time.monotonic() > deadline:
                return fill
            self.page.wait_for_timeout(400)

    # search

    def search(self, regex: str, timeout: float = 30) -> list[SearchHit]:
        """The rows Model Explorer lists for `regex`. Every caller expects a match, so the list is
        waited for generously (on a loaded machine it takes seconds to appear); no list by then
        means nothing matched."""
        box = self.page.locator("search-bar input").first
        title = self.page.locator("search-bar .search-results-container .title-label").first
        box.fill("")
        # An empty query hides the list. Wait for that, or on a loaded machine the previous
        # query's list (its title and rows) can still be on screen and be read as this one's.
        title.wait_for(state="hidden", timeout=timeout * 1000)
        box.fill(regex)
        try:
            title.wait_for(timeout=timeout * 1000)
        except PlaywrightTimeoutError:
            return []  # Model Explorer shows no result list when nothing matches
        # The title is drawn before the rows: wait until as many rows as it announces are there.
        m = re.search(r"(\d+)\s+results?", title.inner_text())
        announced = int(m.group(1)) if m else None
        if announced is not None:
            self.page.wait_for_function(
                "([sel, n]) => document.querySelectorAll(sel).length === n",
                arg=["search-bar .search-results-container mat-tree-node[data-id]", announced],
                timeout=15_000,
            )
        rows: list[dict[str, Any]] = self.page.evaluate(_SEARCH_HITS_JS)
        hits = [
            SearchHit(
                str(r["id"]), str(r["label"]), tuple(_MATCH_ICONS.get(i, i) for i in r["icons"])
            )
            for r in rows
        ]
        if announced is not None and announced != len(hits):
            raise AssertionError(f"search says {announced} results but lists {len(hits)} rows")
        return hits

    def clear_search(self) -> None:
        box = self.page.locator("search-bar input").first
        box.fill("")
        box.press("Escape")
        size = self.page.viewport_size or VIEWPORT
        self.page.mouse.click(5, size["height"] - 5)  # a click on empty canvas closes the list
        self.page.wait_for_timeout(200)

    def locate(self, node_id: str, regex: str) -> None:
        """Search, then click the node's row: Model Explorer centres the graph on it."""
        self.search(regex)
        self.page.locator(f'search-bar mat-tree-node[data-id="{node_id}"]').first.click()
        self.clear_search()
        self.wait_drawn()

    # text drawn in WebGL

    def drawable_chars(self) -> set[str]:
        """Characters Model Explorer's WebGL font atlas has (others are drawn as "?")."""
        chars: list[int] = self.page.evaluate(
            "async () => (await (await fetch('static_files/FontRegular.json')).json())"
            ".chars.map(c => c.id)"
        )
        return {chr(c) for c in chars}

    def drawn_labels(self) -> list[str]:
        """Labels of the op and layer nodes of the graph the renderer currently shows."""
        labels: list[str] = self.page.evaluate(
            "() => window.me_test.renderers[0].curModelGraph.nodes.map(n => n.label)"
        )
        return labels

    # toolbar

    def toolbar(self, icon: str) -> None:
        """Click a graph toolbar button by its Material icon name (e.g. "unfold_more_double")."""
        self.page.locator(
            "renderer-wrapper .toolbar mat-icon", has_text=re.compile(rf"^\s*{icon}\s*$")
        ).first.click()
        self.wait_drawn()

    def zoom_out(self, clicks: int = 1, delta: float = 35) -> None:
        """Ctrl+scroll over the middle of the graph, as a user zooms out a notch."""
        box = self.renderer().bounding_box()
        assert box is not None
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        self.page.keyboard.down("Control")
        for _ in range(clicks):
            self.page.mouse.wheel(0, delta)
            self.page.wait_for_timeout(100)
        self.page.keyboard.up("Control")
        self.wait_drawn()

    def expand_all(self) -> None:
        self.toolbar("unfold_more_double")

    def visible_nodes(self) -> dict[str, str]:
        """Node id -> label of every op and layer node the renderer draws now."""
        nodes: dict[str, str] = self.page.evaluate(
            "() => Object.fromEntries(window.me_test.renderers[0].nodesToRender"
            ".map(x => [x.node.id, x.node.label]))"
        )
        return nodes

    def visible_edges(self) -> set[tuple[str, str]]:
        """(from node id, to node id) of every edge the renderer draws now."""
        edges: list[list[str]] = self.page.evaluate(
            "() => window.me_test.renderers[0].edgesToRender"
            ".map(x => [x.edge.fromNodeId, x.edge.toNodeId])"
        )
        return {(a, b) for a, b in edges}

    def expand_layer(self, name: str) -> None:
        """Click the expand icon of the top-level layer `name`, as a user opens one partition, and
        wait until its children are drawn."""
        group = layer_node_id(name)
        point = self.page.evaluate(_LAYER_ICON_JS, group)
        if point is None:
            raise AssertionError(f"layer {name!r} is not drawn")
        self.page.mouse.click(point["x"], point["y"])
        self.page.wait_for_function(
            """(g) => { const r = window.me_test.renderers[0];
                        const n = r.curModelGraph.nodesById[g];
                        return n && n.expanded && r.nodesToRender.some(
                          x => (n.nsChildrenIds || []).includes(x.node.id)); }""",
            arg=group,
            timeout=60_000,
        )
        self.wait_drawn()

    # the side panel

    def select_node(self, node_id: str) -> None:
        """Click a drawn node, as a user selects it; wait until the panel shows it."""
        point = self.page.evaluate(_NODE_CENTRE_JS, node_id)
        if point is None:
            raise AssertionError(f"node {node_id} is not drawn")
        self.page.mouse.click(point["x"], point["y"])
        self.page.wait_for_function(
            f"(id) => ({_PANEL_JS})('Node info').id === id", arg=node_id, timeout=60_000
        )

    def select_layer(self, name: str) -> None:
        """Click a drawn layer (a group box), as a user selects it; wait until the panel's
        Layer info names it."""
        node_id = layer_node_id(name)
        point = self.page.evaluate(_NODE_CENTRE_JS, node_id)
        if point is None:
            raise AssertionError(f"layer {name} is not drawn")
        self.page.mouse.click(point["x"], point["y"])
        self.page.wait_for_function(  # the panel's texts are read trimmed
            f"(name) => ({_PANEL_JS})('Layer info').name === name", arg=name.strip(), timeout=60_000
        )

    def panel(self, section: str) -> dict[str, str]:
        """The rows of a side-panel section ("Graph info", "Node info", "Attributes")."""
        rows: dict[str, str] = self.page.evaluate(_PANEL_JS, section)
        return rows

    def inputs(self) -> list[tuple[str, dict[str, str]]]:
        """The selected node's inputs as the panel lists them: (source label, metadata rows)."""
        items: list[dict[str, Any]] = self.page.evaluate(_INPUTS_PANEL_JS)
        return [(str(i["source"]), dict(i["rows"])) for i in items]

    # subgraphs

    def open_subgraph(self, node_id: str, subgraph_id: str) -> None:
        """Click `node_id`'s subgraph indicator (the ↳ badge) and, if the node has several
        subgraphs, pick `subgraph_id` from the menu that opens."""
        points = self.page.evaluate(_INDICATOR_JS, node_id)
        if not points:
            raise AssertionError(f"node {node_id} has no subgraph indicator in the drawn graph")
        for point in points:
            if not point["inside"]:
                continue
            x, y = float(point["x"]), float(point["y"])
            self.page.mouse.move(x - 30, y)
            self.page.mouse.move(x, y, steps=5)
            self.page.wait_for_timeout(150)
            if self.page.evaluate(_HOVERED_INDICATOR_JS) == node_id:
                break
        else:
            raise AssertionError(
                f"the subgraph indicator of {node_id} is not under the mouse at {points}"
            )
        self.page.mouse.click(x, y)
        menu_item = self.page.locator(
            ".subgraph-menu .model-explorer-menu-item-with-icon", has_text=subgraph_id
        )
        with contextlib.suppress(Exception):
            menu_item.first.wait_for(timeout=3000)
        if menu_item.count():
            menu_item.first.click()
        self.page.locator(
            "graph-selector .option-label",
            has_text=re.compile(rf"^\s*{re.escape(subgraph_id)}\s*$"),
        ).wait_for()
        self.wait_drawn()

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        """The whole tab, with the mouse parked where it opens no tooltip."""
        size = self.page.viewport_size or VIEWPORT
        self.page.mouse.move(size["width"] // 2, size["height"] - 2)
        self.page.wait_for_timeout(600)  # tooltips fade out
        self.wait_drawn()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(
            path=str(path), full_page=full_page, animations="disabled", caret="hide"
        )


def text_to_png(browser: Browser, text: str, path: Path, title: str = "") -> None:
    """Render terminal output as a PNG (a <pre> page screenshotted by the same browser)."""
    import html

    page = browser.new_context(
        viewport={"width": 800, "height": 200}, device_scale_factor=1
    ).new_page()
    try:
        heading = f"<div class='cmd'>$ {html.escape(title)}</div>" if title else ""
        page.set_content(
            "<!doctype html><html><head><meta charset='utf-8'><style>"
            "body{margin:0;background:#1e1e1e;display:inline-block}"
            "#t{padding:18px 22px;font:14px/1.45 'DejaVu Sans Mono','Liberation Mono',monospace;"
            "color:#e6e6e6;white-space:pre;display:inline-block}"
            ".cmd{color:#8ae234;margin-bottom:6px}"
            "</style></head><body><div id='t'>"
            + heading
            + html.escape(text.rstrip("\n"))
            + "</div></body></html>"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        page.locator("#t").screenshot(path=str(path))
    finally:
        page.context.close()
