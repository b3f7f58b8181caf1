#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/tosa/_generated/tosa_schema.py` from the pinned TOSA FlatBuffers schemas.

The TOSA reader needs three kinds of schema facts: enum values (operators, data types, modes),
the member list of the `Attribute` union with each attribute table's fields, and the slot of every
field of the structural tables (graph, region, block, operator, tensor). Typing those by hand is
how readers end up one enum value off, so they are read from the schema files that ship in the
pinned dependencies:

- `executorch/backends/arm/tosa/schemas/tosa_1.0.fbs`  (executorch; what ExecuTorch writes)
- `executorch/backends/arm/tosa/schemas/tosa_1.1.fbs`  (executorch)
- `bin/tosa.fbs`                                      (tosa-tools; the newest draft)

TOSA schemas only ever append, so one superset table can serve every 1.x file; the generator
checks that claim (an older schema's enums and table fields must be a prefix of the newer one's)
and records in which schema each operator first appears, so the reader can flag an operator that
does not belong to the version a file declares.

Usage:
    python scripts/gen_tosa_tables.py            # (re)write the tables
    python scripts/gen_tosa_tables.py --check    # exit 1 when the committed tables are stale
"""

from __future__ import annotations

import importlib.metadata
import itertools
import pprint
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from _codegen import REPO, Source, emit, header, installed_file, parser

OUTPUT = REPO / "src" / "pte_adapter" / "delegates" / "tosa" / "_generated" / "tosa_schema.py"

# Tables whose field slots the reader addresses by name.
STRUCTURAL_TABLES = (
    "Version",
    "SoftwareVersion",
    "TosaGraph",
    "TosaRegion",
    "TosaBasicBlock",
    "TosaOperator",
    "OpLocation",
    "TosaTensor",
    "TosaShape",
)

# Enums the attribute decoder turns into names (besides Op and DType, which get their own tables).
ATTRIBUTE_ENUMS = ("NanPropagationMode", "ResizeMode", "RoundingMode", "BlockSize", "BlockShape")


@dataclass
class Schema:
    label: str  # e.g. "1.0"
    source: Source  # where it came from, for the generated header
    enums: dict[str, tuple[str, list[tuple[str, int]]]] = field(default_factory=dict)
    unions: dict[str, list[str]] = field(default_factory=dict)
    tables: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name -> (field, type)


_BLOCK = re.compile(r"\b(enum|union|table|struct)\s+(\w+)\s*(?::\s*(\w+))?\s*\{(.*?)\}", re.S)
_FIELD = re.compile(r"^\s*(\w+)\s*:\s*(\[?\s*[\w.]+\s*\]?)")


def parse_fbs(text: str, label: str, source: Source) -> Schema:
    text = re.sub(r"//[^\n]*", "", text)
    schema = Schema(label, source)
    for kind, name, base, body in _BLOCK.findall(text):
        if kind == "enum":
            values: list[tuple[str, int]] = []
            nxt = 0
            for item in body.split(","):
                item = item.strip()
                if not item:
                    continue
                if "=" in item:
                    key, _, num = item.partition("=")
                    nxt = int(num.strip(), 0)
                    item = key.strip()
                values.append((item, nxt))
                nxt += 1
            schema.enums[name] = (base, values)
        elif kind == "union":
            schema.unions[name] = [m.strip() for m in body.split(",") if m.strip()]
        elif kind == "table":
            fields = []
            for decl in body.split(";"):
                m = _FIELD.match(decl)
                if m:
                    fields.append((m.group(1), re.sub(r"\s+", "", m.group(2))))
            schema.tables[name] = fields
        else:
            raise SystemExit(f"{source.path}: structs are not expected in a TOSA schema ({name})")
    return schema


def check_append_only(old: Schema, new: Schema) -> None:
    """Fail unless `new` only appends to `old` (the premise of one superset table)."""
    for name, (_, values) in old.enums.items():
        newer = dict(new.enums[name][1])
        for key, num in values:
            if newer.get(key) != num:
                raise SystemExit(
                    f"enum {name}.{key}: {num} in {old.label}, {newer.get(key)} in {new.label}"
                )
    for name, members in old.unions.items():
        if new.unions[name][: len(members)] != members:
            raise SystemExit(f"union {name} of {old.label} is not a prefix of {new.label}'s")
    for name, fields in old.tables.items():
        if new.tables.get(name, [])[: len(fields)] != fields:
            raise SystemExit(f"table {name} of {old.label} is not a prefix of {new.label}'s")


def default_sources() -> list[tuple[str, Source, str]]:
    """(label, source, text) of each schema, oldest first."""
    tt_files = importlib.metadata.files("tosa-tools") or []
    tt_fbs = next((f for f in tt_files if str(f).replace("\\", "/").endswith("bin/tosa.fbs")), None)
    if tt_fbs is None:
        raise SystemExit("tosa-tools does not ship bin/tosa.fbs in this install")
    out = []
    for version in ("1.0", "1.1"):
        source, text = installed_file(
            "executorch", f"executorch/backends/arm/tosa/schemas/tosa_{version}.fbs"
        )
        out.append((version, source, text))
    source, text = installed_file("tosa-tools", str(tt_fbs).replace("\\", "/"))
    out.append((f"tosa-tools {source.version}", source, text))
    return out


def _since(schemas: list[Schema], present: dict[str, set[str]], key: str) -> str:
    return next(s.label for s in schemas if key in present[s.label])


def render(schemas: list[Schema]) -> str:
    newest = schemas[-1]
    op_present = {s.label: {k for k, _ in s.enums["Op"][1]} for s in schemas}
    ops = {num: key for key, num in newest.enums["Op"][1]}
    op_since = {num: _since(schemas, op_present, key) for num, key in ops.items()}
    dtypes = {num: key for key, num in newest.enums["DType"][1]}
    enums = {
        name: {num: key for key, num in newest.enums[name][1]}
        for name in ATTRIBUTE_ENUMS
        if name in newest.enums
    }
    enum_bases = {name: base for name, (base, _) in newest.enums.items()}
    members = newest.unions["Attribute"]
    attributes = {tag: (t, tuple(newest.tables[t])) for tag, t in enumerate(members, start=1)}
    slots: dict[str, dict[str, int]] = {}
    for table in STRUCTURAL_TABLES:
        slot = 0
        slots[table] = {}
        for fname, ftype in newest.tables[table]:
            slots[table][fname] = slot
            # A union field takes two slots: its type tag, then its value.
            slot += 2 if ftype in newest.unions else 1
    counts = {s.label: len(s.enums["Op"][1]) for s in schemas}

    def block(name: str, annotation: str, value: object, why: str) -> str:
        return (
            f"# {why}\n{name}: {annotation} = {pprint.pformat(value, width=100, sort_dicts=True)}\n"
        )

    parts = [
        header(
            "TOSA schema facts: enums, the Attribute union's tables, structural table slots",
            "gen_tosa_tables.py",
            [s.source for s in schemas],
            "TOSA schemas only append: the generator checked that each is a prefix of the next.",
        )
        + "from __future__ import annotations\n",
        block(
            "SCHEMA_LABELS",
            "tuple[str, ...]",
            tuple(s.label for s in schemas),
            "Schema labels, oldest first.",
        ),
        block(
            "OP_COUNT_BY_SCHEMA",
            "dict[str, int]",
            counts,
            "Number of Op enum values (incl. UNKNOWN=0) in each schema.",
        ),
        block("OP_NAMES", "dict[int, str]", ops, "Op enum: value -> name (newest schema)."),
        block("OP_SINCE", "dict[int, str]", op_since, "Op enum value -> first schema that has it."),
        block("DTYPE_NAMES", "dict[int, str]", dtypes, "DType enum: value -> name."),
        block(
            "ENUM_NAMES",
            "dict[str, dict[int, str]]",
            enums,
            "Other enums used by attribute tables: enum -> value -> name.",
        ),
        block(
            "ENUM_BASE_TYPES",
            "dict[str, str]",
            enum_bases,
            "Underlying integer type of every enum (decides how a field is read).",
        ),
        block(
            "ATTRIBUTE_TABLES",
            "dict[int, tuple[str, tuple[tuple[str, str], ...]]]",
            attributes,
            "Attribute union tag -> (table name, ((field, schema type), ...)) in slot order.",
        ),
        block(
            "SLOTS",
            "dict[str, dict[str, int]]",
            slots,
            "Field slots of the structural tables (a union field's slot is its type tag's).",
        ),
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args(argv)
    schemas = [parse_fbs(text, label, src) for label, src, text in default_sources()]
    for old, new in itertools.pairwise(schemas):
        check_append_only(old, new)
    return emit({args.output: render(schemas)}, args.check)


if __name__ == "__main__":
    sys.exit(main())
