"""The `.pte` container: header, extended header and segments, as bounds-checked views.

Layout (ExecuTorch `program.fbs` + `_serialize/_program.py`):
  bytes 0-3   u32 offset of the FlatBuffer root table
  bytes 4-7   file identifier `ET12`
  bytes 8-..  optional extended header `eh00` (only when segments follow the FlatBuffer):
              u32 length (>= 24; 32 since ExecuTorch 1.0), u64 program_size,
              u64 segment_base_offset, u64 segment_data_size (length >= 32 only)
Segments start at `segment_base_offset`; `Program.segments[i]` offsets are relative to it.

The file is memory-mapped and only ever sliced: constant data and delegate payloads are not read
until a decoder asks for them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from pte_adapter.container._generated import flat_tensor_schema, program_schema
from pte_adapter.container.files import map_regular
from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.errors import PteFormatError

PTE_IDENTIFIER = program_schema.FILE_IDENTIFIER
EXTENDED_HEADER_MAGIC = b"eh00"
MIN_EXTENDED_HEADER_LENGTH = 24


@dataclass(frozen=True)
class ExtendedHeader:
    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int | None  # absent in 24-byte headers


@dataclass(frozen=True)
class Span:
    """A byte range of a file: where something lives, traceable with a hex viewer."""

    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def map_file(path: Path, inside: Path | None = None) -> memoryview:
    """Memory-map a regular file read-only (an empty file gives an empty view); anything else (a
    FIFO, a device, a folder, a symlink leading out of `inside`) is a `PteFormatError`."""
    return map_regular(path, str(path) if inside is None else path.name, inside)


class BinaryFile:
    """Bytes of one file with bounds-checked slicing and error messages that name the file."""

    def __init__(self, data: memoryview | bytes, name: str) -> None:
        self.data = memoryview(data)
        self.name = name
        self.size = len(self.data)

    def view(self, span: Span, what: str) -> memoryview:
        if span.offset < 0 or span.size < 0 or span.end > self.size:
            raise PteFormatError(
                f"{what} spans bytes [{span.offset}, {span.end}) but the file has {self.size} bytes",
                part=self.name,
                offset=span.offset,
            )
        return self.data[span.offset : span.end]


# Identifiers of files people pass by mistake where a .pte is expected.
_OTHER_FILES = {
    flat_tensor_schema.FILE_IDENTIFIER: "an ExecuTorch external data file (.ptd); open the .pte "
    "that uses it",
    b"TOSA": "a TOSA flatbuffer (.tosa); Model Explorer and `pte-adapter export` open it as a "
    "graph, `summary` and `check` need a .pte",
}


def _what_it_is(ident: bytes) -> str:
    found = _OTHER_FILES.get(ident)
    return f": this is {found}" if found else ""


class PteFile(BinaryFile):
    """A `.pte`: its extended header, its program FlatBuffer and its segment table."""

    def __init__(self, data: memoryview | bytes, name: str) -> None:
        super().__init__(data, name)
        if self.size < 8:
            raise PteFormatError(
                f"file is {self.size} bytes long; a .pte has at least 8", part=name, offset=0
            )
        ident = bytes(self.data[4:8])
        if ident != PTE_IDENTIFIER:
            raise PteFormatError(
                f"not an ExecuTorch program: expected identifier {PTE_IDENTIFIER!r} at bytes 4-7, "
                f"found {ident!r}{_what_it_is(ident)}",
                part=name,
                offset=4,
            )
        self.header = self._read_extended_header()
        program_size = self.header.program_size if self.header else self.size
        self.flatbuffer = FlatBuffer(self.data[:program_size], f"{name} (program)")
        self.root = self.flatbuffer.root(PTE_IDENTIFIER)
        self.segments = self._read_segments()

    def _read_extended_header(self) -> ExtendedHeader | None:
        if self.size < 16 or bytes(self.data[8:12]) != EXTENDED_HEADER_MAGIC:
            return None
        (length,) = struct.unpack_from("<I", self.data, 12)
        if length < MIN_EXTENDED_HEADER_LENGTH:
            raise PteFormatError(
                f"extended header length {length} is less than {MIN_EXTENDED_HEADER_LENGTH}",
                part=self.name,
                offset=12,
            )
        if 8 + length > self.size:
            raise PteFormatError(
                f"extended header of {length} bytes runs past the end of the {self.size}-byte file",
                part=self.name,
                offset=8,
            )
        program_size, base = struct.unpack_from("<QQ", self.data, 16)
        data_size = struct.unpack_from("<Q", self.data, 32)[0] if length >= 32 else None
        if not 8 + length <= program_size <= self.size:
            raise PteFormatError(
                f"extended header says the program is {program_size} bytes; the file has "
                f"{self.size} (truncated?)",
                part=self.name,
                offset=16,
            )
        if base and not program_size <= base <= self.size:
            raise PteFormatError(
                f"segment base offset {base} lies outside [{program_size}, {self.size}] "
                "(truncated file?)",
                part=self.name,
                offset=24,
            )
        if base and data_size is not None and base + data_size > self.size:
            raise PteFormatError(
                f"segment data of {data_size} bytes from offset {base} runs past the end of the "
                f"{self.size}-byte file (truncated?)",
                part=self.name,
                offset=32,
            )
        return ExtendedHeader(length, program_size, base, data_size)

    def _read_segments(self) -> list[Span]:
        """Absolute spans of `Program.segments`; checked when a segment is used."""
        base = self.header.segment_base_offset if self.header else 0
        spans = []
        seg_slots = program_schema.DataSegment
        for seg in self.root.iter_tables(program_schema.Program.segments, "segments"):
            spans.append(Span(base + seg.int(seg_slots.offset, "Q"), seg.int(seg_slots.size, "Q")))
        return spans
