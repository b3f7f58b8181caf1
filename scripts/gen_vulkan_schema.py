#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/vulkan/_generated/vulkan_schema.py` from the Vulkan delegate's
FlatBuffers schema in the pinned ExecuTorch wheel (`backends/vulkan/serialization/schema.fbs`).

Why generated: slot numbers, union tags and enum values typed by hand drift silently from the schema
the exporter used. The Vulkan schema also gives several fields non-zero defaults (a tensor's storage
type and memory layout default to `DEFAULT_STORAGE` = 255 and `DEFAULT_LAYOUT` = 255, its staging
dtype to `UNSET` = 127), so a reader that assumed 0 for an absent field would call every such tensor
a `BUFFER` in `TENSOR_WIDTH_PACKED` layout; the defaults are generated with the slots.

The schema is read from the installed wheel through its metadata (no import, so no torch).

Usage: python scripts/gen_vulkan_schema.py [--check]
"""

from __future__ import annotations

import re
import sys

from _codegen import REPO, emit, header, installed_file, parser
from gen_xnnpack_tables import SCALARS, strip_comments

OUT = REPO / "src/pte_adapter/delegates/vulkan/_generated/vulkan_schema.py"
SCHEMA = "executorch/backends/vulkan/serialization/schema.fbs"

Enums = dict[str, tuple[str, dict[int, str]]]


def parse_enums(text: str) -> Enums:
    out: Enums = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*:\s*(\w+)\s*\{(.*?)\}", text, re.S):
        values: dict[int, str] = {}
        nxt = 0
        for item in filter(None, (s.strip() for s in m.group(3).split(","))):
            name, _, val = (p.strip() for p in item.partition("="))
            nxt = int(val, 0) if val else nxt
            values[nxt] = name
            nxt += 1
        out[m.group(1)] = (m.group(2), values)
    return out


def parse_unions(text: str) -> dict[str, list[str]]:
    return {
        m.group(1): [s.strip() for s in m.group(2).split(",") if s.strip()]
        for m in re.finditer(r"\bunion\s+(\w+)\s*\{(.*?)\}", text, re.S)
    }


def parse_tables(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """Table -> [(field, type as written, default as written or "")]."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for m in re.finditer(r"\btable\s+(\w+)\s*\{(.*?)\}", text, re.S):
        fields = []
        for item in filter(None, (s.strip() for s in m.group(2).split(";"))):
            fm = re.fullmatch(r"(\w+)\s*:\s*(\[?\w+\]?)\s*(?:=\s*([\w.+-]+))?", item)
            if fm is None:
                raise SystemExit(f"cannot parse field {item!r} of table {m.group(1)}")
            fields.append((fm.group(1), fm.group(2), fm.group(3) or ""))
        out[m.group(1)] = fields
    if re.search(r"\bstruct\s+\w+", text):
        raise SystemExit("structs are not expected in the Vulkan schema")
    return out


def field_spec(
    name: str, typ: str, default: str, slot: int, enums: Enums, unions: dict[str, list[str]]
) -> tuple[str, int, str, str, str, int | float]:
    """(name, slot, kind, fmt, ref, default) as the decoder reads it."""
    vec = typ.startswith("[")
    base = typ.strip("[]")
    if base in SCALARS:
        value: int | float = 0
        if default:
            value = float(default) if base in ("float", "double") else int(default, 0)
        return (name, slot, "vector" if vec else "scalar", SCALARS[base], "", value)
    if base == "string":
        return (name, slot, "string_vector" if vec else "string", "", "", 0)
    if base in enums:
        underlying, values = enums[base]
        by_name = {n: v for v, n in values.items()}
        if default and default not in by_name:
            raise SystemExit(f"default {default} of {name} is not a {base} value")
        value = by_name[default] if default else 0
        return (name, slot, "vector" if vec else "enum", SCALARS[underlying], base, value)
    if base in unions:
        if vec:
            raise SystemExit(f"vectors of unions are not supported ({name})")
        return (name, slot, "union", "B", base, 0)
    return (name, slot, "table_vector" if vec else "table", "", base, 0)


def generate() -> str:
    source, raw = installed_file("executorch", SCHEMA)
    text = strip_comments(raw)
    enums, unions, tables = parse_enums(text), parse_unions(text), parse_tables(text)
    ident = re.search(r'file_identifier\s+"(\w{4})"', text)
    root = re.search(r"root_type\s+(\w+)", text)
    if ident is None or root is None:
        raise SystemExit("schema has no file_identifier/root_type")
    for members in unions.values():
        for member in members:
            if member not in tables:
                raise SystemExit(f"union member {member} is not a table")
    lines = [
        header(
            "Vulkan delegate schema tables: identifier, enums, union tags, fields with slots and "
            "defaults",
            "gen_vulkan_schema.py",
            [source],
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class Field(NamedTuple):",
        "    name: str",
        "    slot: int  # vtable slot; a union's type tag is at `slot`, its value at `slot + 1`",
        "    kind: str  # scalar|enum|string|table|union|vector|table_vector|string_vector",
        "    fmt: str  # struct format of the scalar / vector element / union tag",
        "    ref: str  # enum, table or union the field refers to",
        "    default: int | float  # the schema's default of a scalar or enum field",
        "",
        "",
        f"FILE_IDENTIFIER: Final = {ident.group(1).encode()!r}",
        f"ROOT_TYPE: Final = {root.group(1)!r}",
        "",
        "ENUMS: Final[dict[str, dict[int, str]]] = {",
    ]
    for name, (_, values) in enums.items():
        lines.append(f"    {name!r}: {{")
        lines += [f"        {v}: {n!r}," for v, n in values.items()]
        lines.append("    },")
    lines += [
        "}",
        "",
        "# Union tag (1-based; 0 = NONE) -> member table.",
        "UNIONS: Final[dict[str, dict[int, str]]] = {",
    ]
    for name, members in unions.items():
        lines.append(f"    {name!r}: {{")
        lines += [f"        {i + 1}: {m!r}," for i, m in enumerate(members)]
        lines.append("    },")
    lines += ["}", "", "TABLES: Final[dict[str, tuple[Field, ...]]] = {"]
    for name, fields in tables.items():
        lines.append(f"    {name!r}: (")
        slot = 0
        for fname, typ, default in fields:
            spec = field_spec(fname, typ, default, slot, enums, unions)
            lines.append(f"        Field{spec!r},")
            slot += 2 if spec[2] == "union" else 1
        lines.append("    ),")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({OUT: generate()}, args.check)


if __name__ == "__main__":
    sys.exit(main())
