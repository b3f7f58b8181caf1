"""XNNPACK values and nodes: tensors with their quantization and constants (sizes and where the
bytes live, never the bytes), and each XNode as a neutral operation."""

from __future__ import annotations

import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.xnnpack._generated.xnnpack_schema import (
    DEFAULT_DEBUG_HANDLE,
    ENUMS,
    UNIONS,
)
from pte_adapter.delegates.xnnpack.records import (
    _QTENSOR,
    _TENSOR,
    _XVALUE,
    PREVIEW,
    UINT64_MAX,
    VALUE_FLAGS,
    XNN_INVALID_VALUE_ID,
    AttrValue,
    Header,
    Record,
    Scalar,
    _int,
    format_value,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import OpNode, TensorInfo
from pte_adapter.program.direct_reads import direct_ints, direct_table


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


_NOT_A_CONSTANT = ConstantRef(None, {})  # most values: one, shared (its attrs are only read)


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
            return _NOT_A_CONSTANT
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


def _tensor(
    union: tuple[str, Record] | None, consts: _Constants, problems: list[str]
) -> TensorInfo | None:
    """The tensor of an XValue, given its union (`read_union`)."""
    if union is None:
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
    dims = f.get("dims")
    shape = [int(d) for d in dims] if isinstance(dims, list) else []
    if "dims" in rec.counts:  # more dims than the preview: read them all, they are the shape
        shape = []  # filled by the caller from the table when needed; shapes are short in practice
    dq = f.get("dq_datatype")
    return _tensor_info(
        _int(f.get("id_out")),
        shape,
        str(f.get("datatype")),
        _int(f.get("flags")),
        _int(f.get("external_id")),
        dq if isinstance(dq, str) else None,
        _int(f.get("constant_buffer_idx")),
        quant,
        consts,
    )


def _tensor_info(
    vid: int,
    shape: list[int],
    datatype: str,
    flags: int,
    ext: int,
    dq: str | None,
    constant_idx: int,
    quant: tuple[str, Record] | None,
    consts: _Constants,
) -> TensorInfo:
    """A tensor value from its fields (`_tensor` or `tensor_value_at`)."""
    attrs: dict[str, str] = {}
    if flags not in (0, 1, 2):  # external_input (1) or external_output (2) alone: the name says it
        names = [n for bit, n in VALUE_FLAGS.items() if flags & bit]
        rest = flags & ~sum(VALUE_FLAGS)
        attrs["flags"] = ", ".join(names + ([hex(rest)] if rest else []))
    if ext != XNN_INVALID_VALUE_ID:
        attrs["external_id"] = str(ext)
    if dq is not None and dq != "xnn_datatype_invalid":
        attrs["dq_datatype"] = _dtype(dq)
    if quant is not None:
        attrs.update(_quant_attrs(quant, consts))
    # Most values are activations: no constant to describe (`describe(0)`), no role but their
    # flags'; positional arguments (a graph makes one per value).
    constant = consts.describe(constant_idx) if constant_idx else _NOT_A_CONSTANT
    if constant.attrs:
        attrs.update(constant.attrs)
    role = "constant" if constant.nbytes is not None else ""
    if flags & 1:
        role = "input"
    elif flags & 2:
        role = "output"
    tid = _tensor_id(vid)
    return TensorInfo(
        tid,
        f"{role} {tid}" if role else tid,
        shape,
        _dtype(datatype),
        attrs,
        constant.nbytes,
        None if quant is None else _per_tensor(quant),
    )


_ABSENT = (0,) * len(_TENSOR)  # the slots past a vtable's end
_U32 = struct.Struct("<I")
_I16 = struct.Struct("<h")
_DATATYPES = ENUMS["XNNDatatype"]
_TENSOR_TAG = next(tag for tag, (m, _) in UNIONS["XValueUnion"].items() if m == "XNNTensorValue")
# The offsets of these fields, from an XNNTensorValue's vtable offsets.
_TENSOR_FIELDS = itemgetter(
    *(
        _TENSOR[name].slot
        for name in (
            "datatype",
            "dims",
            "constant_buffer_idx",
            "external_id",
            "flags",
            "id_out",
            "dq_datatype",
        )
    )
)


def tensor_value_at(
    fb: FlatBuffer, at: int, owner: int, index: int, consts: _Constants
) -> TensorInfo | None:
    """XValue `index` of the graph at `owner` (at `at`), claimed as `iter_tables(once=True)`
    claims it, read as `read_union` and `_tensor` read it, when it is a plain tensor value of at
    most `PREVIEW` dims and every check `Table` makes passes (each table's fields at once, by its
    reach: `flatbuf.Fields`); else None, for the caller to read it again the checked way, with
    the budgets as they were. No `Table` or `Record` is made."""
    xvalue = fb.direct_fields(at)
    data = fb.data
    if xvalue is None:
        return None
    fb.claim("xvalues", at, owner, index)
    if len(xvalue) < 2 or not xvalue[0] or not xvalue[1] or data[at + xvalue[0]] != _TENSOR_TAG:
        return None
    got = direct_table(fb, at, xvalue[1])
    if got is None:
        return None
    value, fields = got
    dt, dims_at, const_at, ext_at, flags_at, id_at, dq_at = _TENSOR_FIELDS(fields + _ABSENT)
    shape = direct_ints(fb, value, dims_at, "I", PREVIEW)
    if shape is None:
        return None
    datatype = _I16.unpack_from(data, value + dt)[0] if dt else 0
    dq = _I16.unpack_from(data, value + dq_at)[0] if dq_at else 0
    return _tensor_info(
        _U32.unpack_from(data, value + id_at)[0] if id_at else 0,
        shape,
        _DATATYPES.get(datatype) or f"XNNDatatype_{datatype}",
        _U32.unpack_from(data, value + flags_at)[0] if flags_at else 0,
        _U32.unpack_from(data, value + ext_at)[0] if ext_at else 0,
        _DATATYPES.get(dq) or f"XNNDatatype_{dq}",
        _U32.unpack_from(data, value + const_at)[0] if const_at else 0,
        None,
        consts,
    )


def _per_tensor(quant: tuple[str, Record] | None) -> tuple[float, int] | None:
    """(scale, zero point) of a per-tensor quantized value, as recorded."""
    if quant is None or quant[0] != "PerTensorQuant":
        return None
    scale, zero = quant[1].fields.get("scale"), quant[1].fields.get("zero_point")
    if isinstance(scale, (int, float)) and isinstance(zero, int) and not isinstance(zero, bool):
        return float(scale), zero
    return None


# -- nodes ------------------------------------------------------------------------------------


# An operand id whose name says only its position (`input_id`, `input2_id`, `output_id`) is the
# tensor `v<id>` on the node's port, which Model Explorer lists with it; a role (`filter_id`,
# `bias_id`) is kept, and so is an absent operand (`none`).
_GENERIC_OPERAND = re.compile(r"(input|output)\d*_id")


@lru_cache(maxsize=256)  # a schema's few dozen field names, asked about on every node
def _operand(name: str) -> tuple[bool, bool] | None:
    """For a field naming an operand id (`*_id`: what links nodes): whether it is a result
    (`output*`) and whether its name says only its position; None for any other field."""
    if not name.endswith("_id"):
        return None
    return name.startswith("output"), _GENERIC_OPERAND.fullmatch(name) is not None


def _node(
    index: int, union: AttrValue, handle: AttrValue, mm: AttrValue, problems: list[str]
) -> OpNode:
    """XNode `index` from its fields: its union, `debug_handle` and `output_min_max`."""
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
            operand = _operand(name)
            if operand is None and type(v) is int:  # the commonest: a number (no bool)
                params[name] = v
                if name != "flags":
                    attrs[name] = str(v)  # as `format_value` gives it
                elif v != 0:  # 0 (no flag), every node's default: shown only when set
                    attrs[name] = hex(v)  # (docs/model-explorer.md)
            elif operand is not None and isinstance(v, int):
                if v == XNN_INVALID_VALUE_ID:
                    attrs[name] = "none"
                    continue
                is_output, generic = operand
                (outputs if is_output else inputs).append(_tensor_id(v))
                if not generic:  # a role: filter_id, bias_id, ...
                    attrs[name] = str(v)
            elif name == "flags":
                if v != 0:
                    attrs[name] = hex(int(v)) if isinstance(v, int) else format_value(v)
            else:
                attrs[name] = format_value(v, rec.counts.get(name))
        if "num_dims" in attrs and _num_dims_said(rec):
            del attrs["num_dims"]
    handles: tuple[int, ...] = ()
    if type(handle) is int:  # as read (no bool): its text as `format_value` gives it
        attrs["debug_handle"] = str(handle)
        if handle != DEFAULT_DEBUG_HANDLE:
            handles = (handle,)
    else:
        attrs["debug_handle"] = format_value(handle)
    if isinstance(mm, Record):
        attrs["output_min"] = format_value(mm.fields.get("output_min"))
        attrs["output_max"] = format_value(mm.fields.get("output_max"))
    # Positionally (a graph makes one per node): id, kind, label, inputs, outputs, attrs,
    # namespace, subgraphs, params, constant_bytes, cost_cycles, debug_handles.
    return OpNode(
        f"xnode{index}", kind, kind, inputs, outputs, attrs, "", [], params, 0, None, handles
    )


def _num_dims_said(rec: Record) -> bool:
    """True when a node's `num_dims` is the length of its shape or permutation beside it (a
    reshape's `new_shape`, a transpose's `perm`): the list says it, so it is not shown twice."""
    n = rec.fields.get("num_dims")
    if not isinstance(n, int) or isinstance(n, bool):
        return False
    counts = rec.counts
    for name, v in rec.fields.items():  # a loop, not a generator: a reshape or transpose each
        if isinstance(v, list) and counts.get(name, len(v)) == n:
            return True
    return False


def _inner(union: tuple[str, Record] | None) -> Record:
    """The XNNTensorValue record inside an XValue's union (quantized or not)."""
    if union is not None:
        rec = union[1]
        base = rec.fields.get("tensor_value")
        return base if isinstance(base, Record) else rec
    return Record("none")


def _full_dims(xvalue: Table) -> list[int]:
    tag, sub = xvalue.union(_XVALUE["xvalue_union"].slot, "xvalue_union")
    if sub is not None and UNIONS["XValueUnion"].get(tag, ("", ""))[1] == "XNNQuantizedTensorValue":
        sub = sub.table(_QTENSOR["tensor_value"].slot, "tensor_value")
    return [] if sub is None else sub.ints(_TENSOR["dims"].slot, "I", "dims")
