"""Limits on the whole repository, not only `src/` (issue 37): a newcomer changes builders, tools
and tests too.

No hand-written Python module anywhere in the repository (src, examples, scripts, benchmarks,
tests) over 800 lines, and no `sys.path.insert`/`sys.path.append`: every tool is reached as a
package (`python -m ...` from the repository root, or the installed one), so a module can move
without a path edited in eleven places.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.examples import ROOT

FOLDERS = ("src", "examples", "scripts", "benchmarks", "tests")
REPO_MODULE_LINES = 800
_PATH_EDIT = re.compile(r"\bsys\.path\.(insert|append)\(")


def _python_modules() -> list[Path]:
    return sorted(
        p
        for folder in FOLDERS
        for p in (ROOT / folder).rglob("*.py")
        if "_generated" not in p.parts and "__pycache__" not in p.parts
    )


def test_the_walk_sees_every_folder() -> None:
    modules = _python_modules()
    for folder in FOLDERS:
        assert any(p.is_relative_to(ROOT / folder) for p in modules), folder


def test_no_module_in_the_repository_is_over_800_lines() -> None:
    over = {
        str(p.relative_to(ROOT)): n
        for p in _python_modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > REPO_MODULE_LINES
    }
    assert not over, f"modules over {REPO_MODULE_LINES} lines (split them by concern): {over}"


def test_nothing_edits_sys_path() -> None:
    edits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in _python_modules()
        if p.name != "test_repo_limits.py"  # its own pattern
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _PATH_EDIT.search(line)
    ]
    assert not edits, f"sys.path edited (make it a package or run it with python -m): {edits}"
