#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/xnnpack/_generated/xnnpack_schema.py` from the XNNPACK schema of the pinned
ExecuTorch wheel.

Why generated: the XNNPACK schema has ~50 node kinds and grows with every ExecuTorch release. Slot
numbers and union tags typed by hand drift silently; a table derived from the schema the exporter
itself used does not. The decoder reads the tables generically, so a new node kind needs only a
re-run of this script (and `tests/project/test_generated.py` fails until the committed file matches).

Two schema files ship in the wheel: `schema.fbs` (what the exporter writes, identifier `XN01`) and
`runtime_schema.fbs` (what the C++ runtime reads, identifier `XN00`). The runtime one keeps fields the
exporter marks deprecated and has one more field (`XNNTensorValue.dq_datatype`). Both are merged: a
table's fields are the longer of the two declarations when one is a prefix of the other, so that old
and new payloads both decode.

Usage: python scripts/gen_xnnpack_tables.py [--check]
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from _codegen import REPO, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/delegates/xnnpack/_generated/xnnpack_schema.py"
SCHEMA_PACKAGE = "executorch.backends.xnnpack.serialization"
SCHEMA_FILES = ("schema.fbs", "runtime_schema.fbs")
# The exporter's preprocess, which gives an XNode the debug handle of the node it came from, or
# this default for a node no debug handle names (one its passes added).
PREPROCESS = "executorch/backends/xnnpack/xnnpack_preprocess.py"

# FlatBuffers scalar type -> struct format character.
SCALARS = {
    "bool": "B",
    "byte": "b",
    "ubyte": "B",
    "int8": "b",
    "uint8": "B",
    "short": "h",
    "ushort": "H",
    "int16": "h",
    "uint16": "H",
    "int": "i",
    "uint": "I",
    "int32": "i",
    "uint32": "I",
    "long": "q",
    "ulong": "Q",
    "int64": "q",
    "uint64": "Q",
    "float": "f",
    "float32": "f",
    "double": "d",
    "float64": "d",
}


@dataclass(frozen=True)
class FieldDecl:
    name: str
    type: str  # as written, e.g. "uint", "[float]", "XNodeUnion"
    deprecated: bool


@dataclass
class Schema:
    enums: dict[str, tuple[str, dict[int, str]]]  # name -> (underlying type, value -> name)
    unions: dict[str, list[tuple[str, str]]]  # name -> [(member, table)], tag = index + 1
    tables: dict[str, list[FieldDecl]]
    file_identifier: str
    root_type: str


def strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def parse(text: str) -> Schema:
    text = strip_comments(text)
    enums: dict[str, tuple[str, dict[int, str]]] = {}
    unions: dict[str, list[tuple[str, str]]] = {}
    tables: dict[str, list[FieldDecl]] = {}
    for m in re.finditer(
        r"\b(enum|union|table|struct)\s+(\w+)\s*(?::\s*(\w+))?\s*\{(.*?)\}", text, re.S
    ):
        kind, name, base, body = m.group(1), m.group(2), m.group(3), m.group(4)
        if kind == "enum":
            values: dict[int, str] = {}
            nxt = 0
            for item in filter(None, (s.strip() for s in body.split(","))):
                ename, _, val = (p.strip() for p in item.partition("="))
                nxt = int(val, 0) if val else nxt
                values[nxt] = ename
                nxt += 1
            enums[name] = (base or "int", values)
        elif kind == "union":
            members = []
            for item in filter(None, (s.strip() for s in body.split(","))):
                member, _, table = (p.strip() for p in item.partition(":"))
                members.append((member, table or member))
            unions[name] = members
        elif kind == "table":
            fields = []
            for item in filter(None, (s.strip() for s in body.split(";"))):
                fm = re.fullmatch(
                    r"(\w+)\s*:\s*(\[?\w+\]?)\s*(?:=\s*[\w.+-]+)?\s*(\((.*)\))?", item, re.S
                )
                if fm is None:
                    raise SystemExit(f"cannot parse field {item!r} of table {name}")
                attrs = fm.group(4) or ""
                fields.append(FieldDecl(fm.group(1), fm.group(2), "deprecated" in attrs))
            tables[name] = fields
        else:
            raise SystemExit(f"structs are not expected in the XNNPACK schema ({name})")
    ident = re.search(r'file_identifier\s+"(\w{4})"', text)
    root = re.search(r"root_type\s+(\w+)", text)
    if ident is None or root is None:
        raise SystemExit("schema has no file_identifier/root_type")
    return Schema(enums, unions, tables, ident.group(1), root.group(1))


