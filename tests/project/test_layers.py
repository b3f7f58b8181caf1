"""The import contract: each layer imports only the layers below it (lazy imports included).

    container → program → delegates → analysis → render → entry points (api, cli, explorer, main)

`errors`, `backends`, `operator_names` and `wording` are plain modules every layer may use. Nothing below `render` imports Model
Explorer, so the same analysis serves the adapter, the CLI and the Python API. Nothing outside
`delegates/` and `backends.py` imports a backend package (`delegates/ethosu`, ...): the record and
`delegates/hooks.py` are the one door. Inside render/, the facts a view shows (`*_facts.py`), the
plan (`plan/`) and the reports keep the same rule among themselves. See docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.examples import ROOT

PACKAGE = ROOT / "src" / "pte_adapter"
SHARED = {"errors", "backends", "operator_names", "wording"}  # imported by every layer
LAYERS = ["container", "program", "delegates", "analysis", "render", "entry"]
# Model Explorer may be imported only where its objects are built or it calls us.
MODEL_EXPLORER_ALLOWED = {"render", "entry"}


def layer_of(module: str) -> str | None:
    """'pte_adapter.analysis.summary' -> 'analysis'; None for modules outside the package."""
    parts = module.split(".")
    if parts[0] != "pte_adapter":
        return None
    top = parts[1] if len(parts) > 1 else "__init__"
    if top in SHARED:
        return "shared"
    # Entry modules, and names the package itself exports (`from pte_adapter import __version__`).
    return top if top in LAYERS else "entry"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1] if len(parts) > 2 else parts
    return ".".join(parts)


def imports(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """Every module `path` imports, anywhere in it (functions and TYPE_CHECKING blocks too)."""
    tree = ast.parse(path.read_text(), str(path))
    base = module_name(path, package).split(".")
    if path.name == "__init__.py":
        base.append("__init__")
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                mod = ".".join(
                    base[: len(base) - node.level] + ([node.module] if node.module else [])
                )
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out.extend((node.lineno, f"{mod}.{a.name}") for a in node.names if mod == "pte_adapter")
    return out


def violations(package: Path = PACKAGE) -> list[str]:
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        here = layer_of(module_name(path, package))
        if here is None or here == "shared":
            continue
        rank = LAYERS.index(here)
        for line, mod in imports(path, package):
            if mod.split(".")[0] == "model_explorer" and here not in MODEL_EXPLORER_ALLOWED:
                found.append(f"{path.relative_to(package.parent)}:{line}: {here} imports {mod}")
            target = layer_of(mod)
            if target is None or target == "shared" or mod == "pte_adapter":
                continue
            if LAYERS.index(target) > rank:
                where = path.relative_to(package.parent)
                found.append(f"{where}:{line}: {here} imports {target} ({mod})")
    return found


def test_no_layer_imports_a_layer_above_it() -> None:
    assert violations() == []


def test_the_contract_sees_a_planted_upward_import(tmp_path: Path) -> None:
    """The check fails on an upward import hidden inside a function (a lazy one)."""
    import shutil

    copy = tmp_path / "pte_adapter"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "analysis" / "partitions.py"
    target.write_text(
        target.read_text()
        + "\n\ndef _planted() -> None:\n    from pte_adapter.render import facts  # noqa\n"
    )
    found = violations(copy)
    assert len(found) == 1 and "analysis imports render" in found[0]


def backend_packages(package: Path = PACKAGE) -> set[str]:
    """`pte_adapter.delegates.ethosu`, ...: the packages under delegates/."""
    return {
        f"pte_adapter.delegates.{d.name}"
        for d in (package / "delegates").iterdir()
        if (d / "__init__.py").is_file()
    }


def backend_imports(package: Path = PACKAGE) -> list[str]:
    """Imports of a backend package from outside `delegates/` and `backends.py`: everything else
    reaches a backend through its record and the accessors of `delegates/hooks.py`."""
    inside = {package / "delegates", package / "backends.py"}
    packages = backend_packages(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        if any(path == p or p in path.parents for p in inside):
            continue
        for line, mod in imports(path, package):
            if any(mod == p or mod.startswith(p + ".") for p in packages):
                found.append(f"{path.relative_to(package.parent)}:{line}: imports {mod}")
    return found


def test_nothing_outside_delegates_imports_a_backend_package() -> None:
    assert backend_imports() == []


def _planted_copy(tmp_path: Path, module: str, statement: str) -> Path:
    """A copy of the package whose `module` (a path inside it) gains a function running
    `statement` (an import the layer checks must find)."""
    import shutil

    copy = tmp_path / "pte_adapter"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text() + f"\n\ndef _planted() -> None:\n    {statement}\n")
    return copy


def test_the_backend_check_sees_a_planted_import(tmp_path: Path) -> None:
    copy = _planted_copy(
        tmp_path, "analysis/deployment.py", "from pte_adapter.delegates.ethosu import memory_use"
    )
    (found,) = backend_imports(copy)
    assert "analysis/deployment.py" in found and "pte_adapter.delegates.ethosu" in found


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_every_layer_is_a_package(layer: str) -> None:
    assert (PACKAGE / layer / "__init__.py").is_file()


def test_the_top_level_shows_the_architecture() -> None:
    """Six modules directly in the package: the public API, the Model Explorer entry, and the four
    every layer shares."""
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == [
        "__init__.py",
        "backends.py",
        "errors.py",
        "main.py",
        "operator_names.py",
        "wording.py",
    ]


# render/ has three floors, each importing only its own and the ones below: the facts a view shows
# (how each thing is worded: `facts.py` and `*_facts.py`, the name says the floor), the plan of the
# Model Explorer graphs (`plan/`), and the reports and builders that write them out.
RENDER_FLOORS = ["facts", "plan", "reports"]


def render_floor(module: str) -> str | None:
    """'pte_adapter.render.memory_facts' -> 'facts'; None outside render/."""
    parts = module.split(".")
    if parts[:2] != ["pte_adapter", "render"] or len(parts) < 3:
        return None
    if parts[2] == "plan":
        return "plan"
    if len(parts) == 3 and (parts[2] == "facts" or parts[2].endswith("_facts")):
        return "facts"
    return "reports"


def render_violations(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted((package / "render").rglob("*.py")):
        here = render_floor(module_name(path, package))
        if here is None:
            continue
        for line, mod in imports(path, package):
            there = render_floor(mod)
            if there is not None and RENDER_FLOORS.index(there) > RENDER_FLOORS.index(here):
                where = path.relative_to(package.parent)
                found.append(f"{where}:{line}: {here} imports {there} ({mod})")
    return found


def test_no_render_floor_imports_a_floor_above_it() -> None:
    assert render_violations() == []


def test_the_render_floors_see_a_planted_upward_import(tmp_path: Path) -> None:
    copy = _planted_copy(
        tmp_path,
        "render/memory_facts.py",
        "from pte_adapter.render.plan import instructions  # noqa",
    )
    (found,) = render_violations(copy)
    assert "render/memory_facts.py" in found and "facts imports plan" in found


def test_render_calls_no_analysis_function() -> None:
    """Views read the analysis, they never compute it: what render/ takes from analysis/ is types
    (classes, TypedDicts) and constants, never a function."""
    found = []
    for path in sorted((PACKAGE / "render").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "pte_adapter.analysis"
            ):
                for alias in node.names:
                    if not alias.name[:1].isupper():
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name}")
    assert found == []


def package_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Import cycles between the sub-packages (`delegates.tosa` → `delegates.arm` → ... → back),
    lazy imports included; a package and the packages inside it are one place, not a cycle."""
    packages = {
        ".".join(d.relative_to(package.parent).parts)
        for d in package.rglob("*")
        if d.is_dir() and (d / "__init__.py").is_file()
    }

    def package_of(module: str) -> str | None:
        parts = module.split(".")
        while parts and ".".join(parts) not in packages:
            parts.pop()
        return ".".join(parts) or None

    edges: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        here = package_of(".".join(path.relative_to(package.parent).with_suffix("").parts))
        for _, mod in imports(path, package):
            there = package_of(mod)
            if here is None or there is None:
                continue
            if f"{here}.".startswith(f"{there}.") or f"{there}.".startswith(f"{here}."):
                continue  # the same package, or one inside the other
            edges.setdefault(here, set()).add(there)
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            cycles.append([*trail[trail.index(node) :], node])
            return
        if node in done:
            return
        for nxt in sorted(edges.get(node, ())):
            visit(nxt, [*trail, node])
        done.add(node)

    for start in sorted(edges):
        visit(start, [])
    return cycles


def test_no_two_packages_import_each_other() -> None:
    """A backend package may build on a shared one (`delegates/arm`), never the other way round:
    a cycle would make each importable only with the other."""
    assert package_cycles() == []


def test_the_cycle_check_sees_a_planted_cycle(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "pte_adapter"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "delegates" / "arm" / "artifacts.py"
    target.write_text(
        target.read_text()
        + "\n\ndef _planted() -> None:\n    from pte_adapter.delegates.tosa import decode  # noqa\n"
    )
    cycles = package_cycles(copy)
    assert cycles and all("pte_adapter.delegates.arm" in c for c in cycles)
    assert any("pte_adapter.delegates.tosa" in c for c in cycles)
