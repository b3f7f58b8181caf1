"""The `vela_bin_stream` container ExecuTorch's Arm backend wraps around Vela's output.

A run of blocks, each a 32-byte header (16-byte NUL-padded name, u32 unpadded size, u8 external
flag, 11 reserved bytes) followed by the data padded to 16 bytes. The framing is checked strictly
(a truncated or misnamed block makes the rest unreadable, so it is fatal); the content of single
blocks is checked leniently (an odd I/O record becomes a problem, the other blocks still show).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from pte_adapter.container.sources import DataSources
from pte_adapter.errors import PteFormatError

STREAM_HEADER = "vela_bin_stream"
STREAM_FOOTER = "vela_end_stream"
BLOCK_HEADER = struct.Struct("<16sIB11s")
BLOCK_ALIGN = 16
KNOWN_BLOCKS = (
    STREAM_HEADER,
    "cmd_data",
    "weight_data",
    "scratch_data",
    "scratch_size",
    "inputs",
    "outputs",
    STREAM_FOOTER,
)
# An external block holds a 64-character sha256 hex key instead of its data.
EXTERNAL_KEY_LEN = 64
# Record sizes of one VelaIO entry: i32 shape[6] + elem_size + offset + region (since 2025-09),
# before that shape[4].
IO_RECORD_6D = 36
IO_RECORD_4D = 28
# Region numbers as ExecuTorch's Ethos-U runtime binds them to base pointers.
REGION_NAMES = {0: "weights", 1: "scratch", 2: "scratch_fast"}


def region_name(region: int) -> str:
    return REGION_NAMES.get(region, f"region {region}")


@dataclass(frozen=True)
class VelaBlock:
    """One block of the stream, with its data resolved when it was external."""

    name: str
    header_offset: int  # offset of the 32-byte header in the payload
    size: int  # unpadded size as stored (for external blocks: the key's length)
    external: bool
    data: memoryview | None  # None when an external key could not be resolved
    key: str | None = None  # the named-data key of an external block
    source: str = ""  # where external data was found (file name)


@dataclass(frozen=True)
class VelaIO:
    """One network input or output as placed in the scratch region."""

    index: int
    raw_shape: tuple[int, ...]  # as stored: 6 dims (4 in older streams), padded with 1s
    elem_size: int
    offset: int
    region: int

    @property
    def shape(self) -> list[int]:
        """The shape with the leading padding dimensions removed (Vela pads to the left)."""
        dims = list(self.raw_shape)
        while len(dims) > 1 and dims[0] == 1:
            dims.pop(0)
        return dims

    @property
    def dtype(self) -> str:
        return {1: "int8", 2: "int16", 4: "int32", 8: "int64"}.get(
            self.elem_size, f"{self.elem_size}-byte"
        )

    @property
    def nbytes(self) -> int:
        n = max(self.elem_size, 0)
        for d in self.raw_shape:
            n *= max(d, 0)
        return n


@dataclass
class VelaBinStream:
    blocks: list[VelaBlock] = field(default_factory=list)
    inputs: list[VelaIO] = field(default_factory=list)
    outputs: list[VelaIO] = field(default_factory=list)
    scratch_size: int | None = None
    scratch_from_data_block: bool = False  # older streams carried a zero-filled scratch_data
    io_record_size: int | None = None
    problems: list[str] = field(default_factory=list)

    def block(self, name: str) -> VelaBlock | None:
        for b in self.blocks:
            if b.name == name:
                return b
        return None

    def data(self, name: str) -> memoryview | None:
        b = self.block(name)
        return None if b is None else b.data


def block_part(name: str) -> str:
    return f"EthosUBackend payload, block {name!r}"


def parse_bin_stream(payload: memoryview, sources: DataSources | None = None) -> VelaBinStream:
    """Split the payload into blocks; raise PteFormatError only when the framing is broken."""
    stream = VelaBinStream()
    pos = 0
    end = len(payload)
    seen: set[str] = set()
    while pos < end:
        if end - pos < BLOCK_HEADER.size:
            raise PteFormatError(
                f"a block header needs {BLOCK_HEADER.size} bytes, only {end - pos} remain",
                part="EthosUBackend payload",
                offset=pos,
            )
        raw_name, size, flag, _reserved = BLOCK_HEADER.unpack_from(payload, pos)
        name = raw_name.split(b"\x00", 1)[0].decode("ascii", errors="replace")
        if not stream.blocks and name != STREAM_HEADER:
            raise PteFormatError(
                f"expected the first block to be {STREAM_HEADER!r}, found {raw_name!r}",
                part="EthosUBackend payload",
                offset=pos,
            )
        data_at = pos + BLOCK_HEADER.size
        padded = (size + BLOCK_ALIGN - 1) // BLOCK_ALIGN * BLOCK_ALIGN
        if size > end - data_at:
            raise PteFormatError(
                f"block data of {size} bytes runs past the end of the payload "
                f"({end - data_at} bytes remain)",
                part=block_part(name),
                offset=pos,
            )
        raw = payload[data_at : data_at + size]
        if name in seen:
            stream.problems.append(f"block {name!r} appears more than once (offset {pos})")
        seen.add(name)
        if name not in KNOWN_BLOCKS:
            stream.problems.append(f"unknown block {name!r} of {size} bytes at offset {pos}")
        if flag not in (0, 1):
            stream.problems.append(f"block {name!r}: unknown external flag {flag}")
        if flag == 1:
            stream.blocks.append(_resolve_external(stream, name, pos, raw, sources))
        else:
            stream.blocks.append(VelaBlock(name, pos, size, False, raw))
        # The last block may omit its padding; the next header must still start aligned.
        pos = min(end, data_at + padded)
        if name == STREAM_FOOTER:
            if pos < end:
                stream.problems.append(
                    f"{end - pos} bytes follow the {STREAM_FOOTER!r} block (offset {pos})"
                )
            break
    else:
        stream.problems.append(f"the stream has no {STREAM_FOOTER!r} block; it may be truncated")
    _read_scratch(stream)
    stream.inputs = _read_io(stream, "inputs")
    stream.outputs = _read_io(stream, "outputs")
    for required in ("cmd_data", "inputs", "outputs"):
        if required not in seen:
            stream.problems.append(f"the stream has no {required!r} block")
    return stream


def _resolve_external(
    stream: VelaBinStream, name: str, pos: int, raw: memoryview, sources: DataSources | None
) -> VelaBlock:
    key = bytes(raw).decode("ascii", errors="replace")
    if len(raw) != EXTERNAL_KEY_LEN:
        stream.problems.append(
            f"external block {name!r} holds {len(raw)} bytes, expected a "
            f"{EXTERNAL_KEY_LEN}-character key"
        )
    if sources is None:
        stream.problems.append(
            f"block {name!r} is stored outside the .pte under key {key!r}; no named data "
            "sources are available to resolve it"
        )
        return VelaBlock(name, pos, len(raw), True, None, key)
    try:
        found = sources.find(key)
    except PteFormatError as e:
        stream.problems.append(f"block {name!r}: key {key!r}: {e}")
        return VelaBlock(name, pos, len(raw), True, None, key)
    if found is None:
        stream.problems.append(
            f"block {name!r} is stored outside the .pte under key {key!r}, which was not "
            f"found in {sources.searched()}"
        )
        return VelaBlock(name, pos, len(raw), True, None, key)
    return VelaBlock(name, pos, len(raw), True, found.data, key, found.source)


def _read_scratch(stream: VelaBinStream) -> None:
    size_block = stream.block("scratch_size")
    if size_block is not None and size_block.data is not None:
        if len(size_block.data) >= 4:
            stream.scratch_size = int.from_bytes(size_block.data[:4], "little")
        else:
            stream.problems.append(
                f"block 'scratch_size' holds {len(size_block.data)} bytes, expected 4"
            )
    data_block = stream.block("scratch_data")
    if data_block is not None and stream.scratch_size is None:
        # Older streams shipped the scratch area itself (zeros); its size is the block size.
        stream.scratch_size = data_block.size
        stream.scratch_from_data_block = True


def _read_io(stream: VelaBinStream, name: str) -> list[VelaIO]:
    b = stream.block(name)
    if b is None or b.data is None:
        return []
    data = b.data
    if len(data) < 4:
        stream.problems.append(f"block {name!r} holds {len(data)} bytes, expected at least 4")
        return []
    count = int.from_bytes(data[:4], "little", signed=True)
    body = len(data) - 4
    if count < 0 or count * IO_RECORD_4D > body:
        stream.problems.append(
            f"block {name!r} claims {count} records but holds only {body} bytes after the count"
        )
        return []
    if count == 0:
        return []
    # The record layout is not versioned; the block size tells which one was written.
    if body == count * IO_RECORD_6D:
        record, dims = IO_RECORD_6D, 6
    elif body == count * IO_RECORD_4D:
        record, dims = IO_RECORD_4D, 4
    else:
        stream.problems.append(
            f"block {name!r}: {body} bytes for {count} records fit neither the 36-byte (6-D) "
            "nor the 28-byte (4-D) record layout"
        )
        return []
    if stream.io_record_size is not None and stream.io_record_size != record:
        stream.problems.append("blocks 'inputs' and 'outputs' use different record layouts")
    stream.io_record_size = record
    fmt = struct.Struct(f"<{dims + 3}i")
    out: list[VelaIO] = []
    for i in range(count):
        values = fmt.unpack_from(data, 4 + i * record)
        out.append(
            VelaIO(i, tuple(values[:dims]), values[dims], values[dims + 1], values[dims + 2])
        )
        if values[dims] not in (1, 2, 4, 8):
            stream.problems.append(f"block {name!r} record {i}: element size {values[dims]}")
    return out
