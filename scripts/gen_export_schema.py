#!/usr/bin/env python3
"""Generate `src/pte_adapter/container/_generated/export_schema.py` from torch.export's
serialisation schema in the pinned torch wheel.

Why generated: an ETRecord stores its graphs (the exported program, the edge program, the graph map)
as torch.export's JSON serialisation. A tensor's dtype there is a number of the schema's
`ScalarType` enum (its own numbering, not ExecuTorch's), an input or output of the graph is one
member of the `InputSpec` / `OutputSpec` unions, and every value a node reads is one member of the
`Argument` union. Those facts come from `torch/_export/serde/schema.py`, read as text with `ast`
(never imported: no torch at generation time either), so an upgrade that renumbers a dtype or adds a
member changes this file, not the reader's assumptions.

Usage: python scripts/gen_export_schema.py [--check]
"""

from __future__ import annotations

import ast
import sys

from _codegen import REPO, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/container/_generated/export_schema.py"
SCHEMA = "torch/_export/serde/schema.py"


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise SystemExit(f"{SCHEMA} has no class {name}: extend this generator")


def enum_members(tree: ast.Module, name: str) -> dict[int, str]:
    """`class X(IntEnum): NAME = value` -> {value: NAME}."""
    out: dict[int, str] = {}
    for item in _class(tree, name).body:
        if isinstance(item, ast.Assign) and len(item.targets) == 1:
            target, value = item.targets[0], item.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                if not isinstance(value.value, int):
                    raise SystemExit(f"{name}.{target.id} is not an integer")
                out[value.value] = target.id
    if not out:
        raise SystemExit(f"{name} has no members")
    return out


def union_members(tree: ast.Module, name: str) -> list[str]:
    """`class X(_Union): member: Annotated[Type, id]` -> member names, in declaration order."""
    out = [
        item.target.id
        for item in _class(tree, name).body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]
    if not out:
        raise SystemExit(f"{name} has no members")
    return out


def schema_version(tree: ast.Module) -> tuple[int, int]:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "SCHEMA_VERSION" for t in node.targets)
            and isinstance(node.value, ast.Tuple)
        ):
            values = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            if len(values) == 2 and all(isinstance(v, int) for v in values):
                return int(values[0]), int(values[1])
    raise SystemExit(f"{SCHEMA} has no SCHEMA_VERSION = (major, minor)")


def generate() -> str:
    source, text = installed_file("torch", SCHEMA)
    tree = ast.parse(text)
    scalar = enum_members(tree, "ScalarType")
    lines = [
        header(
            "torch.export's serialisation schema: version, ScalarType numbers, union members",
            "gen_export_schema.py",
            [source],
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f"SCHEMA_VERSION: Final = {schema_version(tree)!r}",
        "",
        "# ScalarType number -> its name in the schema (a tensor's `dtype` in `tensor_values`).",
        "SCALAR_TYPES: Final[dict[int, str]] = {",
        *(f"    {v}: {n!r}," for v, n in sorted(scalar.items())),
        "}",
        "",
    ]
    for union, const in (
        ("InputSpec", "INPUT_SPEC_KINDS"),
        ("OutputSpec", "OUTPUT_SPEC_KINDS"),
        ("Argument", "ARGUMENT_KINDS"),
    ):
        members = union_members(tree, union)
        lines += [
            f"# The members of the `{union}` union, in declaration order.",
            f"{const}: Final[tuple[str, ...]] = (",
            *(f"    {m!r}," for m in members),
            ")",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({OUT: generate()}, args.check)


if __name__ == "__main__":
    sys.exit(main())
