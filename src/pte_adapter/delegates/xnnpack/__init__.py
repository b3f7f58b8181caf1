"""XNNPACK delegate payloads: `XH00` header + `XN01`/`XN00` FlatBuffer + optional constant data.

Layout (ExecuTorch `backends/xnnpack/serialization/xnnpack_graph_serialize.py`, little-endian):
  bytes 0-3   zero (so that `XH00` sits where a FlatBuffer's identifier would)
  bytes 4-7   `XH00`
  bytes 8-9   u16 header length (30)
  bytes 10-13 u32 FlatBuffer offset    bytes 14-17 u32 FlatBuffer size
  bytes 18-21 u32 constant data offset bytes 22-29 u64 constant data size
Older payloads are a bare FlatBuffer (identifier at bytes 4-7, no header).

The graph is read generically from tables generated out of the pinned schema
(`scripts/gen_xnnpack_tables.py`): every node kind's fields become attributes without a hand-written
case per kind, and a node kind newer than those tables still shows up (as `unknown_node_<tag>`).
Constant bytes are never read: only their size and where they live (a named key resolved to a `.pte`
segment or a `.ptd` file, or an offset inside the payload). The only exception is the first few
per-channel scales, which are small and say more than a count.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.delegates.xnnpack._generated.xnnpack_schema import (
    ENUMS,
    FILE_IDENTIFIER,
    RUNTIME_FILE_IDENTIFIER,
    TABLES,
    UNIONS,
    Field,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode, TensorInfo

HEADER_MAGIC: Final = b"XH00"
MIN_HEADER_LENGTH: Final = 30
XNN_INVALID_VALUE_ID: Final = 0xFFFFFFFF  # "no operand" (e.g. a convolution without bias)
UINT64_MAX: Final = 0xFFFFFFFFFFFFFFFF  # ConstantDataOffset.offset when the data is named

# XNN_VALUE_FLAG_* bits of XNNTensorValue.flags (xnnpack.h; mirrored in xnnpack_constants.py).
VALUE_FLAGS: Final = {1: "external_input", 2: "external_output", 4: "persistent"}

# How many elements of a long vector (scales, permutations ...) an attribute shows.
PREVIEW: Final = 8

# XNNGraph slots, looked up by name so a schema change breaks loudly in one place.
_GRAPH = {f.name: f for f in TABLES["XNNGraph"]}
_XVALUE = {f.name: f for f in TABLES["XValue"]}
_TENSOR = {f.name: f for f in TABLES["XNNTensorValue"]}
_QTENSOR = {f.name: f for f in TABLES["XNNQuantizedTensorValue"]}

Scalar: TypeAlias = int | float | str


@dataclass
class Record:
    """A table read generically: its type name and its fields (schema order)."""

    type: str
    fields: dict[str, AttrValue] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # full length of truncated vectors


AttrValue: TypeAlias = Scalar | list[Scalar] | Record | tuple[str, Record] | None


def _int(v: AttrValue) -> int:
    """An integer field of a generically read record (absent or non-integer = 0)."""
    return int(v) if isinstance(v, (int, float)) else 0


@dataclass(frozen=True)
class Header:
    flatbuffer_offset: int
    flatbuffer_size: int
    constant_offset: int
    constant_size: int


# -- generic table reading ---------------------------------------------------------------------


def _enum_name(enum: str, value: int) -> str:
    name = ENUMS.get(enum, {}).get(value)
    return name if name is not None else f"{enum}_{value}"


def _vector_preview(t: Table, f: Field, limit: int) -> tuple[list[Scalar], int]:
    """The first `limit` elements of a scalar vector and its full length (nothing else is read)."""
    n = t.vector_len(f.slot, struct.calcsize("<" + f.fmt), f.name)
    if n == 0:
        return [], 0
    if n <= limit:
        vals = t.scalars(f.slot, f.fmt, f.name)
        return [_enum_name(f.ref, int(v)) if f.ref else v for v in vals], n
    # Read only the head: a per-channel scale vector can hold thousands of entries.
    start = _vector_start(t, f)
    size = struct.calcsize("<" + f.fmt)
    head = [t.fb.scalar(f.fmt, start + i * size) for i in range(limit)]
    return [_enum_name(f.ref, int(v)) if f.ref else v for v in head], n


def _vector_start(t: Table, f: Field) -> int:
    """Position of the first element of the (already length-checked) vector in slot `f.slot`."""
    entry = 4 + 2 * f.slot
    off = t.fb.u16(t.vt + entry)
    ref = t.fb.follow(t.pos + off, f"{t.what}.{f.name}")
    return ref + 4


def read_record(t: Table, type_name: str, limit: int = PREVIEW) -> Record:
    rec = Record(type_name)
    for f in TABLES.get(type_name, ()):
        if f.kind == "union":
            tag, sub = t.union(f.slot, f.name)
            if tag == 0:
                rec.fields[f.name] = None
                continue
            member = UNIONS[f.ref].get(tag)
            if member is None:
                rec.fields[f.name] = (f"{f.ref}_{tag}", Record(f"unknown_{tag}"))
            elif sub is None:
                rec.fields[f.name] = (member[0], Record(member[1]))
            else:
                rec.fields[f.name] = (member[0], read_record(sub, member[1], limit))
        elif f.kind == "scalar":
            value = t.scalar(f.slot, f.fmt)
            rec.fields[f.name] = int(value) if isinstance(value, bool) else value
        elif f.kind == "enum":
            rec.fields[f.name] = _enum_name(f.ref, t.int(f.slot, f.fmt))
        elif f.kind == "string":
            rec.fields[f.name] = t.string(f.slot, f.name)
        elif f.kind == "vector":
            vals, n = _vector_preview(t, f, limit)
            rec.fields[f.name] = vals
            if n > len(vals):
                rec.counts[f.name] = n
        elif f.kind == "table":
            sub = t.table(f.slot, f.name)
            rec.fields[f.name] = None if sub is None else read_record(sub, f.ref, limit)
        else:  # vectors of tables/strings are only used by XNNGraph, read by `decode`
            continue
    return rec


def _fmt_scalar(v: Scalar) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def format_value(v: AttrValue, count: int | None = None) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):
        body = ", ".join(_fmt_scalar(x) for x in v)
        if count is not None and count > len(v):
            return f"[{body}, ...] ({count} values)"
        return f"[{body}]"
    if isinstance(v, tuple):
        return f"{v[0]}({format_record(v[1])})"
    if isinstance(v, Record):
        return format_record(v)
    return _fmt_scalar(v)


def format_record(r: Record) -> str:
    return ", ".join(f"{k}={format_value(v, r.counts.get(k))}" for k, v in r.fields.items())


# -- header -----------------------------------------------------------------------------------


def read_header(payload: memoryview, part: str, base: int) -> Header:
    size = len(payload)
    if size < 8:
        raise PteFormatError(
            f"payload is {size} bytes; too small for XNNPACK", part=part, offset=base
        )
    magic = bytes(payload[4:8])
    if magic in (FILE_IDENTIFIER, RUNTIME_FILE_IDENTIFIER):
        # Header-less payload (written before XH00 existed): the FlatBuffer is all of it.
        return Header(0, size, size, 0)
    if magic != HEADER_MAGIC:
        raise PteFormatError(
            f"expected {HEADER_MAGIC!r} or an XNNPACK FlatBuffer identifier at bytes 4-7, "
            f"found {magic!r}",
            part=part,
            offset=base + 4,
        )
    if size < MIN_HEADER_LENGTH:
        raise PteFormatError(
            f"XH00 header needs {MIN_HEADER_LENGTH} bytes; the payload has {size}",
            part=part,
            offset=base,
        )
    (length,) = struct.unpack_from("<H", payload, 8)
    fb_off, fb_size, c_off, c_size = struct.unpack_from("<IIIQ", payload, 10)
    if length < MIN_HEADER_LENGTH:
        raise PteFormatError(
            f"XH00 header length {length} is less than {MIN_HEADER_LENGTH}",
            part=part,
            offset=base + 8,
        )
    if fb_size < 8 or fb_off < length or fb_off + fb_size > size:
        raise PteFormatError(
            f"XH00 header puts the FlatBuffer at [{fb_off}, {fb_off + fb_size}), outside the "
            f"{size}-byte payload (or overlapping the header)",
            part=part,
            offset=base + 10,
        )
    if c_off + c_size > size or (c_size and c_off < fb_off + fb_size):
        raise PteFormatError(
            f"XH00 header puts constant data at [{c_off}, {c_off + c_size}), outside the "
            f"{size}-byte payload (or overlapping the FlatBuffer)",
            part=part,
            offset=base + 18,
        )
    return Header(fb_off, fb_size, c_off, c_size)


# -- values -----------------------------------------------------------------------------------


def _dtype(name: str) -> str:
    return name.removeprefix("xnn_datatype_")


def _tensor_id(value_id: int) -> str:
    return f"v{value_id}"


@dataclass(frozen=True)
class ConstantRef:
    """One constant a value refers to: its size in bytes (wherever it is stored) and its
    attributes for people."""

    nbytes: int | None  # None: not a constant
    attrs: dict[str, str]


@dataclass
class _Constants:
    """Resolves ConstantDataOffset entries; counts what it found for the summary."""

    entries: list[Record]
    legacy_buffers: list[tuple[int, int]]  # deprecated XNNGraph.constant_buffer: (offset, size)
    header: Header
    ctx: DecodeContext
    payload_base: int | None
    total_bytes: int = 0
    named: int = 0
    external_files: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)
    in_payload: int = 0

    def describe(self, idx: int) -> ConstantRef:
        """Constant `idx` (0 = not a constant): its size and what to show of it."""
        if idx == 0:
            return ConstantRef(None, {})
        if self.entries:
            if idx >= len(self.entries):
                raise PteFormatError(
                    f"constant_buffer_idx {idx} is out of range ({len(self.entries)} constant "
                    "data entries)",
                    part="XNNPACK payload",
                )
            entry = self.entries[idx]
            size = _int(entry.fields.get("size"))
            key = str(entry.fields.get("named_key") or "")
            offset = _int(entry.fields.get("offset"))
            self.total_bytes += size
            attrs = {"constant_bytes": str(size), "constant_index": str(idx)}
            if key:
                self.named += 1
                attrs["named_key"] = key
                where = self._locate(key)
                if where is None:
                    self.missing.append(key)
                    attrs["data"] = "not found (named key missing from the .pte and any .ptd)"
                else:
                    source, at = where
                    attrs["data"] = f"{source} @ {at}"
                    if self.ctx.sources is None or source != self.ctx.sources.pte.name:
                        self.external_files[source] += 1
                return ConstantRef(size, attrs)
            if offset == UINT64_MAX:
                attrs["data"] = "none (no named key and no offset)"
                return ConstantRef(size, attrs)
            if offset + size > self.header.constant_size:
                raise PteFormatError(
                    f"constant {idx} spans [{offset}, {offset + size}) of a "
                    f"{self.header.constant_size}-byte constant data block",
                    part="XNNPACK payload",
                )
            self.in_payload += 1
            attrs["data"] = self._payload_at(self.header.constant_offset + offset)
            return ConstantRef(size, attrs)
        if idx < len(self.legacy_buffers):
            at, size = self.legacy_buffers[idx]
            self.total_bytes += size
            self.in_payload += 1
            return ConstantRef(
                size,
                {
                    "constant_bytes": str(size),
                    "constant_index": str(idx),
                    "data": self._payload_at(at) + " (inline constant_buffer)",
                },
            )
        raise PteFormatError(
            f"constant_buffer_idx {idx} refers to no constant data "
            f"({len(self.legacy_buffers)} inline buffers)",
            part="XNNPACK payload",
        )

    def _payload_at(self, payload_offset: int) -> str:
        if self.payload_base is None:
            return f"payload +{payload_offset}"
        return f"payload +{payload_offset} (file offset {self.payload_base + payload_offset})"

    def _locate(self, key: str) -> tuple[str, int] | None:
        if self.ctx.sources is None:
            return None
        found = self.ctx.sources.locate(key)
        return None if found is None else (found[0], found[1].offset)

    def head_floats(self, idx: int, count: int, bf16: bool) -> list[Scalar]:
        """The first few scales stored as constant `idx` (a named `scale_<sha256>` blob)."""
        if not 0 < idx < len(self.entries) or self.ctx.sources is None:
            return []
        key = str(self.entries[idx].fields.get("named_key") or "")
        found = self.ctx.sources.find(key) if key else None
        if found is None:
            return []
        width = 2 if bf16 else 4
        n = min(count, PREVIEW, len(found.data) // width)
        raw = bytes(found.data[: n * width])
        if bf16:  # bfloat16 = the upper half of a float32
            return [struct.unpack("<f", b"\0\0" + raw[2 * i : 2 * i + 2])[0] for i in range(n)]
        return list(struct.unpack(f"<{n}f", raw))


def _quant_attrs(quant: tuple[str, Record] | None, consts: _Constants) -> dict[str, str]:
    if quant is None:
        return {}
    kind, rec = quant
    f = rec.fields
    attrs = {"quantization": kind}
    if kind == "PerTensorQuant":
        attrs["scale"] = format_value(f.get("scale"))
        attrs["zero_point"] = format_value(f.get("zero_point"))
    elif kind in ("PerChannelQuant", "PerChannelGroupQuant"):
        attrs["channel_dim"] = format_value(f.get("channel_dim"))
        if kind == "PerChannelGroupQuant":
            attrs["group_size"] = format_value(f.get("group_size"))
        inline = f.get("scale")
        count = rec.counts.get("scale", len(inline) if isinstance(inline, list) else 0)
        head: list[Scalar] = inline if isinstance(inline, list) else []
        if not head:
            idx = _int(f.get("scale_buffer_idx"))
            count = _int(f.get("num_scales"))
            if idx:
                attrs["scale_data"] = consts.describe(idx).attrs.get("data", "")
                head = consts.head_floats(idx, count, kind == "PerChannelGroupQuant")
        attrs["num_scales"] = str(count)
        attrs["scales"] = format_value(head, count) if head else "(not read)"
    else:
        for k, v in f.items():
            attrs[k] = format_value(v, rec.counts.get(k))
    return attrs


def _tensor(value: Record, consts: _Constants, problems: list[str]) -> TensorInfo | None:
    union = value.fields.get("xvalue_union")
    if not isinstance(union, tuple):
        problems.append("an XValue has no value (empty union)")
        return None
    kind, rec = union
    quant: tuple[str, Record] | None = None
    if kind == "XNNQuantizedTensorValue":
        base = rec.fields.get("tensor_value")
        q = rec.fields.get("quant_params")
        quant = q if isinstance(q, tuple) else None
        if not isinstance(base, Record):
            problems.append("a quantized XValue has no tensor_value")
            return None
        rec = base
    elif kind != "XNNTensorValue":
        problems.append(f"XValue of unknown kind {kind} (newer schema?)")
        return None
    f = rec.fields
    vid = _int(f.get("id_out"))
    dims = f.get("dims")
    shape = [int(d) for d in dims] if isinstance(dims, list) else []
    if "dims" in rec.counts:  # more dims than the preview: read them all, they are the shape
        shape = []  # filled by the caller from the table when needed; shapes are short in practice
    attrs: dict[str, str] = {}
    flags = _int(f.get("flags"))
    if flags:
        names = [n for bit, n in VALUE_FLAGS.items() if flags & bit]
        rest = flags & ~sum(VALUE_FLAGS)
        attrs["flags"] = ", ".join(names + ([hex(rest)] if rest else []))
    ext = _int(f.get("external_id"))
    if ext != XNN_INVALID_VALUE_ID:
        attrs["external_id"] = str(ext)
    dq = f.get("dq_datatype")
    if isinstance(dq, str) and dq != "xnn_datatype_invalid":
        attrs["dq_datatype"] = _dtype(dq)
    attrs.update(_quant_attrs(quant, consts))
    constant = consts.describe(_int(f.get("constant_buffer_idx")))
    attrs.update(constant.attrs)
    role = "constant" if constant.nbytes is not None else ""
    if flags & 1:
        role = "input"
    elif flags & 2:
        role = "output"
    return TensorInfo(
        id=_tensor_id(vid),
        name=f"{role} {_tensor_id(vid)}".strip(),
        shape=shape,
        dtype=_dtype(str(f.get("datatype"))),
        attrs=attrs,
        constant_bytes=constant.nbytes,
    )


# -- nodes ------------------------------------------------------------------------------------


def _node(index: int, xnode: Record, problems: list[str]) -> OpNode:
    union = xnode.fields.get("xnode_union")
    attrs: dict[str, str] = {}
    params: dict[str, int] = {}  # the integer fields as numbers (geometry, groups, flags)
    inputs: list[str] = []
    outputs: list[str] = []
    if not isinstance(union, tuple):
        kind = "empty_node"
        problems.append(f"XNode {index} has no operation (empty union)")
    else:
        member, rec = union
        kind = member.removeprefix("XNN")
        if rec.type.startswith("unknown_"):
            kind = f"unknown_node_{rec.type.removeprefix('unknown_')}"
            problems.append(f"XNode {index}: node kind tag {kind} is newer than this reader")
        for name, v in rec.fields.items():
            # Operand ids are what links nodes; "output*" fields are results, the rest operands.
            if name.endswith("_id") and isinstance(v, int):
                if v == XNN_INVALID_VALUE_ID:
                    attrs[name] = "none"
                    continue
                (outputs if name.startswith("output") else inputs).append(_tensor_id(v))
                attrs[name] = str(v)
            elif name == "flags":
                attrs[name] = hex(int(v)) if isinstance(v, int) else format_value(v)
            else:
                attrs[name] = format_value(v, rec.counts.get(name))
            if isinstance(v, int) and not isinstance(v, bool) and not name.endswith("_id"):
                params[name] = v
    handle = xnode.fields.get("debug_handle")
    attrs["debug_handle"] = format_value(handle)
    mm = xnode.fields.get("output_min_max")
    if isinstance(mm, Record):
        attrs["output_min"] = format_value(mm.fields.get("output_min"))
        attrs["output_max"] = format_value(mm.fields.get("output_max"))
    return OpNode(
        id=f"xnode{index}",
        kind=kind,
        label=kind,
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        params=params,
    )


# -- entry point ------------------------------------------------------------------------------


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"XNNPACK payload ({ctx.delegate_id})"
    base = ctx.payload_offset or 0
    header = read_header(payload, part, base)
    fb = FlatBuffer(
        payload[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size],
        part,
        base=base + header.flatbuffer_offset,
    )
    ident = fb.identifier()
    if ident not in (FILE_IDENTIFIER, RUNTIME_FILE_IDENTIFIER):
        raise fb.error(
            f"expected FlatBuffer identifier {FILE_IDENTIFIER!r} or {RUNTIME_FILE_IDENTIFIER!r}, "
            f"found {ident!r}",
            4,
        )
    root = fb.root()
    problems: list[str] = []

    version = root.string(_GRAPH["version"].slot, "version") or ""
    input_ids = root.ints(_GRAPH["input_ids"].slot, "I", "input_ids")
    output_ids = root.ints(_GRAPH["output_ids"].slot, "I", "output_ids")
    num_externs = root.int(_GRAPH["num_externs"].slot, "I")

    entries = [
        read_record(t, "ConstantDataOffset")
        for t in root.iter_tables(_GRAPH["constant_data"].slot, "constant_data")
    ]
    legacy: list[tuple[int, int]] = []
    if not entries:
        for i, buf in enumerate(
            root.iter_tables(_GRAPH["constant_buffer"].slot, "constant_buffer")
        ):
            span = buf.bytes_span(TABLES["Buffer"][0].slot, f"constant_buffer[{i}]")
            # bytes_span gives file offsets; convert back to payload offsets for display
            legacy.append((span[0] - base, span[1]) if span else (0, 0))
    consts = _Constants(entries, legacy, header, ctx, ctx.payload_offset)

    graph = DelegateGraph(name="XNNPACK graph")
    for i, t in enumerate(root.iter_tables(_GRAPH["xvalues"].slot, "xvalues")):
        rec = read_record(t, "XValue")
        info = _tensor(rec, consts, problems)
        if info is None:
            continue
        if "dims" in _inner(rec).counts:
            info.shape = _full_dims(t)
        if info.id in graph.tensors:
            problems.append(f"xvalues[{i}] reuses value id {info.id}")
        graph.tensors[info.id] = info

    kinds: Counter[str] = Counter()
    for i, t in enumerate(root.iter_tables(_GRAPH["xnodes"].slot, "xnodes")):
        node = _node(i, read_record(t, "XNode"), problems)
        kinds[node.kind] += 1
        for tid in node.inputs + node.outputs:
            if tid not in graph.tensors:
                problems.append(f"XNode {i} ({node.kind}) refers to undefined value {tid}")
        graph.nodes.append(node)

    graph.inputs = [_tensor_id(v) for v in input_ids]
    graph.outputs = [_tensor_id(v) for v in output_ids]
    for tid in graph.inputs + graph.outputs:
        if tid not in graph.tensors:
            problems.append(f"graph input/output {tid} is not a defined value")

    kinds_text = ", ".join(
        f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    external = sum(consts.external_files.values())
    summary = {
        "format": f"XNNPACK {ident.decode()}"
        + (" (XH00 header)" if header.flatbuffer_offset else ""),
        "version": version,
        "nodes": str(len(graph.nodes)),
        "node_kinds": kinds_text,
        "values": str(len(graph.tensors)),
        "inputs": str(len(input_ids)),
        "outputs": str(len(output_ids)),
        "num_externs": str(num_externs),
        "constant_bytes": str(consts.total_bytes),
        "constants_named": str(consts.named),
        "constants_in_payload": str(consts.in_payload),
        "constants_external": (
            f"{external} in " + ", ".join(sorted(consts.external_files)) if external else "0"
        ),
    }
    if header.constant_size:
        summary["payload_constant_block"] = (
            f"{header.constant_size} bytes at +{header.constant_offset}"
        )
    if consts.missing:
        summary["constants_missing"] = str(len(consts.missing))
        problems.append(
            f"{len(consts.missing)} constant(s) name data that is in neither the .pte nor a .ptd "
            f"beside it (first key {consts.missing[0]!r})"
            + (f"; searched {ctx.sources.searched()}" if ctx.sources is not None else "")
        )
    graph.attrs = dict(summary)
    stats: dict[str, int | float | str] = {
        "xnn_nodes": len(graph.nodes),
        "xnn_values": len(graph.tensors),
        "constant_bytes": consts.total_bytes,
        "external_constants": external,
    }
    for k, n in kinds.items():
        stats[f"kind:{k}"] = n
    return DecodedDelegate(
        graphs=[graph],
        summary=summary,
        num_inputs=len(input_ids),
        num_outputs=len(output_ids),
        inner_op_count=len(graph.nodes),
        stats=stats,
        problems=problems,
    )


def _inner(xvalue: Record) -> Record:
    """The XNNTensorValue record inside an XValue (quantized or not)."""
    union = xvalue.fields.get("xvalue_union")
    if isinstance(union, tuple):
        rec = union[1]
        base = rec.fields.get("tensor_value")
        return base if isinstance(base, Record) else rec
    return Record("none")


def _full_dims(xvalue: Table) -> list[int]:
    tag, sub = xvalue.union(_XVALUE["xvalue_union"].slot, "xvalue_union")
    if sub is not None and UNIONS["XValueUnion"].get(tag, ("", ""))[1] == "XNNQuantizedTensorValue":
        sub = sub.table(_QTENSOR["tensor_value"].slot, "tensor_value")
    return [] if sub is None else sub.ints(_TENSOR["dims"].slot, "I", "dims")
