"""Every relative link in the README and docs/ leads somewhere: an existing file and, when the link
names an anchor, a heading of that file (GitHub's anchor rules), so the pages work on GitHub and
from disk alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.examples import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# [text](target) and ![alt](target); a target has no spaces (titles are not used here).
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without code blocks and code spans (a `[x](y)` in code is not a link)."""
    return _CODE.sub("", _FENCE.sub("", text))


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped (not `-` or `_`), spaces to `-`,
    a repeated anchor numbered `-1`, `-2`, ..."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for title in _HEADING.findall(_FENCE.sub("", path.read_text())):
        plain = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", plain.replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(page: Path) -> list[str]:
    return [
        t for t in _LINK.findall(_prose(page.read_text())) if not re.match(r"[a-z]+:", t)
    ]  # not http:, https:, mailto:


def test_the_pages_exist_and_link_each_other() -> None:
    assert (ROOT / "docs" / "json.md").is_file()
    linked = {(ROOT / t.split("#")[0]).resolve() for t in _links(ROOT / "README.md")}
    assert set(PAGES[1:]) <= linked, "a docs page the README does not link"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif not dest.resolve().is_relative_to(ROOT.resolve()):
            broken.append(f"{target}: outside the repository")
        elif anchor and (dest.suffix != ".md" or anchor not in _anchors(dest)):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_anchors_follow_githubs_rules() -> None:
    """The slug rule itself, on headings of the kinds these pages use."""
    page = ROOT / "docs" / "diff.md"
    assert "did-the-fix-work-diff-size-and-the-split-view" in _anchors(page)
    assert "size-where-every-byte-goes" in _anchors(page)
    assert "what-it-would-cost-on-the-npu-ethos-u-estimate" in _anchors(
        ROOT / "docs" / "estimates.md"
    )
