"""Nothing a file says is drawn as a link or markup by Model Explorer's web app (issue 33): the
compile specs of a program re-serialised by ExecuTorch's serializer with a markdown link, a bare
URL and a short link as values show as plain text, and a broken file named like an image tag
shows its name in the error popup without the page fetching anything.

What the web app would link is its own rule (`parseUrlInfo`, `linkifyErrorMessage` in its
bundle); this test asks the real app. Screenshots are saved in $PTE_SCREENSHOTS (or the test's
temporary folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import CPU, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from tests.support.browser import (
    MEPage,
    chromium,
    model_explorer_server,
    model_url,
    new_page,
    require_chromium,
)
from tests.support.groups import group_names
from tests.support.hostile import CASES, LINK_SPECS

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
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile_browser")
    return CASES["names_with_escapes"](root / "names", 1), CASES["markup_file_name"](
        root / "markup", 1
    )


@pytest.fixture(scope="module")
def app(files: tuple[Path, Path]) -> Iterator[tuple[str, Any]]:
    with model_explorer_server(*files) as url, chromium() as browser:
        yield url, browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("PTE_SCREENSHOTS")
    return Path(env) if env else tmp_path_factory.mktemp("hostile_screenshots")


def _to_evil(requests: list[str]) -> list[str]:
    """The requests the page made to the host a file named (none may be)."""
    return [r for r in requests if urlparse(r).hostname == EVIL_HOST]


def _watched(browser: Any) -> tuple[MEPage, list[str]]:
    me = MEPage(new_page(browser))
    requests: list[str] = []
    me.page.on("request", lambda r: requests.append(r.url))
    return me, requests


def test_compile_specs_that_look_like_links_are_plain_text(
    app: tuple[str, Any], files: tuple[Path, Path], shots: Path
) -> None:
    url, browser = app
    pte = files[0]
    method = pte_adapter.load(pte).methods[0]
    parts = partition_method(method)
    part = next(p for p in parts.partitions if p.backend != CPU)
    call = instruction_role_ids(method, parts)[part.instructions[0]]
    me, requests = _watched(browser)
    try:
        me.open(model_url(url, pte))
        me.expand_layer(group_names(pte)[method.name][part.index])
        me.select_node(call)
        rows = me.page.evaluate(_ATTRIBUTE_LINKS_JS)
        me.screenshot(shots / "hostile_compile_specs.png")
        for key, value in LINK_SPECS.items():
            row = rows[f"compile_spec.{key}"]
            assert row["text"].replace("\u200b", "") == value, row
            assert row["links"] == 0, (key, row)
        assert not _to_evil(requests)
    finally:
        me.page.context.close()


def test_a_file_named_like_markup_is_named_as_text(
    app: tuple[str, Any], files: tuple[Path, Path], shots: Path
) -> None:
    url, browser = app
    broken = files[1]
    me, requests = _watched(browser)
    try:
        me.page.goto(model_url(url, broken))
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
        me.page.screenshot(path=str(shots / "hostile_error_popup.png"))
    finally:
        me.page.context.close()
