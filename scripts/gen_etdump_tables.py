#!/usr/bin/env python3
"""Generate `src/pte_adapter/container/_generated/etdump_schema.py` from the ETDump schema of the pinned
ExecuTorch wheel.

Why generated: the ETDump reader addresses fields by vtable slot, and schema defaults matter here
(`instruction_id` and `delegate_debug_id_int` default to -1, not 0: an absent field means "no
instruction"). Slots and defaults typed by hand drift silently when ExecuTorch adds a field; these
come from the files the runtime that wrote the `.etdp` was built from:

- `executorch/devtools/etdump/etdump_schema_flatcc.fbs` (tables, the `ValueType` enum, identifier)
- `executorch/devtools/etdump/scalar_type.fbs` (the `ScalarType` enum a debug tensor refers to)

The schema has no unions and no structs; the parser refuses them so that a future schema that adds
one fails here, loudly, instead of producing wrong slots.

Usage: python scripts/gen_etdump_tables.py [--check]
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

from _codegen import REPO, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/container/_generated/etdump_schema.py"
FOLDER = "executorch/devtools/etdump"
SCHEMA_FILES = ("etdump_schema_flatcc.fbs", "scalar_type.fbs")

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


class FieldSpec(NamedTuple):
    name: str
    slot: int
    kind: str  # scalar | enum | string | table | vector | table_vector
    fmt: str  # struct format of the scalar / enum / vector element
    ref: str  # enum or table the field refers to
    default: int | float


def _strip(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def parse_enums(text: str) -> dict[str, tuple[str, dict[int, str]]]:
    enums: dict[str, tuple[str, dict[int, str]]] = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*:\s*(\w+)\s*\{(.*?)\}", _strip(text), re.S):
        values: dict[int, str] = {}
        nxt = 0
        for item in filter(None, (s.strip() for s in m.group(3).split(","))):
            name, _, val = (p.strip() for p in item.partition("="))
            nxt = int(val, 0) if val else nxt
            values[nxt] = name
            nxt += 1
        enums[m.group(1)] = (m.group(2), values)
    return enums


def parse_tables(
    text: str, enums: dict[str, tuple[str, dict[int, str]]]
) -> dict[str, list[FieldSpec]]:
    text = _strip(text)
    if re.search(r"\b(union|struct)\s+\w+", text):
        raise SystemExit("the ETDump schema now has a union or struct: extend this generator")
    names = set(re.findall(r"\btable\s+(\w+)", text))
    tables: dict[str, list[FieldSpec]] = {}
    for m in re.finditer(r"\btable\s+(\w+)\s*\{(.*?)\}", text, re.S):
        fields = []
        for slot, item in enumerate(filter(None, (s.strip() for s in m.group(2).split(";")))):
            fm = re.fullmatch(
                r"(\w+)\s*:\s*(\[?[\w.]+\]?)\s*(?:=\s*([\w.+-]+))?\s*(\(.*\))?", item, re.S
            )
            if fm is None:
                raise SystemExit(f"cannot parse field {item!r} of table {m.group(1)}")
            fname, ftype, default_text = fm.group(1), fm.group(2), fm.group(3)
            vec = ftype.startswith("[")
            base = ftype.strip("[]").split(".")[-1]
            default: int | float = 0
            if default_text is not None:
                default = float(default_text) if "." in default_text else int(default_text, 0)
            if base in SCALARS:
                spec = FieldSpec(
                    fname, slot, "vector" if vec else "scalar", SCALARS[base], "", default
                )
            elif base == "string":
                if vec:
                    raise SystemExit(f"vectors of strings are not expected ({fname})")
                spec = FieldSpec(fname, slot, "string", "", "", 0)
            elif base in enums:
                fmt = SCALARS[enums[base][0]]
                spec = FieldSpec(fname, slot, "vector" if vec else "enum", fmt, base, default)
            elif base in names:
                spec = FieldSpec(fname, slot, "table_vector" if vec else "table", "", base, 0)
            else:
                raise SystemExit(f"unknown type {ftype} of field {fname}")
            fields.append(spec)
        tables[m.group(1)] = fields
    return tables


def generate() -> str:
    # Found through the wheel's metadata rather than by importing executorch (which imports torch).
    loaded = {f: installed_file("executorch", f"{FOLDER}/{f}") for f in SCHEMA_FILES}
    main, scalar = loaded[SCHEMA_FILES[0]][1], loaded[SCHEMA_FILES[1]][1]
    enums = {**parse_enums(scalar), **parse_enums(main)}
    tables = parse_tables(main, enums)
    ident = re.search(r'file_identifier\s+"(\w{4})"', main)
    root = re.search(r"root_type\s+(\w+)", main)
    if ident is None or root is None:
        raise SystemExit("schema has no file_identifier/root_type")
    lines = [
        header(
            "ETDump schema tables: identifier, enums, fields with slots and defaults",
            "gen_etdump_tables.py",
            [source for source, _ in loaded.values()],
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class Field(NamedTuple):",
        "    name: str",
        "    slot: int  # vtable slot (declaration order)",
        "    kind: str  # scalar|enum|string|table|vector|table_vector",
        "    fmt: str  # struct format of the scalar / enum / vector element",
        "    ref: str  # enum or table the field refers to",
        "    default: int | float  # the schema default of a scalar or enum",
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
    lines += ["}", "", "TABLES: Final[dict[str, dict[str, Field]]] = {"]
    for name, fields in tables.items():
        lines.append(f"    {name!r}: {{")
        lines += [f"        {f.name!r}: Field{tuple(f)!r}," for f in fields]
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({OUT: generate()}, args.check)


if __name__ == "__main__":
    sys.exit(main())
