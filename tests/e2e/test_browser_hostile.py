"""Nothing a file says is drawn as a link or markup by Model Explorer's web app (issue 33): the
compile specs of a program re-serialised by ExecuTorch's serializer with a markdown link, a bare
URL and a short link as values show as plain text, and a broken file named like an image tag
shows its name in the error popup without the page fetching anything.

What the web app would link is its own rule (`parseUrlInfo`, `linkifyErrorMessage` in its
bundle); this test asks the real app. Screenshots: the `screenshots` fixture (tests/README.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from tests.support.browser import LAYER_ID_SUFFIX, App, MEPage, require_chromium, served_app
from tests.support.groups import group_names
from tests.support.hostile import CASES, LINK_SPECS
from tests.support.hostile_programs import LINK_NAMES

pytestmark = pytest.mark.slow

require_chromium()

EVIL_HOST = "evil.example"

# Per attribute row of the side panel: its key, the value's text and how many links it holds.
_ATTRIBUTE_LINKS_JS = """() => {
  const out = {};
  for (const row of document.querySelectorAll('table.metadata-table tr')) {
    const key = row.querySelector('td.key');
    const value = row.querySelector('td.value');
    const text = value && value.querySelector('.expanded-text');
    if (key && text) out[key.textContent.trim()] = {
      text: text.textContent.trim(), links: value.querySelectorAll('a').length };
  }
  return out;
}"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    root = tmp_path_factory.mktemp("hostile_browser")
    return (
        CASES["names_with_escapes"](root / "names", 1),
        CASES["markup_file_name"](root / "markup", 1),
        CASES["link_names"](root / "links", 1),
        CASES["link_folders"](root / "folders", 1),
    )


@pytest.fixture(scope="module")
def app(files: tuple[Path, Path, Path, Path]) -> Iterator[App]:
    with served_app(*files) as app:
        yield app


# Every row of the side panel's sections (Node info, Attributes, ...): its key, its value's text
# and the links its value holds.
_PANEL_ROWS_JS = """() => {
  const out = [];
  for (const row of document.querySelectorAll('table.metadata-table tr')) {
    const key = row.querySelector('td.key');
    const value = row.querySelector('td.value');
    if (key && value) out.push({key: key.textContent.trim(), text: value.textContent.trim(),
      links: [...value.querySelectorAll('a')].map(a => a.getAttribute('href') || '')});
  }
  return out;
}"""


def _to_evil(requests: list[str]) -> list[str]:
    """The requests the page made to the host a file named (none may be)."""
    return [r for r in requests if urlparse(r).hostname == EVIL_HOST]


def _watched(me: MEPage) -> list[str]:
    """Every URL the tab asks for from now on."""
    requests: list[str] = []
    me.page.on("request", lambda r: requests.append(r.url))
    return requests


def test_compile_specs_that_look_like_links_are_plain_text(
    app: App, files: tuple[Path, Path], screenshots: Path
) -> None:
    pte = files[0]
    method = pte_adapter.load(pte).methods[0]
    parts = partition_method(method)
    part = next(p for p in parts.partitions if p.backend != CPU)
    call = instruction_role_ids(method, parts)[part.instructions[0]]
    with app.tab() as me:
        requests = _watched(me)
        me.open(app.model_url(pte))
        me.expand_layer(group_names(pte)[method.name][part.index])
        me.select_node(call)
        rows = me.page.evaluate(_ATTRIBUTE_LINKS_JS)
        me.screenshot(screenshots / "hostile_compile_specs.png")
        for key, value in LINK_SPECS.items():
            row = rows[f"compile_spec.{key}"]
            assert row["text"].replace("\u200b", "") == value, row
            assert row["links"] == 0, (key, row)
        assert not _to_evil(requests)


def test_a_file_named_like_markup_is_named_as_text(
    app: App, files: tuple[Path, Path], screenshots: Path
) -> None:
    broken = files[1]
    with app.tab() as me:
        requests = _watched(me)
        me.page.goto(app.model_url(broken))
        me.page.get_by_text("Error", exact=True).first.wait_for(timeout=60_000)
        row = me.page.locator("tr", has_text=broken.name)
        row.locator("mat-icon", has_text="info").first.hover()
        message = me.page.get_by_text("root table: offset points past the end")
        message.first.wait_for(timeout=10_000)
        text = message.first.inner_text()
        assert broken.name in text, text  # shown as the characters it is made of
        assert me.page.locator(f"img[src*='{EVIL_HOST}']").count() == 0
        me.page.wait_for_timeout(500)  # an image the popup held would have been asked for now
        assert not _to_evil(requests), requests
        me.page.screenshot(path=str(screenshots / "hostile_error_popup.png"))


