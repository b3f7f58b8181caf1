#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/coreml/_generated/coreml_proto.py`: the field tables of the
Core ML model specification, from the pinned coremltools' protos.

Why generated: a protobuf message is a list of (field number, wire type, bytes); which number is
which field, of which type, is only in the `.proto` files. coremltools ships them compiled
(`coremltools/proto/<File>_pb2.py`, each holding its serialized FileDescriptorProto); this script
reads their descriptors (importing coremltools, so it needs the `test` extra) and writes, for every
message of `Model.proto`, `FeatureTypes.proto`, `DataStructures.proto` and `MIL.proto`, each field
as (name, type, the message or enum it refers to, repeated), a map field marked as one, and those
files' enums. A field of a message outside these files (the NeuralNetwork layers, the classic
models) keeps its name and type; the reader reports its size instead of reading it.

Usage: python scripts/gen_coreml_proto.py [--check]
"""

from __future__ import annotations

import sys
from typing import Any

from _codegen import REPO, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/delegates/coreml/_generated/coreml_proto.py"
FILES = ("Model", "FeatureTypes", "DataStructures", "MIL")


def _type_name(field: Any) -> str:
    from google.protobuf.descriptor import FieldDescriptor as F

    names = {
        F.TYPE_DOUBLE: "double",
        F.TYPE_FLOAT: "float",
        F.TYPE_INT64: "int64",
        F.TYPE_UINT64: "uint64",
        F.TYPE_INT32: "int32",
        F.TYPE_FIXED64: "fixed64",
        F.TYPE_FIXED32: "fixed32",
        F.TYPE_BOOL: "bool",
        F.TYPE_STRING: "string",
        F.TYPE_MESSAGE: "message",
        F.TYPE_BYTES: "bytes",
        F.TYPE_UINT32: "uint32",
        F.TYPE_ENUM: "enum",
        F.TYPE_SFIXED32: "sfixed32",
        F.TYPE_SFIXED64: "sfixed64",
        F.TYPE_SINT32: "sint32",
        F.TYPE_SINT64: "sint64",
    }
    if field.type not in names:
        raise SystemExit(f"field {field.full_name} has a type this generator does not know")
    return names[field.type]


def _messages(desc: Any, out: dict[str, Any], enums: dict[str, dict[int, str]]) -> None:
    for enum in desc.enum_types:
        enums[enum.full_name] = {v.number: v.name for v in enum.values}
    for nested in desc.nested_types:
        _messages(nested, out, enums)
    fields = []
    for f in desc.fields:
        kind = _type_name(f)
        ref = ""
        if kind == "message":
            ref = f.message_type.full_name
        elif kind == "enum":
            ref = f.enum_type.full_name
        is_map = kind == "message" and f.message_type.GetOptions().map_entry
        repeated = bool(f.is_repeated)
        fields.append((f.number, f.name, "map" if is_map else kind, ref, repeated))
    out[desc.full_name] = (desc.GetOptions().map_entry, sorted(fields))


def generate() -> str:
    import importlib

    sources = []
    messages: dict[str, Any] = {}
    enums: dict[str, dict[int, str]] = {}
    for name in FILES:
        source, _ = installed_file("coremltools", f"coremltools/proto/{name}_pb2.py")
        sources.append(source)
        module = importlib.import_module(f"coremltools.proto.{name}_pb2")
        for enum in module.DESCRIPTOR.enum_types_by_name.values():
            enums[enum.full_name] = {v.number: v.name for v in enum.values}
        for desc in module.DESCRIPTOR.message_types_by_name.values():
            _messages(desc, messages, enums)
    lines = [
        header(
            "Core ML model specification: protobuf messages, fields and enums",
            "gen_coreml_proto.py",
            sources,
            "Read from the descriptors the compiled protos hold (Model, FeatureTypes,\n"
            "DataStructures and MIL .proto).",
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class Field(NamedTuple):",
        "    name: str",
        "    kind: str  # a protobuf scalar type, 'string', 'bytes', 'enum', 'message' or 'map'",
        "    ref: str  # the message (or map entry) or enum it refers to",
        "    repeated: bool",
        "",
        "",
        "# Message -> (is a map entry, field number -> Field).",
        "MESSAGES: Final[dict[str, tuple[bool, dict[int, Field]]]] = {",
    ]
    for name in sorted(messages):
        entry, fields = messages[name]
        lines.append(f"    {name!r}: ({entry!r}, {{")
        for number, fname, kind, ref, repeated in fields:
            lines.append(f"        {number}: Field({fname!r}, {kind!r}, {ref!r}, {repeated!r}),")
        lines.append("    }),")
    lines += ["}", "", "ENUMS: Final[dict[str, dict[int, str]]] = {"]
    for name in sorted(enums):
        lines.append(f"    {name!r}: {{")
        lines += [f"        {v}: {n!r}," for v, n in enums[name].items()]
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({OUT: generate()}, args.check)


if __name__ == "__main__":
    sys.exit(main())
