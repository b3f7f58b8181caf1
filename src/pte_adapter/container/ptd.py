"""External tensor data `.ptd` (FlatTensor, `extension/flat_tensor/serialize/flat_tensor.fbs`).

Layout: u32 root offset, identifier `FT01` at bytes 4-7, then a header at byte 8:
`FH01`, u32 length (40), u64 flatbuffer_offset, u64 flatbuffer_size, u64 segment_base_offset,
u64 segment_data_size. The FlatBuffer root is at byte 0; segment offsets are relative to the base.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pte_adapter.container._generated import flat_tensor_schema as S
from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.container.pte import BinaryFile, Span
from pte_adapter.errors import PteFormatError

PTD_IDENTIFIER = S.FILE_IDENTIFIER
PTD_HEADER_MAGIC = b"FH01"
PTD_HEADER_MIN_LENGTH = 40


@dataclass(frozen=True)
class PtdEntry:
    key: str
    span: Span  # absolute, in the .ptd
    scalar_type: int | None
    sizes: list[int]
    dim_order: list[int]


class PtdFile(BinaryFile):
    def __init__(self, data: memoryview | bytes, name: str) -> None:
        super().__init__(data, name)
        if self.size < 48:
            raise PteFormatError(f"file is {self.size} bytes; a .ptd header needs 48", part=name)
        ident = bytes(self.data[4:8])
        if ident != PTD_IDENTIFIER:
            raise PteFormatError(
                f"not a FlatTensor file: expected {PTD_IDENTIFIER!r} at bytes 4-7, found {ident!r}",
                part=name,
                offset=4,
            )
        magic = bytes(self.data[8:12])
        (length,) = struct.unpack_from("<I", self.data, 12)
        if magic != PTD_HEADER_MAGIC or length < PTD_HEADER_MIN_LENGTH:
            raise PteFormatError(
                f"bad FlatTensor header: magic {magic!r}, length {length}", part=name, offset=8
            )
        fb_off, fb_size, base, data_size = struct.unpack_from("<QQQQ", self.data, 16)
        if fb_off + fb_size > self.size or base + data_size > self.size:
            raise PteFormatError(
                f"header spans (flatbuffer {fb_off}+{fb_size}, segments {base}+{data_size}) run "
                f"past the end of the {self.size}-byte file (truncated?)",
                part=name,
                offset=16,
            )
        self.segment_base_offset = base
        fb = FlatBuffer(self.data[: fb_off + fb_size], f"{name} (FlatTensor)")
        root = fb.root(PTD_IDENTIFIER)
        self.version = root.int(S.FlatTensor.version, "I")
        segments = [
            Span(base + t.int(S.DataSegment.offset, "Q"), t.int(S.DataSegment.size, "Q"))
            for t in root.iter_tables(S.FlatTensor.segments, "segments")
        ]
        self.entries: dict[str, PtdEntry] = {}
        for nd in root.iter_tables(S.FlatTensor.named_data, "named_data"):
            key = nd.string(S.NamedData.key, "key") or ""
            idx = nd.int(S.NamedData.segment_index, "I")
            if not 0 <= idx < len(segments):
                raise PteFormatError(
                    f"named data {key!r} points at segment {idx}; the file has {len(segments)}",
                    part=name,
                    offset=fb.base + nd.pos,
                )
            layout = nd.table(S.NamedData.tensor_layout, "tensor_layout")
            self.entries[key] = PtdEntry(
                key,
                segments[idx],
                layout.int(S.TensorLayout.scalar_type, "b") if layout else None,
                layout.ints(S.TensorLayout.sizes, "i", "sizes") if layout else [],
                layout.ints(S.TensorLayout.dim_order, "B", "dim_order") if layout else [],
            )