def test_operator_names_that_look_like_links_are_plain_text(
    app: App, files: tuple[Path, Path, Path, Path], screenshots: Path
) -> None:
    """A CPU kernel named `https://...` and Vulkan operators named like a URL, a markdown link
    and a short link (issue 44): their labels, shown in Node info, are text, not links."""
    pte = files[2]
    method = pte_adapter.load(pte).methods[0]
    parts = partition_method(method)
    ids = instruction_role_ids(method, parts)
    groups = group_names(pte)[method.name]
    island = next(p for p in parts.partitions if p.backend == CPU and p.compute_ops)
    vulkan = next(p for p in parts.partitions if p.backend != CPU)
    with app.tab() as me:
        requests = _watched(me)
        me.open(app.model_url(pte))
        # A one-kernel island is drawn as its kernel alone where Model Explorer drops layers of
        # a single child; else it is a layer to open.
        with contextlib.suppress(AssertionError):
            me.expand_layer(groups[island.index])
        kernel = ids[island.instructions[0]]
        me.select_node(kernel)
        rows = me.page.evaluate(_PANEL_ROWS_JS)
        me.screenshot(screenshots / "hostile_operator_name.png")
        assert any(LINK_NAMES[0] in r["text"] for r in rows), rows  # shown, as text
        assert not [r for r in rows if r["links"]], [r for r in rows if r["links"]]
        me.expand_layer(groups[vulkan.index])
        call = ids[vulkan.instructions[0]]
        for k, name in enumerate(LINK_NAMES):
            me.select_node(f"{call}.{k}")
            rows = me.page.evaluate(_PANEL_ROWS_JS)
            # (a value's cell holds its text twice: on one line, and expanded)
            assert any(name in r["text"].replace("\u200b", "") for r in rows), (name, rows)
            assert not [r for r in rows if r["links"]], (name, rows)
        me.screenshot(screenshots / "hostile_delegate_operator_names.png")
        assert me.page.locator(f"a[href*='{EVIL_HOST}']").count() == 0
        assert not _to_evil(requests)


def test_layers_named_like_links_are_plain_text(
    app: App, files: tuple[Path, Path, Path, Path], screenshots: Path
) -> None:
    """A Core ML payload's files in folders named `go/...` and like a markdown link, drawn as
    layers of the delegate's own graph (issue 44): each layer is drawn once, and its name and a
    node's namespace are text in the panel, not links."""
    pte = files[3]
    graph = "forward / delegate 0 (CoreMLBackend) / Core ML files"
    with app.tab() as me:
        requests = _watched(me)
        me.open(app.model_url(pte))
        me.select_graph(graph)
        me.expand_all()
        drawn = me.visible_nodes()
        layers = {label.strip() for i, label in drawn.items() if i.endswith(LAYER_ID_SUFFIX)}
        assert {"go", "evil.example", "[download](evil.example)"} <= layers, drawn
        for node in [i for i, label in drawn.items() if label == "0.json"]:
            me.select_node(node)
            rows = me.page.evaluate(_PANEL_ROWS_JS)
            assert any("evil.example" in r["text"] for r in rows), rows  # its namespace, shown
            assert not [r for r in rows if r["links"]], [r for r in rows if r["links"]]
        me.screenshot(screenshots / "hostile_layer_names.png")
        me.select_layer(" [download](evil.example)")
        rows = me.page.evaluate(_PANEL_ROWS_JS)
        assert any("[download](evil.example)" in r["text"] for r in rows), rows
        assert not [r for r in rows if r["links"]], [r for r in rows if r["links"]]
        me.screenshot(screenshots / "hostile_layer_info.png")
        assert me.page.locator(f"a[href*='{EVIL_HOST}']").count() == 0
        assert not _to_evil(requests)
