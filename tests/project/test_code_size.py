"""The size limits a newcomer can live with (issue 21), checked on the tree.

Hand-written code only: modules under a `_generated/` folder are written by `scripts/regen.py`
from pinned schemas and are exempt. The limits: no module over 500 lines; no function over 100
lines, and at most three over 60 in all of `src/`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.examples import ROOT

SRC = ROOT / "src" / "pte_adapter"
MODULE_LINES = 500
FUNCTION_LINES = 100
LONG_FUNCTION = 60
LONG_FUNCTIONS_ALLOWED = 3


def _hand_written() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "_generated" not in p.relative_to(SRC).parts)


def _function_lengths(path: Path) -> list[tuple[int, str]]:
    """(lines, 'module:line name') of every function and method, nested ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT)
    return [
        (node.end_lineno - node.lineno + 1, f"{rel}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def test_the_walk_sees_the_code() -> None:
    # A wrong root would make every limit below hold vacuously.
    modules = _hand_written()
    assert len(modules) > 100 and SRC / "main.py" in modules
    assert not any("_generated" in p.parts for p in modules)


def test_no_module_is_over_the_limit() -> None:
    over = {
        str(p.relative_to(ROOT)): n
        for p in _hand_written()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not over, f"modules over {MODULE_LINES} lines (split them by concern): {over}"


def test_functions_stay_short() -> None:
    lengths = [row for p in _hand_written() for row in _function_lengths(p)]
    assert len(lengths) > 500
    too_long = sorted(row for row in lengths if row[0] > FUNCTION_LINES)
    assert not too_long, f"functions over {FUNCTION_LINES} lines: {too_long}"
    long = sorted(row for row in lengths if row[0] > LONG_FUNCTION)
    assert len(long) <= LONG_FUNCTIONS_ALLOWED, (
        f"{len(long)} functions over {LONG_FUNCTION} lines (at most {LONG_FUNCTIONS_ALLOWED}): {long}"
    )
