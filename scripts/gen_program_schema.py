#!/usr/bin/env python3
"""Generate the `.pte` and `.ptd` schema modules from the FlatBuffers schemas of the pinned
ExecuTorch wheel:

- `src/pte_adapter/container/_generated/program_schema.py` from
  `executorch/exir/_serialize/program.fbs` (+ its `scalar_type.fbs`): the files ExecuTorch's
  serializer compiles when it writes a `.pte` (`exir/_serialize/_flatbuffer.py`);
- `src/pte_adapter/container/_generated/flat_tensor_schema.py` from
  `executorch/extension/flat_tensor/serialize/flat_tensor.fbs` (+ its `scalar_type.fbs`): what
  writes a `.ptd`.

Why generated: the readers address every field by vtable slot (field i in declaration order is
slot i; a union field takes two, its type tag's and its value's) and compare enum values and union
tags. Typed by hand, one inserted field shifts every slot after it silently; generated, a new field
is a re-run and a diff. Both modules live in `container/` because `container/pte.py` already reads
`Program.segments`, and the container layer must not import the program layer above it.

Each table becomes a class of slot constants, each enum and union an `IntEnum`, so a reader names
`Tensor.scalar_type` or `KernelTypes.IntList` and mypy checks the name. The parser knows the subset
of the FlatBuffers grammar these schemas use and refuses the rest (structs, explicit `id:`
attributes, vectors of unions) so that a schema that starts using one fails here, loudly, instead of
producing wrong slots.

Usage: python scripts/gen_program_schema.py [--check]
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from _codegen import REPO, Source, emit, header, installed_file, parser

SCRIPT = "gen_program_schema.py"
OUT_DIR = REPO / "src/pte_adapter/container/_generated"


@dataclass(frozen=True)
class Target:
    out: Path
    schema: str  # path inside the executorch wheel
    what: str  # first line of the generated module


TARGETS = (
    Target(
        OUT_DIR / "program_schema.py",
        "executorch/exir/_serialize/program.fbs",
        "ExecuTorch program schema (`.pte`): identifier, enums, union tags, table slots",
    ),
    Target(
        OUT_DIR / "flat_tensor_schema.py",
        "executorch/extension/flat_tensor/serialize/flat_tensor.fbs",
        "ExecuTorch FlatTensor schema (`.ptd`): identifier, enums, table slots",
    ),
)

NOTES = """\
A table's class gives the vtable slot of each field (declaration order). A union field takes two
slots: its type tag's, which is the one named here, and its value's, one more. Enums and unions
(tag 0 = NONE) are IntEnums. The comment after a slot is the field's type as the schema writes it."""


@dataclass
class FieldDecl:
    name: str
    type: str  # as written, namespace removed: "ScalarType", "[int]", "KernelTypes"
    default: str | None
    deprecated: bool


@dataclass
class Schema:
    enums: dict[str, tuple[str, list[tuple[str, int]]]] = field(default_factory=dict)
    unions: dict[str, list[str]] = field(default_factory=dict)  # name -> members, tag = index + 1
    tables: dict[str, list[FieldDecl]] = field(default_factory=dict)
    file_identifier: str = ""
    file_extension: str = ""
    root_type: str = ""
    origin: dict[str, str] = field(default_factory=dict)  # declaration -> schema file it is in


_BLOCK = re.compile(r"\b(enum|union|table|struct)\s+(\w+)\s*(?::\s*(\w+))?\s*\{(.*?)\}", re.S)
_FIELD = re.compile(r"(\w+)\s*:\s*(\[?[\w.]+\]?)\s*(?:=\s*([\w.+-]+))?\s*(?:\((.*)\))?", re.S)


def _strip_namespace(type_text: str) -> str:
    """`executorch_flatbuffer.ScalarType` -> `ScalarType` (also inside `[...]`)."""
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", type_text)


def _check_name(name: str, where: str, enum_member: bool = False) -> None:
    if (
        keyword.iskeyword(name)
        or name.startswith("_")
        or (enum_member and name in ("name", "value"))
    ):
        raise SystemExit(f"{where}: {name!r} cannot be a Python attribute; extend this generator")


