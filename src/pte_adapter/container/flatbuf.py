"""A small, bounds-checked FlatBuffers reader.

The Python `flatbuffers` runtime has no verifier: on corrupt bytes its generated accessors raise
`struct.error`, return garbage or walk vectors whose length is in the billions. Every reader in this
project (`.pte`, `.ptd`, TOSA, XNNPACK) goes through this module instead, which applies the rules of
the C++ verifier lazily, at the moment a field is read:

- every offset, length and vtable entry is checked against the buffer before it is followed;
- tables, vtables and vector headers must be 4-byte aligned, as every FlatBuffers writer makes them;
- a field must lie after its table's header and inside the buffer;
- vector length x element size must fit in the bytes that remain;
- the number of tables a buffer may hand out, and the number of vector bytes it may turn into
  Python objects, are capped in proportion to its size. Offsets may point at shared structure (a
  thousand tensors whose `sizes` all point at one 250,000-element vector, or vectors of offsets to
  vectors of offsets): checking each reference against the buffer does not stop that from
  multiplying the work, so every buffer has a work budget linear in its size.

Field positions ("slots") come from the schema: field *i* in declaration order is slot *i*; a union
field occupies two slots (its type, then its value). Readers name their slots as constants, so the
schema facts live next to the code that uses them.

Nothing is copied: `bytes_view` returns a `memoryview` into the caller's buffer (an `mmap` for files).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, cast

from pte_adapter.container.flatbuf_refusals import refuse_shared, refuse_table, refuse_unpacking
from pte_adapter.errors import PteFormatError

_U8: Final = struct.Struct("<B")
_U16: Final = struct.Struct("<H")
_I16: Final = struct.Struct("<h")
_U32: Final = struct.Struct("<I")
_I32: Final = struct.Struct("<i")
_VTABLE_HEAD: Final = struct.Struct("<HH")  # a vtable's own length, then its table's

# Scalar formats a reader may ask for, with their sizes.
SCALAR_SIZES: Final = {fmt: struct.calcsize("<" + fmt) for fmt in "bB?hHiIqQfd"}

_STRUCTS: Final = {fmt: struct.Struct("<" + fmt) for fmt in SCALAR_SIZES}
_INT_STRUCTS: Final = {fmt: s for fmt, s in _STRUCTS.items() if fmt in "bBhHiIqQ"}
_VTABLE_ENTRIES: dict[int, struct.Struct] = {}  # n -> n u16s: a vtable's field offsets at once
_CHUNK: Final = 4096  # uoffsets of a vector of tables read at once
_INT_FORMATS: Final = frozenset("bBhHiIqQ")

DEFAULT_MAX_TABLES: Final = 4_000_000
# A table takes at least 8 bytes of a buffer (its vtable offset and the offset that refers to it);
# readers may look at a table a few times. Beyond this many per byte, tables must be shared.
TABLES_PER_BYTE: Final = 0.25
MIN_TABLES: Final = 4096
# Vector bytes a reader may unpack into lists/strings, per byte of the buffer (each element is
# normally read once; zero-copy views of byte vectors are not counted).
UNPACKED_BYTES_PER_BYTE: Final = 4
MIN_UNPACKED_BYTES: Final = 1 << 20

# Table has methods named int/float/bool; annotations inside it use these aliases.
_int = int
_float = float
_bool = bool


class FlatBuffer:
    """Bytes holding one FlatBuffer, plus what an error message needs to say where it is."""

    __slots__ = (
        "_vtables",
        "base",
        "claimed",
        "data",
        "part",
        "size",
        "tables_left",
        "unpack_left",
    )

    def __init__(
        self,
        data: memoryview | bytes | bytearray,
        part: str,
        *,
        base: int = 0,
        max_tables: int | None = None,
    ) -> None:
        self.data = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        if self.data.format != "B" or self.data.ndim != 1:
            self.data = self.data.cast("B")
        self.part = part
        # Absolute offset of data[0] in the file, so that errors give file offsets.
        self.base = base
        self.size = len(self.data)
        if max_tables is None:
            max_tables = min(DEFAULT_MAX_TABLES, MIN_TABLES + int(self.size * TABLES_PER_BYTE))
        self.tables_left = max_tables
        self.unpack_left = MIN_UNPACKED_BYTES + UNPACKED_BYTES_PER_BYTE * self.size
        # Tables handed out by `iter_tables(..., once=True)`, per kind: their position -> where
        # (the position of the table whose vector holds it, the index in that vector).
        self.claimed: dict[str, dict[int, tuple[int, int]]] = {}
        # Vtables read so far, checked: position -> (table size, its `Fields`, the bytes a table
        # needs for `direct_fields`). Writers share one vtable among all the tables of a type with
        # the same fields present.
        self._vtables: dict[int, tuple[int, Fields, int]] = {}

    def claim(self, kind: str, pos: int, owner: int, index: int) -> None:
        """Refuse a second use of the table at `pos` as a `kind` (an instruction, a method, an
        event), here element `index` of the `kind` vector of the table at `owner`: ExecuTorch's
        writers never share these, and a file whose vectors point thousands of times at one table
        would multiply the work of everything after the reader."""
        first = self.claimed.setdefault(kind, {}).setdefault(pos, (owner, index))
        if first != (owner, index):
            refuse_shared(self, kind, pos, (owner, index), first)

    def error(self, what: str, pos: int) -> PteFormatError:
        return PteFormatError(what, part=self.part, offset=self.base + pos)

    def need(self, pos: int, n: int, what: str) -> None:
        if pos < 0 or n < 0 or pos + n > self.size:
            raise self.error(
                f"{what} needs {n} bytes at {pos}, but the buffer has {self.size} bytes", pos
            )

    def u16(self, pos: int) -> int:
        self.need(pos, 2, "u16")
        return int(_U16.unpack_from(self.data, pos)[0])

    def u32(self, pos: int) -> int:
        self.need(pos, 4, "u32")
        return int(_U32.unpack_from(self.data, pos)[0])

    def charge(self, nbytes: int, pos: int, what: str) -> None:
        """Count vector bytes about to be unpacked against the buffer's budget."""
        self.unpack_left -= nbytes
        if self.unpack_left < 0:
            refuse_unpacking(self, pos, what)

    def follow(self, pos: int, what: str) -> int:
        """Read the uoffset at `pos` and return the absolute position it points to."""
        target = pos + self.u32(pos)
        if target >= self.size:
            raise self.error(f"{what}: offset points past the end ({target} >= {self.size})", pos)
        return target

    def identifier(self) -> bytes:
        self.need(0, 8, "file identifier")
        return bytes(self.data[4:8])

    def root(self, identifier: bytes | None = None) -> Table:
        if self.size < 8:
            raise self.error(f"too small for a FlatBuffer ({self.size} bytes)", 0)
        if identifier is not None and self.identifier() != identifier:
            found = self.identifier()
            raise self.error(
                f"expected file identifier {identifier!r} at bytes 4-7, found {found!r}", 4
            )
        return self.table_at(self.follow(0, "root table"), "root table")

    def table_at(self, pos: int, what: str, parent: Table | None = None, index: int = -1) -> Table:
        """The table at `pos`, named `what` (inside `parent`, at `index` of a vector: the full
        name is made only when an error needs it)."""
        fields = self.checked_fields(pos)
        if fields is None:
            refuse_table(self, pos, _label(parent, what, index))
        return Table(self, pos, fields, what, parent, index)

    def vtable(self, vt: int) -> tuple[int, Fields, int] | None:
        """The vtable at `vt`: (the table size it gives, its `Fields`, the bytes a table needs for
        `direct_fields`: its size, and the reach of its fields); None when invalid."""
        return self._vtables.get(vt) or self._vtable(vt)

    def _vtable(self, vt: int) -> tuple[int, Fields, int] | None:
        """The vtable at `vt` read and checked (then kept: see `_vtables`), or None when it is
        not a valid vtable (`flatbuf_refusals` words why)."""
        if vt % 2 or vt < 0 or vt + 4 > self.size:
            return None
        vt_len, inline = _VTABLE_HEAD.unpack_from(self.data, vt)
        if vt_len < 4 or vt_len % 2 or vt + vt_len > self.size or inline < 4:
            return None
        n = (vt_len - 4) >> 1
        entries = _VTABLE_ENTRIES.get(n) or _VTABLE_ENTRIES.setdefault(n, struct.Struct(f"<{n}H"))
        offsets: tuple[int, ...] = entries.unpack_from(self.data, vt + 4)
        reach = max(offsets) if offsets else 0  # 0 (absent) is no field's offset
        if reach and not _IN_HEADER.isdisjoint(offsets):  # a field overlaps the table's header
            reach = _NO_REACH
        vtable = self._vtables[vt] = (inline, (offsets, reach), max(inline, reach + 8))
        return vtable

    def checked_fields(self, pos: int) -> Fields | None:
        """The `Fields` of the table at `pos` when `table_at` would hand it out (counted against
        the budget as it counts), or None, nothing counted, when it would raise: a reader that
        reads fields straight from the buffer then calls `table_at` for the error."""
        if self.tables_left <= 0 or pos % 4 or pos < 0 or pos + 4 > self.size:
            return None
        vt: int = pos - _I32.unpack_from(self.data, pos)[0]
        vtable = self._vtables.get(vt) or self._vtable(vt)
        if vtable is None or pos + vtable[0] > self.size:
            return None
        self.tables_left -= 1
        return vtable[1]

    def direct_fields(self, pos: int) -> tuple[int, ...] | None:
        """The field offsets of the table at `pos` (counted as `table_at` counts it) when every
        field (of up to 8 bytes: `Fields`) may be read straight from the buffer; else None."""
        if self.tables_left <= 0 or pos % 4 or pos < 0 or pos + 4 > self.size:
            return None
        vt: int = pos - _I32.unpack_from(self.data, pos)[0]
        vtable = self._vtables.get(vt) or self._vtable(vt)
        if vtable is None or pos + vtable[2] > self.size:
            return None
        self.tables_left -= 1
        return vtable[1][0]

    def vector_at(self, pos: int, elem_size: int, what: str) -> tuple[int, int]:
        """Return (start of elements, element count) of the vector whose length sits at `pos`."""
        if pos % 4:
            raise self.error(f"{what}: vector at {pos} is not 4-byte aligned", pos)
        n = self.u32(pos)
        start = pos + 4
        if n * elem_size > self.size - start:
            raise self.error(
                f"{what}: vector of {n} x {elem_size} bytes does not fit in the "
                f"{self.size - start} bytes that remain",
                pos,
            )
        return start, n


