"""A minimal `.pte` writer for hostile programs (issue 44): a real example's program as JSON, edited,
and written back, all through ExecuTorch's own schema and `flatc` (the JSON path its serializer
took before its object API, `executorch.exir._serialize._flatbuffer`), with its segments carried
over and its extended header made by ExecuTorch's `_ExtendedHeader`.

`flatc` takes about 30 us per table, so a vector of a hundred thousand tables is written another
way: `repeat_tables` puts `n` copies of one run of tables (made by ExecuTorch's generated
FlatBuffers code, or `flatbuffers.Builder`) after the buffer and points the vector field at them.
Every offset inside a FlatBuffer is relative, so a run whose vtables and vectors lie inside it
reads the same wherever it is copied to.

The Vulkan payload (`vulkan_payload`) is written the way ExecuTorch's Vulkan serializer writes it
(its schema, `flatc`, its `VulkanDelegateHeader`); a Core ML payload is a folder flattened by
ExecuTorch's `executorchcoreml` (`coreml_folder`, `flatten_folder`), or, for an index no file
system can hold (a folder chain 40,000 deep), written as `inmemoryfs` writes it (`flat_folder`).
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEGMENT_ALIGNMENT = 128


@dataclass(frozen=True)
class Unit:
    """A run of FlatBuffer objects that reads the same wherever it lies (offsets inside it only),
    and where, inside it, the tables a vector lists are."""

    data: bytes
    entries: tuple[int, ...]


# --- the program --------------------------------------------------------------------------


def program_json(pte: Path) -> tuple[dict[str, Any], list[bytes]]:
    """A real program as ExecuTorch's `flatc` reads it (JSON), and the bytes of its segments."""
    from executorch.exir._serialize._flatbuffer import _program_flatbuffer_to_json
    from executorch.exir._serialize._program import _get_extended_header

    data = pte.read_bytes()
    program = json.loads(_program_flatbuffer_to_json(data))
    header = _get_extended_header(data)
    base = header.segment_base_offset if header is not None else 0
    segments = [
        data[base + s["offset"] : base + s["offset"] + s["size"]] for s in program["segments"]
    ]
    return program, segments


def _flatc(schema_dir: Callable[[str], str], document: dict[str, Any]) -> bytes:
    from executorch.exir._serialize._flatbuffer import _flatc_compile

    with tempfile.TemporaryDirectory() as d:
        schema = schema_dir(d)
        path = os.path.join(d, "document.json")
        Path(path).write_text(json.dumps(document))
        _flatc_compile(d, schema, path)
        (out,) = [p for p in Path(d).iterdir() if p.stem == "document" and p.suffix != ".json"]
        return out.read_bytes()


def write_program(
    program: dict[str, Any],
    segments: Sequence[bytes],
    dst: Path,
    edit: Callable[[bytearray], None] | None = None,
) -> Path:
    """`program` (JSON, as `program_json` gives it) written by ExecuTorch's `flatc` with its
    schema, `edit`ed as bytes (before the extended header goes in: every offset is relative), and
    followed by `segments`, each at a 128-byte boundary, as `serialize_pte_binary` lays them."""
    from executorch.exir._serialize._flatbuffer import _prepare_schema
    from executorch.exir._serialize._program import _ExtendedHeader, _insert_flatbuffer_header
    from executorch.exir._serialize.padding import aligned_size, pad_to, padding_required

    offset = 0
    program["segments"] = []
    for s in segments:
        offset = aligned_size(offset, SEGMENT_ALIGNMENT)
        program["segments"].append({"offset": offset, "size": len(s)})
        offset += len(s)
    alignment: list[int] = []

    def schema(d: str) -> str:
        info = _prepare_schema(d)
        alignment.append(info.max_alignment)
        return info.root_path

    fb = bytearray(_flatc(schema, program))
    if edit is not None:
        edit(fb)
    if not segments:
        dst.write_bytes(bytes(fb))
        return dst
    header_length = aligned_size(_ExtendedHeader.EXPECTED_LENGTH, alignment[0])
    program_size = header_length + len(fb)
    base = aligned_size(program_size, SEGMENT_ALIGNMENT)
    header = _ExtendedHeader(
        program_size=program_size, segment_base_offset=base, segment_data_size=offset
    ).to_bytes()
    with dst.open("wb") as out:
        out.write(
            _insert_flatbuffer_header(bytes(fb), r"ET[0-9a-zA-Z]{2}", pad_to(header, header_length))
        )
        out.write(b"\0" * (base - program_size))
        written = 0
        for s, placed in zip(segments, program["segments"], strict=True):
            out.write(b"\0" * (placed["offset"] - written))
            out.write(s)
            written = placed["offset"] + len(s)
        out.write(b"\0" * padding_required(written, 16))
    return dst


def program_tables(*objects: Any) -> Unit:
    """A run of tables made by ExecuTorch's generated FlatBuffers code (`InstructionT(...)`,
    `BackendDelegateT(...)`, each packed with what it refers to); the vector will list each."""
    import flatbuffers

    builder = flatbuffers.Builder(0)
    ends = [obj.Pack(builder) for obj in objects]
    return _unit(builder, ends)


def _unit(builder: Any, ends: list[int]) -> Unit:
    """The bytes a `flatbuffers.Builder` wrote (positions of `ends`: offsets from the end), put
    in front of 8-aligned copies (the builder aligns from the end)."""
    builder.Finish(ends[0])
    data = bytes(builder.Output())
    pad = -len(data) % 8
    return Unit(b"\0" * pad + data, tuple(pad + len(data) - e for e in ends))