def merge_prefix(a: list, b: list, what: str) -> list:  # type: ignore[type-arg]
    """The longer of two declarations, when one extends the other (deprecation flags OR-ed)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    for x, y in zip(short, long, strict=False):
        same = (x.name, x.type) == (y.name, y.type) if isinstance(x, FieldDecl) else x == y
        if not same:
            raise SystemExit(f"{what}: the two schema files disagree ({x} vs {y})")
    out = list(long)
    if out and isinstance(out[0], FieldDecl):
        for i, x in enumerate(short):
            out[i] = FieldDecl(x.name, x.type, x.deprecated or long[i].deprecated)
    return out


def field_spec(schema: Schema, decl: FieldDecl, slot: int) -> tuple[str, int, str, str, str, bool]:
    """(name, slot, kind, fmt, ref, deprecated) as the decoder reads it."""
    t = decl.type
    vec = t.startswith("[")
    base = t.strip("[]")
    if base in SCALARS:
        return (decl.name, slot, "vector" if vec else "scalar", SCALARS[base], "", decl.deprecated)
    if base == "string":
        return (decl.name, slot, "string_vector" if vec else "string", "", "", decl.deprecated)
    if base in schema.enums:
        fmt = SCALARS[schema.enums[base][0]]
        return (decl.name, slot, "vector" if vec else "enum", fmt, base, decl.deprecated)
    if base in schema.unions:
        if vec:
            raise SystemExit(f"vectors of unions are not supported ({decl.name})")
        return (decl.name, slot, "union", "B", base, decl.deprecated)
    if base in schema.tables:
        return (decl.name, slot, "table_vector" if vec else "table", "", base, decl.deprecated)
    raise SystemExit(f"unknown type {t} of field {decl.name}")


def generate() -> str:
    # Found through the wheel's metadata rather than by importing executorch (which imports torch).
    folder = SCHEMA_PACKAGE.replace(".", "/")
    loaded = {f: installed_file("executorch", f"{folder}/{f}") for f in SCHEMA_FILES}
    main, runtime = (parse(loaded[f][1]) for f in SCHEMA_FILES)
    preprocess = installed_file("executorch", PREPROCESS)
    default_handle = re.search(r"^DEFAULT_DEBUG_HANDLE\s*=\s*(\d+)\s*$", preprocess[1], re.M)
    if default_handle is None:
        raise SystemExit(f"{PREPROCESS} has no DEFAULT_DEBUG_HANDLE = <int>: extend this generator")
    merged = Schema(dict(main.enums), {}, {}, main.file_identifier, main.root_type)
    for name, val in runtime.enums.items():
        if name in merged.enums and merged.enums[name] != val:
            raise SystemExit(f"enum {name} differs between the schema files")
        merged.enums.setdefault(name, val)
    for name in dict.fromkeys([*main.unions, *runtime.unions]):
        merged.unions[name] = merge_prefix(
            main.unions.get(name, []), runtime.unions.get(name, []), f"union {name}"
        )
    for name in dict.fromkeys([*main.tables, *runtime.tables]):
        merged.tables[name] = merge_prefix(
            main.tables.get(name, []), runtime.tables.get(name, []), f"table {name}"
        )

    lines = [
        header(
            "XNNPACK schema tables: identifiers, enums, union tags, fields with slots",
            "gen_xnnpack_tables.py",
            [*(source for source, _ in loaded.values()), preprocess[0]],
            "schema.fbs (what the exporter writes) and runtime_schema.fbs (what the runtime reads)\n"
            "merged: a table's fields are the longer of its two declarations. From the preprocess:\n"
            "the debug handle an XNode gets when no node of the graph names one.",
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
        "    deprecated: bool",
        "",
        "",
        f"FILE_IDENTIFIER: Final = {main.file_identifier.encode()!r}",
        f"RUNTIME_FILE_IDENTIFIER: Final = {runtime.file_identifier.encode()!r}",
        f"ROOT_TYPE: Final = {main.root_type!r}",
        f"DEFAULT_DEBUG_HANDLE: Final = {int(default_handle.group(1))}",
        "",
        "ENUMS: Final[dict[str, dict[int, str]]] = {",
    ]
    for name, (_, values) in merged.enums.items():
        lines.append(f"    {name!r}: {{")
        lines += [f"        {v}: {n!r}," for v, n in values.items()]
        lines.append("    },")
    lines += [
        "}",
        "",
        "# Union tag (1-based; 0 = NONE) -> (member name, table name).",
        "UNIONS: Final[dict[str, dict[int, tuple[str, str]]]] = {",
    ]
    for name, members in merged.unions.items():
        lines.append(f"    {name!r}: {{")
        lines += [f"        {i + 1}: ({m!r}, {t!r})," for i, (m, t) in enumerate(members)]
        lines.append("    },")
    lines += ["}", "", "TABLES: Final[dict[str, tuple[Field, ...]]] = {"]
    for name, decls in merged.tables.items():
        lines.append(f"    {name!r}: (")
        slot = 0
        for d in decls:
            spec = field_spec(merged, d, slot)
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
