"""docs/architecture.md names every hand-written module of the package on its own package's line: a
module added without its line in the map, or named only on another package's line (a module called
like an ordinary word would pass anywhere), fails here (the map is what a newcomer reads first)."""

from __future__ import annotations

import re

from tests.support.examples import ROOT

PACKAGE = ROOT / "src" / "pte_adapter"


def map_entries() -> dict[str, str]:
    """The map's entries under `src/pte_adapter/`, by path (`delegates/ethosu`, `backends.py`), each
    with its text: the rest of its line and the deeper-indented lines after it, not its children's
    entries (a package listed on a line of its own, like `ethosu/` under `delegates/`)."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("\n## The package, as it is\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```\n(.*?)```", section, re.S)
    entries: dict[str, str] = {}
    path: list[tuple[int, str]] = []
    current = ""
    inside = False
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        name = line.split()[0] if line.strip() else ""
        if indent == 0:
            inside = name == "src/pte_adapter/"
        elif inside and indent < 10:  # an entry: a module or package name, then what it holds
            path = [(i, n) for i, n in path if i < indent] + [(indent, name.rstrip("/"))]
            current = "/".join(n for _i, n in path)
            entries[current] = line[indent + len(name) :]
        elif inside and current:
            entries[current] += "\n" + line
    return entries


def hand_written_modules() -> list[str]:
    return sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "_generated" not in p.parts and p.name != "__init__.py"
    )


def missing_from(entries: dict[str, str], modules: list[str]) -> list[str]:
    """The modules not named on their own package's entry (the deepest one the map has: a
    package described inline, like `analysis/profile/`, is named on its parent's)."""
    missing = []
    for module in modules:
        if module in entries:  # a top-level module: its own entry
            continue
        *packages, file = module.split("/")
        while packages and "/".join(packages) not in entries:
            packages.pop()
        text = entries.get("/".join(packages), "")
        if file.removesuffix(".py") not in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
            missing.append(module)
    return missing


def test_the_map_names_every_hand_written_module_on_its_package_line() -> None:
    modules = hand_written_modules()
    assert len(modules) > 100
    missing = missing_from(map_entries(), modules)
    assert not missing, (
        f"docs/architecture.md does not name these on their package's line: {missing}"
    )


def test_a_module_missing_from_its_line_is_found() -> None:
    """The check itself: a planted module the map does not name is reported, and so is one named
    only on another package's line (`decode` is on every backend's line, not on analysis's)."""
    entries = map_entries()
    planted = [*hand_written_modules(), "analysis/planted_newcomer.py", "analysis/decode.py"]
    assert missing_from(entries, planted) == ["analysis/planted_newcomer.py", "analysis/decode.py"]
