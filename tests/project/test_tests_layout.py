"""The layout rule of tests/README.md, checked on the test tree itself (by reading its source):

- every test module sits in one of the folders the README names;
- no test module imports another test module (shared code lives in tests/support/);
- no test module computes paths from `__file__` (they come from tests/support/examples.py);
- no test module swallows `PteFormatError` unseen: corruption tests count their outcomes with
  tests/support/corruption.py, so a reader that accepts anything fails them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.examples import ROOT

TESTS = ROOT / "tests"
LAYERS = ("container", "program", "delegates", "analysis", "render")
FOLDERS = {"oracle", "robustness", "e2e", "project", *(f"unit/{layer}" for layer in LAYERS)}


def _modules(root: Path) -> list[Path]:
    """Test modules and conftest files under `root` (support code is not a test module)."""
    return sorted(
        p
        for p in root.rglob("*.py")
        if (p.name.startswith("test_") or p.name == "conftest.py")
        and "support" not in p.relative_to(root).parts
    )


def _is_test_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return parts[0] == "tests" and any(p.startswith("test_") or p == "conftest" for p in parts)


def _imported(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every module `path` imports, at any depth, relative ones resolved;
    `from a import b` yields both `a` and `a.b` (b may be a module)."""
    package = ["tests", *path.relative_to(root).parent.parts]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", ""))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return out


def cross_imports(root: Path) -> list[str]:
    """`file:line imports module` for every test module (or conftest) importing a test module."""
    found = []
    for path in _modules(root):
        for line, name in _imported(path, root):
            if _is_test_module(name):
                found.append(f"{path.relative_to(root)}:{line} imports {name}")
    return found


def _name(node: ast.AST | None) -> str:
    """`x` for a name `x`, `y` for an attribute `a.y`, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _swallows(handler: ast.ExceptHandler) -> bool:
    """An `except PteFormatError` whose body only passes, continues or returns."""
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    quiet = all(
        isinstance(s, ast.Pass | ast.Continue)
        or (isinstance(s, ast.Return) and s.value is None)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in handler.body
    )
    return quiet and any(_name(t) == "PteFormatError" for t in caught)


def _suppresses(node: ast.With) -> bool:
    """`with contextlib.suppress(..., PteFormatError, ...)`."""
    calls = [i.context_expr for i in node.items if isinstance(i.context_expr, ast.Call)]
    return any(
        _name(c.func) == "suppress" and any(_name(a) == "PteFormatError" for a in c.args)
        for c in calls
    )


def silent_format_errors(root: Path) -> list[str]:
    found = []
    for path in _modules(root):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.ExceptHandler) and _swallows(node)) or (
                isinstance(node, ast.With) and _suppresses(node)
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_every_test_module_is_in_a_layout_folder() -> None:
    misplaced = [
        str(p.relative_to(TESTS))
        for p in _modules(TESTS)
        if p.name != "conftest.py" and p.parent.relative_to(TESTS).as_posix() not in FOLDERS
    ]
    assert not misplaced, f"put these in one of {sorted(FOLDERS)} (tests/README.md): {misplaced}"
    # Every folder is a package, so two folders may hold modules of the same name.
    for module in _modules(TESTS):
        folder = module.parent
        while folder != ROOT:
            assert (folder / "__init__.py").exists(), f"{folder} has no __init__.py"
            folder = folder.parent


def test_no_test_module_imports_another() -> None:
    found = cross_imports(TESTS)
    assert not found, (
        "a test module imports another test module; move the shared helper into tests/support/ "
        "(with a public name) or the fixture into tests/conftest.py:\n" + "\n".join(found)
    )


def test_the_check_sees_a_planted_import(tmp_path: Path) -> None:
    """The check above can fail: a planted cross import, in each spelling, is found."""
    (tmp_path / "unit" / "render").mkdir(parents=True)
    (tmp_path / "oracle").mkdir()
    (tmp_path / "oracle" / "test_a.py").write_text("def helper() -> None: ...\n")
    (tmp_path / "oracle" / "test_b.py").write_text(
        "from tests.support.examples import ROOT\n"
        "def test_x() -> None:\n    from tests.oracle.test_a import helper\n"
    )
    (tmp_path / "oracle" / "test_c.py").write_text("from . import test_a\n")
    (tmp_path / "unit" / "render" / "test_d.py").write_text(
        "import importlib\nimport tests.oracle.test_a\n"
        "m = importlib.import_module('tests.oracle.test_a')\n"
    )
    found = cross_imports(tmp_path)
    assert found == [
        "oracle/test_b.py:3 imports tests.oracle.test_a",
        "oracle/test_b.py:3 imports tests.oracle.test_a.helper",
        "oracle/test_c.py:1 imports tests.oracle.test_a",
        "unit/render/test_d.py:2 imports tests.oracle.test_a",
        "unit/render/test_d.py:3 imports tests.oracle.test_a",
    ], found


def test_paths_come_from_support_examples() -> None:
    found = [
        f"{p.relative_to(TESTS)}:{n.lineno}"
        for p in _modules(TESTS)
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Name) and n.id == "__file__"
    ]
    assert not found, f"use ROOT/EXAMPLES/example() from tests/support/examples.py: {found}"


def test_no_test_swallows_a_format_error_unseen() -> None:
    found = silent_format_errors(TESTS)
    assert not found, (
        "these places swallow PteFormatError, so a reader that accepts anything passes; run the "
        "inputs through tests/support/corruption.Outcomes and assert how many were rejected:\n"
        + "\n".join(found)
    )


def test_the_swallow_check_sees_both_spellings(tmp_path: Path) -> None:
    (tmp_path / "robustness").mkdir()
    (tmp_path / "robustness" / "test_a.py").write_text(
        "import contextlib\n"
        "def test_a() -> None:\n"
        "    with contextlib.suppress(PteFormatError):\n        read()\n"
        "    try:\n        read()\n    except PteFormatError:\n        pass\n"
        "    try:\n        read()\n    except PteFormatError:\n        failures += 1\n"
    )
    assert silent_format_errors(tmp_path) == ["robustness/test_a.py:3", "robustness/test_a.py:7"]