# A table's field offsets (0: absent) and its reach: the largest offset when every present field
# starts past the table's header, else `_NO_REACH`. A reader that finds `pos + reach + 8` inside
# the buffer may read any field of up to 8 bytes (a scalar, or a reference's uoffset) unchecked:
# every check `Table` makes of the field's place would pass.
Fields = tuple[tuple[int, ...], int]
_NO_REACH: Final = 1 << 62
_IN_HEADER: Final = frozenset((1, 2, 3))  # field offsets inside a table's header (0: absent)


def _label(parent: Table | None, what: str, index: int = -1) -> str:
    """A table's or field's full name: `<parent>.<what>`, `[<index>]` for a vector's element."""
    name = what if parent is None else f"{parent.what}.{what}"
    return name if index < 0 else f"{name}[{index}]"


class Table:
    """One table: read its fields by slot number; absent fields give the schema default.

    Its name (`what`, for error messages: `program.execution_plan[0].values[12].val`) is made from
    its parent's only when asked for: a reader walks many thousand tables and fields, and names
    none of them unless something is wrong."""

    # `table_at` checks the vtable's length and the inline size; no reader needs them kept.
    __slots__ = ("_index", "_name", "_parent", "fb", "offsets", "pos", "reach")

    def __init__(
        self,
        fb: FlatBuffer,
        pos: _int,
        fields: Fields,
        what: str,
        parent: Table | None = None,
        index: _int = -1,
    ):
        self.fb = fb
        self.pos = pos
        # Every slot's offset from the table's start (0: absent), read with the vtable: most
        # tables are read for most of their fields; and their reach (`Fields`).
        self.offsets, self.reach = fields
        self._name = what
        self._parent = parent
        self._index = index

    @property
    def what(self) -> str:
        return _label(self._parent, self._name, self._index)

    @property
    def vt(self) -> _int:
        """Where its vtable is."""
        return self.pos - _int(_I32.unpack_from(self.fb.data, self.pos)[0])

    def _field(self, slot: _int, size: _int) -> _int:
        """Absolute position of a field, or 0 when the field is absent."""
        offsets = self.offsets
        if slot >= len(offsets):
            return 0
        off = offsets[slot]
        if off == 0:
            return 0
        # Like the C++ verifier, require the field to lie in the buffer, not inside the vtable's
        # table size: real writers (flatc) record a size that leaves out a trailing 8-byte field's
        # alignment, so a u64 at +4 of an "8-byte" table is legal.
        if off < 4:
            raise self.fb.error(f"{self.what}: field {slot} overlaps the table header", self.pos)
        pos = self.pos + off
        if pos + size > self.fb.size:
            self.fb.need(pos, size, f"{self.what} field {slot}")
        return pos

    def has(self, slot: _int) -> _bool:
        return self._field(slot, 1) != 0

    def field_at(self, slot: _int, off: _int, size: _int) -> _int:
        """`_field` for a slot whose offset (not 0) a reader took from `offsets`."""
        pos = self.pos + off
        if off < 4 or pos + size > self.fb.size:
            return self._field(slot, size)  # raises, with the message it always had
        return pos

    # -- scalars --------------------------------------------------------------------------------

    def scalar(
        self, slot: _int, fmt: str, default: _int | _float | _bool = 0
    ) -> _int | _float | _bool:
        reader = _STRUCTS[fmt]
        pos = self._field(slot, reader.size)
        if pos == 0:
            return default
        value: _int | _float | _bool = reader.unpack_from(self.fb.data, pos)[0]
        return value

    def int(self, slot: _int, fmt: str = "i", default: _int = 0) -> _int:
        # `scalar` and `_field` inlined: a reader calls this a few hundred thousand times on a
        # large program.
        reader = _INT_STRUCTS.get(fmt)
        if reader is None:  # "?", "f", "d": made an int as they always were
            return int(self.scalar(slot, fmt, default))
        offsets = self.offsets
        off = offsets[slot] if slot < len(offsets) else 0
        if off == 0:
            return default
        pos = self.pos + off
        if off < 4 or pos + reader.size > self.fb.size:
            self._field(slot, reader.size)  # raises, with the message it always had
        value: _int = reader.unpack_from(self.fb.data, pos)[0]  # an int already: no int()
        return value

    def float(self, slot: _int, fmt: str = "d", default: _float = 0.0) -> _float:
        return float(self.scalar(slot, fmt, default))

    def bool(self, slot: _int, default: _bool = False) -> _bool:
        return self.int(slot, "B", default) != 0  # `int` is the quicker path to the same byte

    # -- references ------------------------------------------------------------------------------

    def _ref(self, slot: _int, what: str) -> _int:
        # `_field` and `follow` inlined, as in `int`.
        offsets = self.offsets
        off = offsets[slot] if slot < len(offsets) else 0
        if off == 0:
            return 0
        fb = self.fb
        pos = self.pos + off
        if off < 4 or pos + 4 > fb.size:
            self._field(slot, 4)  # raises, with the message it always had
        target: _int = pos + _U32.unpack_from(fb.data, pos)[0]
        if target >= fb.size:
            fb.follow(pos, _label(self, what))  # raises, with the message it always had
        return target

    def follow(self, pos: _int, what: str, index: _int = -1) -> _int:
        """`FlatBuffer.follow` of the uoffset at `pos`, the field named only on an error."""
        fb = self.fb
        if pos + 4 > fb.size:
            fb.need(pos, 4, "u32")
        target: _int = pos + _U32.unpack_from(fb.data, pos)[0]
        if target >= fb.size:
            fb.follow(pos, _label(self, what, index))  # raises, with the message it always had
        return target

    def vector_at(
        self, pos: _int, elem_size: _int, what: str, index: _int = -1
    ) -> tuple[_int, _int]:
        """`FlatBuffer.vector_at` for the field `what`, named only on an error."""
        fb = self.fb
        if pos % 4 or pos + 4 > fb.size:
            return fb.vector_at(pos, elem_size, _label(self, what, index))
        n = int(_U32.unpack_from(fb.data, pos)[0])
        start = pos + 4
        if n * elem_size > fb.size - start:
            return fb.vector_at(pos, elem_size, _label(self, what, index))
        return start, n

    def charge(self, nbytes: _int, pos: _int, what: str, index: _int = -1) -> None:
        fb = self.fb
        if fb.unpack_left - nbytes < 0:
            fb.charge(nbytes, pos, _label(self, what, index))
        else:
            fb.unpack_left -= nbytes

    def table(self, slot: _int, what: str = "table") -> Table | None:
        pos = self._ref(slot, what)
        return None if pos == 0 else self.fb.table_at(pos, what, self)

    def string(self, slot: _int, what: str = "string") -> str | None:
        raw = self.string_bytes(slot, what)
        if raw is None:
            return None
        self.charge(len(raw), self.pos, what)
        return bytes(raw).decode("utf-8", errors="replace")

    def string_bytes(self, slot: _int, what: str = "string") -> memoryview | None:
        pos = self._ref(slot, what)
        if pos == 0:
            return None
        start, n = self.vector_at(pos, 1, what)
        return self.fb.data[start : start + n]

    def bytes_view(self, slot: _int, what: str = "bytes") -> memoryview | None:
        """A [ubyte] / [byte] vector as a zero-copy view."""
        return self.string_bytes(slot, what)

    def bytes_span(self, slot: _int, what: str = "bytes") -> tuple[_int, _int] | None:
        """(absolute file offset, length) of a [ubyte] vector, without touching its bytes."""
        pos = self._ref(slot, what)
        if pos == 0:
            return None
        start, n = self.vector_at(pos, 1, what)
        return self.fb.base + start, n

    def vector(self, slot: _int, elem_size: _int, what: str = "vector") -> tuple[_int, _int] | None:
        """(start of elements, element count) of the vector in `slot`; None when it is absent."""
        pos = self._ref(slot, what)
        return None if pos == 0 else self.vector_at(pos, elem_size, what)

    def vector_len(self, slot: _int, elem_size: _int = 4, what: str = "vector") -> _int:
        pos = self._ref(slot, what)
        return 0 if pos == 0 else self.vector_at(pos, elem_size, what)[1]

    def scalars(self, slot: _int, fmt: str, what: str = "vector") -> list[_int] | list[_float]:
        pos = self._ref(slot, what)
        if pos == 0:
            return []
        size = SCALAR_SIZES[fmt]
        start, n = self.vector_at(pos, size, what)
        self.charge(n * size, pos, what)
        return list(struct.unpack_from(f"<{n}{fmt}", self.fb.data, start))

    def ints(self, slot: _int, fmt: str = "i", what: str = "vector") -> list[_int]:
        if fmt in _INT_FORMATS:  # struct already gives Python ints: no copy to convert them
            return cast(list[_int], self.scalars(slot, fmt, what))
        return [int(v) for v in self.scalars(slot, fmt, what)]

    def tables(self, slot: _int, what: str = "vector") -> list[Table]:
        return list(self.iter_tables(slot, what))

    def iter_tables(self, slot: _int, what: str = "vector", once: _bool = False) -> Iterator[Table]:
        """The tables of a vector; with `once`, each table may appear once in the whole buffer as
        a `what` (`FlatBuffer.claim`)."""
        fb = self.fb
        for i, target in enumerate(self.iter_positions(slot, what)):
            table = fb.table_at(target, what, self, i)
            if once:
                fb.claim(what, table.pos, self.pos, i)
            yield table

    def iter_positions(self, slot: _int, what: str = "vector") -> Iterator[_int]:
        """Where the tables of a vector are, each uoffset checked as it is reached (the tables
        themselves are not: `table_at` or `FlatBuffer.checked_offsets` does that)."""
        pos = self._ref(slot, what)
        if pos == 0:
            return
        start, n = self.vector_at(pos, 4, what)
        self.charge(4 * n, pos, what)
        fb = self.fb
        # `follow` inlined: the elements' uoffsets are read a chunk at a time (`vector_at` checked
        # they fit; a chunk bounds the memory a corrupt length can take before `table_at` stops it).
        for first in range(0, n, _CHUNK):
            count = min(_CHUNK, n - first)
            for i, uoffset in enumerate(
                struct.unpack_from(f"<{count}I", fb.data, start + 4 * first), first
            ):
                elem = start + 4 * i
                target = elem + uoffset
                if target >= fb.size:
                    self.follow(elem, what, i)  # raises, with the message it always had
                yield target

    def strings(self, slot: _int, what: str = "vector") -> list[str]:
        pos = self._ref(slot, what)
        if pos == 0:
            return []
        start, n = self.vector_at(pos, 4, what)
        self.charge(4 * n, pos, what)
        out = []
        for i in range(n):
            spos = self.follow(start + 4 * i, what, i)
            s0, sn = self.vector_at(spos, 1, what, i)
            self.charge(sn, spos, what, i)
            out.append(bytes(self.fb.data[s0 : s0 + sn]).decode("utf-8", errors="replace"))
        return out

    def union(self, type_slot: _int, what: str = "union") -> tuple[_int, Table | None]:
        """(type tag, value table) of a union whose type field is at `type_slot`."""
        tag = self.int(type_slot, "B")
        if tag == 0:
            return 0, None
        return tag, self.table(type_slot + 1, what)
