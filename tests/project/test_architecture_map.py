"""docs/architecture.md names every hand-written module of the package: a module added without its
line in the map fails here (the map is what a newcomer reads first)."""

from __future__ import annotations

import re

from tests.support.examples import ROOT

PACKAGE = ROOT / "src" / "pte_adapter"


def _map_words() -> set[str]:
    """The words of the map: the code block under "The package, as it is"."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("\n## The package, as it is\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```\n(.*?)```", section, re.S)
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", block))


def hand_written_modules() -> list[str]:
    return sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "_generated" not in p.parts and p.name != "__init__.py"
    )


def missing_from(words: set[str], modules: list[str]) -> list[str]:
    return [m for m in modules if m.rsplit("/", 1)[-1].removesuffix(".py") not in words]


def test_the_map_names_every_hand_written_module() -> None:
    modules = hand_written_modules()
    assert len(modules) > 100
    missing = missing_from(_map_words(), modules)
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_a_module_missing_from_the_map_is_found() -> None:
    """The check itself: a planted module the map does not name is reported."""
    words = _map_words()
    planted = [*hand_written_modules(), "analysis/planted_newcomer.py"]
    assert missing_from(words, planted) == ["analysis/planted_newcomer.py"]
