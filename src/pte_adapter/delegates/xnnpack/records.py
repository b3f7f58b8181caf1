"""Reading XNNPACK's FlatBuffer generically: any table as a `Record` of its fields (from the tables
generated out of the pinned schema), values formatted for people, and the `XH00` payload header."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, NamedTuple, TypeAlias

from pte_adapter.container.flatbuf import SCALAR_SIZES, Table
from pte_adapter.delegates.xnnpack._generated.xnnpack_schema import (
    ENUMS,
    FILE_IDENTIFIER,
    RUNTIME_FILE_IDENTIFIER,
    TABLES,
    UNIONS,
    Field,
)
from pte_adapter.errors import PteFormatError

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


class Record:
    """A table read generically: its type name, its fields (schema order) and the full length of
    each vector whose head alone was read (`counts`: most records have none, and share one
    empty mapping until they do)."""

    __slots__ = ("counts", "fields", "type")

    def __init__(self, type: str) -> None:
        self.type = type
        self.fields: dict[str, AttrValue] = {}
        self.counts: Mapping[str, int] = _NO_COUNTS

    def __repr__(self) -> str:
        return f"Record({self.type!r}, {self.fields!r}, counts={dict(self.counts)!r})"


_NO_COUNTS: Mapping[str, int] = MappingProxyType({})


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
    """The first `limit` elements of a scalar vector and its full length (nothing else is read:
    a per-channel scale vector can hold thousands of entries)."""
    size = SCALAR_SIZES[f.fmt]
    span = t.vector(f.slot, size, f.name)
    if span is None or span[1] == 0:
        return [], 0
    start, n = span
    if n <= limit:
        t.charge(n * size, start - 4, f.name)
    head = list(struct.unpack_from(f"<{min(n, limit)}{f.fmt}", t.fb.data, start))
    return [_enum_name(f.ref, int(v)) for v in head] if f.ref else head, n


class _Step(NamedTuple):
    """How `read_record` reads one field (made once per table type from the schema's `Field`)."""

    field: Field
    reader: struct.Struct | None  # a scalar's or enum's
    names: dict[int, str]  # an enum's value names


_STEPS: dict[str, tuple[_Step, ...]] = {}


def _steps(type_name: str) -> tuple[_Step, ...]:
    steps = _STEPS.get(type_name)
    if steps is None:
        steps = _STEPS[type_name] = tuple(
            _Step(
                f,
                struct.Struct("<" + f.fmt) if f.kind in ("scalar", "enum") else None,
                ENUMS.get(f.ref, {}) if f.kind == "enum" else {},
            )
            for f in TABLES.get(type_name, ())
            # vectors of tables/strings are only used by XNNGraph, read by `decode`
            if f.kind not in ("table_vector", "string_vector")
        )
    return steps


def read_record(t: Table, type_name: str, limit: int = PREVIEW) -> Record:
    rec = Record(type_name)
    fields = rec.fields
    # The vtable is read once; an absent field costs a tuple lookup (a large graph reads a
    # million fields, most of them scalars, many of them absent).
    offsets = t.offsets
    n = len(offsets)
    data = t.fb.data
    pos = t.pos
    # A table whose every field lies inside the buffer (`Fields`) has its scalars read unchecked.
    whole = pos + t.reach + 8 <= t.fb.size
    for f, reader, names in _steps(type_name):
        slot = f.slot
        off = offsets[slot] if slot < n else 0
        kind = f.kind  # the commonest kinds first
        if kind == "scalar":
            if off == 0:
                fields[f.name] = 0
                continue
            assert reader is not None
            at = pos + off if whole else t.field_at(slot, off, reader.size)
            value = reader.unpack_from(data, at)[0]
            fields[f.name] = int(value) if isinstance(value, bool) else value
        elif kind == "enum":
            assert reader is not None
            value = 0
            if off:
                at = pos + off if whole else t.field_at(slot, off, reader.size)
                value = reader.unpack_from(data, at)[0]
            name = names.get(value)
            fields[f.name] = name if name is not None else f"{f.ref}_{value}"
        elif off == 0:  # an absent reference: what reading it would give
            fields[f.name] = [] if kind == "vector" else None
        elif kind == "vector":
            vals, count = _vector_preview(t, f, limit)
            fields[f.name] = vals
            if count > len(vals):
                rec.counts = {**rec.counts, f.name: count}
        elif kind == "union":
            fields[f.name] = read_union(t, f, limit)
        elif kind == "string":
            fields[f.name] = t.string(f.slot, f.name)
        elif kind == "table":
            sub = t.table(f.slot, f.name)
            fields[f.name] = None if sub is None else read_record(sub, f.ref, limit)
    return rec


def read_union(t: Table, f: Field, limit: int = PREVIEW) -> tuple[str, Record] | None:
    """A union field of `t`: (member name, its table as a record); None for NONE. A tag newer
    than the schema gives `("<union>_<tag>", Record("unknown_<tag>"))`."""
    tag, sub = t.union(f.slot, f.name)
    if tag == 0:
        return None
    member = UNIONS[f.ref].get(tag)
    if member is None:
        return f"{f.ref}_{tag}", Record(f"unknown_{tag}")
    if sub is None:
        return member[0], Record(member[1])
    return member[0], read_record(sub, member[1], limit)


def _fmt_scalar(v: Scalar) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def format_value(v: AttrValue, count: int | None = None) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):  # most are of ints (shapes, permutations): str() is their text
        body = ", ".join([str(x) if type(x) is int else _fmt_scalar(x) for x in v])
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
