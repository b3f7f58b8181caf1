"""A bounded protobuf wire reader for the Core ML model specification.

A message is read into a dict of its fields by name, with the field tables generated from the
pinned coremltools' protos (`_generated/coreml_proto.py`): repeated fields as lists, map fields as
dicts, enums as their names, `bytes` as a `BytesRef` (where they are, never copied). A field number
the tables do not know is skipped by its wire type; a message of a file the tables leave out (the
NeuralNetwork layers) is kept as its size. Every length and varint is checked against the buffer
and nesting is bounded, so work is linear in the bytes; a malformed message is a `PteFormatError`
with its part and offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final

from pte_adapter.delegates.coreml._generated.coreml_proto import ENUMS, MESSAGES, Field
from pte_adapter.errors import LimitExceededError, PteFormatError

MAX_DEPTH: Final = 64
# Field values one reading may decode (a message, a string, each scalar of a packed list): a
# MobileNetV2's specification holds a few thousand, at a few microseconds each; an empty message
# takes two bytes, so a budget by size alone would let 20 MB make ten million dicts.
MAX_VALUES: Final = 200_000
_VARINT = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool", "enum"}
_FIXED32 = {"fixed32": "<I", "sfixed32": "<i", "float": "<f"}
_FIXED64 = {"fixed64": "<Q", "sfixed64": "<q", "double": "<d"}
_SCALARS = frozenset(_VARINT | set(_FIXED32) | set(_FIXED64))  # what a packed list may hold


@dataclass(frozen=True)
class BytesRef:
    offset: int  # in the buffer read
    size: int


@dataclass(frozen=True)
class Unread:
    """A message of a type outside the generated tables: only its size."""

    type: str
    size: int


class ProtoReader:
    """Reads messages of `data`. `caps` bounds a repeated message field over the whole reading
    ((message type, field name) -> entries): past it, the rest of the message holding the field
    is not read, and `cut` names the field."""

    def __init__(
        self,
        data: memoryview | bytes,
        part: str,
        base: int = 0,
        caps: dict[tuple[str, str], int] | None = None,
    ) -> None:
        self.data = memoryview(data)
        self.part = part
        self.base = base
        self.values_left = MAX_VALUES
        self.caps = dict(caps or {})
        self.cut: set[tuple[str, str]] = set()

    def error(self, what: str, pos: int) -> PteFormatError:
        return PteFormatError(what, part=self.part, offset=self.base + pos)

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        if pos < end:  # most keys and lengths are one byte
            b = self.data[pos]
            if b < 0x80:
                return b, pos + 1
        value, shift = 0, 0
        for i in range(10):
            if pos + i >= end:
                raise self.error("a varint runs past the end of its message", pos)
            b = self.data[pos + i]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value, pos + i + 1
            shift += 7
        raise self.error("a varint longer than 10 bytes", pos)

    def message(self, name: str, start: int = 0, end: int | None = None) -> dict[str, Any]:
        return self._message(name, start, len(self.data) if end is None else end, 0)

    def _message(self, name: str, pos: int, end: int, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise self.error(f"messages nested more than {MAX_DEPTH} deep", pos)
        fields = MESSAGES[name][1]
        out: dict[str, Any] = {}
        while pos < end:
            key, pos = self.varint(pos, end)
            number, wire = key >> 3, key & 7
            f = fields.get(number)
            if number == 0:
                raise self.error("field number 0", pos)
            if f is None:
                pos = self._skip(wire, pos, end)
                continue
            capped = self.caps.get((name, f.name))
            if capped is not None:
                if capped == 0:
                    self.cut.add((name, f.name))
                    return out  # the rest of this message is not read
                self.caps[(name, f.name)] = capped - 1
            pos = self._field(f, wire, pos, end, depth, out)
        return out

    def _count(self, n: int, pos: int) -> None:
        self.values_left -= n
        if self.values_left < 0:
            raise LimitExceededError(
                f"more than {MAX_VALUES} field values (limit {MAX_VALUES}): not read",
                part=self.part,
                offset=self.base + pos,
            )

    def _skip(self, wire: int, pos: int, end: int) -> int:
        if wire == 0:
            return self.varint(pos, end)[1]
        size = {1: 8, 5: 4}.get(wire)
        if wire == 2:
            size, pos = self.varint(pos, end)
        if size is None:
            raise self.error(f"wire type {wire} (groups are not used by Core ML)", pos)
        if pos + size > end:
            raise self.error(f"a field of {size} bytes runs past the end of its message", pos)
        return pos + size

    def _field(
        self, f: Field, wire: int, pos: int, end: int, depth: int, out: dict[str, Any]
    ) -> int:
        if wire == 2 and f.kind in _SCALARS:
            if not f.repeated:
                raise self.error(f"{f.name} is one {f.kind}, not a packed list", pos)
            size, pos = self.varint(pos, end)  # a packed repeated scalar
            stop = self._bounded(pos, size, end)
            values = []
            while pos < stop:
                value, pos = self._scalar(f, self._wire_of(f), pos, stop)
                values.append(value)
            self._count(len(values), pos)
            out.setdefault(f.name, []).extend(values)
            return stop
        self._count(1, pos)
        if f.kind in ("string", "bytes", "message", "map"):
            if wire != 2:
                raise self.error(f"{f.name} has wire type {wire}, not 2", pos)
            size, pos = self.varint(pos, end)
            stop = self._bounded(pos, size, end)
            value = self._delimited(f, pos, stop, depth)
        else:
            value, stop = self._scalar(f, wire, pos, end)
        if f.kind == "map":
            key, entry = value
            out.setdefault(f.name, {})[key] = entry
        elif f.repeated:
            out.setdefault(f.name, []).append(value)
        else:
            out[f.name] = value
        return stop

    def _bounded(self, pos: int, size: int, end: int) -> int:
        if pos + size > end:
            raise self.error(f"{size} bytes announced, {end - pos} left in the message", pos)
        return pos + size

    def _wire_of(self, f: Field) -> int:
        return 5 if f.kind in _FIXED32 else 1 if f.kind in _FIXED64 else 0

    def _delimited(self, f: Field, pos: int, stop: int, depth: int) -> Any:
        if f.kind == "string":
            return bytes(self.data[pos:stop]).decode("utf-8", errors="replace")
        if f.kind == "bytes":
            return BytesRef(pos, stop - pos)
        if f.ref not in MESSAGES:
            return Unread(f.ref, stop - pos)
        value = self._message(f.ref, pos, stop, depth + 1)
        if f.kind == "map":
            return value.get("key", ""), value.get("value")
        return value

    def _scalar(self, f: Field, wire: int, pos: int, end: int) -> tuple[Any, int]:
        if f.kind in _VARINT:
            if wire != 0:
                raise self.error(f"{f.name} has wire type {wire}, not 0", pos)
            v, pos = self.varint(pos, end)
            if f.kind in ("sint32", "sint64"):
                return (v >> 1) ^ -(v & 1), pos
            if f.kind in ("int32", "int64", "enum") and v >= 1 << 63:
                v -= 1 << 64
            if f.kind == "bool":
                return v != 0, pos
            if f.kind == "enum":
                return ENUMS.get(f.ref, {}).get(v, f"{f.ref.rsplit('.', 1)[-1]}_{v}"), pos
            return v, pos
        fmt = _FIXED32.get(f.kind) or _FIXED64.get(f.kind)
        if fmt is None or wire != (5 if f.kind in _FIXED32 else 1):
            raise self.error(f"{f.name} ({f.kind}) has wire type {wire}", pos)
        size = struct.calcsize(fmt)
        stop = self._bounded(pos, size, end)
        return struct.unpack_from(fmt, self.data, pos)[0], stop