def repeat_tables(fb: bytearray, field: int, unit: Unit, n: int) -> None:
    """Point the vector-of-tables field at byte `field` of `fb` at a new vector of `n` copies of
    `unit`'s tables (each copy lists its tables in order), all put after the buffer."""
    fb.extend(b"\0" * (-len(fb) % 8))
    vector = len(fb)
    m = len(unit.entries)
    count = n * m
    start = vector + 4 + 4 * count
    start += -start % 8
    size = len(unit.data)
    offsets = array("I", bytes(4 * count))
    for j, entry in enumerate(unit.entries):
        # Element j + m*k sits at vector + 4 + 4*(j + m*k); its table at start + k*size + entry.
        first = start + entry - (vector + 4 + 4 * j)
        offsets[j::m] = array("I", range(first, first + n * (size - 4 * m), size - 4 * m))
    fb.extend(struct.pack("<I", count))
    fb.extend(offsets.tobytes())
    fb.extend(b"\0" * (start - len(fb)))
    fb.extend(unit.data * n)
    struct.pack_into("<I", fb, field, vector - field)


def field_position(table: Any, slot: int) -> int:
    """Where a table's (uoffset) field is, from the project's own reader (`Table._field`)."""
    pos = int(table._field(slot, 4))
    assert pos, f"slot {slot} is absent"
    return pos


# --- delegate payloads --------------------------------------------------------------------


def vulkan_payload(graph: dict[str, Any], edit: Callable[[bytearray], None] | None = None) -> bytes:
    """A `VkGraph` (JSON of ExecuTorch's Vulkan schema) as ExecuTorch's Vulkan serializer writes
    it: `flatc` with its `schema.fbs`, then its `VulkanDelegateHeader`; no raw bytes."""
    import importlib.resources

    import executorch.backends.vulkan.serialization as package
    from executorch.backends.vulkan.serialization.vulkan_graph_serialize import (
        VulkanDelegateHeader,
        aligned_size,
        pad_to,
    )

    def schema(d: str) -> str:
        path = os.path.join(d, "schema.fbs")
        Path(path).write_bytes(
            importlib.resources.files(package).joinpath("schema.fbs").read_bytes()
        )
        return path

    fb = bytearray(_flatc(schema, graph))
    if edit is not None:
        edit(fb)
    header_length = aligned_size(VulkanDelegateHeader.EXPECTED_LENGTH)
    size = aligned_size(len(fb))
    header = VulkanDelegateHeader(
        flatbuffer_offset=header_length,
        flatbuffer_size=len(fb),
        bytes_offset=header_length + size,
        bytes_size=0,
    ).to_bytes()
    return pad_to(header, header_length) + pad_to(bytes(fb), size)


def vulkan_tables(build: Callable[[Any], list[int]]) -> Unit:
    """A run of VkGraph tables written with `flatbuffers.Builder` (`build(builder)` returns the
    offsets of the tables a vector will list); ExecuTorch has no generated Python for this schema,
    so the slots are the ones generated from its `schema.fbs` (`vulkan_schema.TABLES`)."""
    import flatbuffers

    builder = flatbuffers.Builder(0)
    return _unit(builder, build(builder))


def vulkan_slot(table: str, name: str) -> int:
    from pte_adapter.delegates.vulkan._generated.vulkan_schema import TABLES

    return next(f.slot for f in TABLES[table] if f.name == name)


def flat_folder(files: dict[str, bytes], index: dict[str, Any] | None = None) -> bytes:
    """A folder flattened as ExecuTorch's `inmemoryfs` does (`flatten_directory_contents`): the
    files' bytes one after another, then the index `{"nodes": [...]}` (a folder's children before
    it, the root last) as compact JSON with sorted keys, written backwards. `files` maps "/"-joined
    paths under the root folder "lowered_module" to bytes, in the order ExecuTorch writes them;
    `index` is merged into the index document (extra keys)."""
    nodes: list[dict[str, Any]] = []
    data = bytearray()
    tree: dict[str, Any] = {}
    for path, body in files.items():
        folder = tree
        *parents, name = path.split("/")
        for part in parents:
            folder = folder.setdefault(part, {})
        folder[name] = (len(data), len(body))
        data += body

    def visit(name: str, node: Any) -> int:
        if isinstance(node, tuple):
            nodes.append(
                {
                    "children": {},
                    "dataRegion": {"offset": node[0], "size": node[1]},
                    "kind": 0,
                    "name": name,
                }
            )
            return len(nodes) - 1
        children = {child: visit(child, sub) for child, sub in node.items()}
        nodes.append(
            {"children": children, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": name}
        )
        return len(nodes) - 1

    visit("lowered_module", tree)
    document = {"nodes": nodes, **(index or {})}
    text = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return bytes(data) + text[::-1]


def coreml_folder(payload: bytes) -> dict[str, bytes]:
    """A Core ML payload's files by path under its root folder, unflattened by ExecuTorch's
    `executorchcoreml`."""
    from executorch.backends.apple.coreml import executorchcoreml

    with tempfile.TemporaryDirectory() as d:
        assert executorchcoreml.unflatten_directory_contents(payload, d)
        (root,) = Path(d).iterdir()
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }


def flatten_folder(files: dict[str, bytes]) -> bytes:
    """`files` (paths under the root folder) written to disk and flattened by ExecuTorch's
    `executorchcoreml.flatten_directory_contents`, as its Core ML backend does."""
    from executorch.backends.apple.coreml import executorchcoreml

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "lowered_module"
        for path, body in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(body)
        flat = executorchcoreml.flatten_directory_contents(str(root))
    assert flat is not None
    return bytes(flat)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def proto_field(number: int, body: bytes) -> bytes:
    """One length-delimited protobuf field (a message, a string or a map entry)."""
    return varint(number << 3 | 2) + varint(len(body)) + body