def parse(text: str, origin: str, schema: Schema) -> None:
    text = re.sub(r"//[^\n]*", "", text)
    for kind, name, base, body in _BLOCK.findall(text):
        _check_name(name, origin)
        schema.origin[name] = origin
        if kind == "struct":
            raise SystemExit(f"{origin}: struct {name} is new; extend this generator")
        if kind == "enum":
            values: list[tuple[str, int]] = []
            nxt = 0
            for item in filter(None, (s.strip() for s in body.split(","))):
                member, _, num = (p.strip() for p in item.partition("="))
                _check_name(member, f"enum {name}", enum_member=True)
                nxt = int(num, 0) if num else nxt
                values.append((member, nxt))
                nxt += 1
            schema.enums[name] = (base or "int", values)
        elif kind == "union":
            members = []
            for item in filter(None, (s.strip() for s in body.split(","))):
                member = item.partition(":")[0].strip()  # `Alias: Table` is tagged `Alias`
                _check_name(member, f"union {name}", enum_member=True)
                members.append(member)
            schema.unions[name] = members
        else:
            fields = []
            for item in filter(None, (s.strip() for s in body.split(";"))):
                m = _FIELD.fullmatch(item)
                if m is None:
                    raise SystemExit(f"{origin}: cannot parse field {item!r} of table {name}")
                attrs = m.group(4) or ""
                if re.search(r"\bid\s*:", attrs):
                    raise SystemExit(f"{origin}: {name}.{m.group(1)} sets its id; slots would move")
                _check_name(m.group(1), f"table {name}")
                fields.append(
                    FieldDecl(
                        m.group(1),
                        _strip_namespace(m.group(2)),
                        m.group(3),
                        "deprecated" in attrs,
                    )
                )
            schema.tables[name] = fields
    for key, attr in (
        ("file_identifier", "file_identifier"),
        ("file_extension", "file_extension"),
        ("root_type", "root_type"),
    ):
        found = re.search(rf'\b{key}\s+"?(\w+)"?\s*;', text)
        if found:
            setattr(schema, attr, found.group(1))


def load(target: str) -> tuple[Schema, list[Source]]:
    """The schema file and every file it includes (same folder), includes first."""
    schema = Schema()
    sources: list[Source] = []
    folder = target.rsplit("/", 1)[0]

    def visit(path: str) -> None:
        if any(s.path == path for s in sources):
            return
        source, text = installed_file("executorch", path)
        for inc in re.findall(r'^\s*include\s+"([^"]+)"\s*;', text, re.M):
            visit(f"{folder}/{inc}")
        sources.append(source)
        parse(text, path.rsplit("/", 1)[1], schema)

    visit(target)
    sources.insert(0, sources.pop())  # the schema itself first, then what it includes
    if not (schema.file_identifier and schema.root_type):
        raise SystemExit(f"{target} has no file_identifier/root_type")
    return schema, sources


def render(target: Target) -> str:
    schema, sources = load(target.schema)
    lines = [
        header(target.what, SCRIPT, sources, NOTES) + "from __future__ import annotations",
        "",
        "import enum",
        "from typing import Final",
        "",
        f"FILE_IDENTIFIER: Final = {schema.file_identifier.encode()!r}",
        f"FILE_EXTENSION: Final = {schema.file_extension!r}",
        f"ROOT_TYPE: Final = {schema.root_type!r}",
    ]
    for name, (base, values) in schema.enums.items():
        lines += ["", "", f"class {name}(enum.IntEnum):"]
        lines += [f'    """enum {name} : {base} ({schema.origin[name]})."""', ""]
        lines += [f"    {member} = {num}" for member, num in values]
    for name, members in schema.unions.items():
        lines += ["", "", f"class {name}(enum.IntEnum):"]
        lines += [f'    """union {name}: member -> type tag."""', "", "    NONE = 0"]
        lines += [f"    {member} = {tag}" for tag, member in enumerate(members, start=1)]
    for name, fields in schema.tables.items():
        lines += ["", "", f"class {name}:"]
        if not fields:
            lines.append(f'    """table {name}: no fields."""')
            continue
        lines += [f'    """table {name}: field -> vtable slot."""', ""]
        slot = 0
        for f in fields:
            if f.type.strip("[]") in schema.unions and f.type.startswith("["):
                raise SystemExit(
                    f"{name}.{f.name}: vectors of unions are new; extend this generator"
                )
            is_union = f.type in schema.unions
            note = f.type + (f" = {f.default}" if f.default is not None else "")
            if is_union:
                note = f"union {f.type}: type tag at slot {slot}, value at slot {slot + 1}"
            if f.deprecated:
                note += " (deprecated)"
            lines.append(f"    {f.name}: Final = {slot}  # {note}")
            slot += 2 if is_union else 1
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({t.out: render(t) for t in TARGETS}, args.check)


if __name__ == "__main__":
    sys.exit(main())
