"""Reading a Vulkan payload: the `VH00` header and the `VkGraph` FlatBuffer's values, operator calls
and constants, with slots, union tags, enum values and defaults from the tables generated out of the
pinned schema (`_generated/vulkan_schema.py`)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from pte_adapter.container.flatbuf import Table
from pte_adapter.delegates.vulkan._generated.vulkan_schema import (
    ENUMS,
    FILE_IDENTIFIER,
    TABLES,
    UNIONS,
    Field,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import saturating_numel

HEADER_MAGIC: Final = b"VH00"
HEADER_LENGTH: Final = 30  # VulkanDelegateHeader.EXPECTED_LENGTH
UINT64_MAX: Final = 0xFFFFFFFFFFFFFFFF  # VkBytes.offset when the bytes are named data

# Bytes per element of each VkDataType (a fact of the C types the runtime stores, not stated by the
# schema; keyed by the generated names, tested against torch's sizes of ExecuTorch's mapping).
ELEMENT_SIZE: Final = {
    "BOOL": 1,
    "UINT8": 1,
    "INT8": 1,
    "INT32": 4,
    "FLOAT16": 2,
    "FLOAT32": 4,
    "FLOAT64": 8,
    "INT64": 8,
}


def _fields(table: str) -> dict[str, Field]:
    return {f.name: f for f in TABLES[table]}


# Slots by name, so that a schema change breaks loudly here.
GRAPH = _fields("VkGraph")
_CALL = _fields("OperatorCall")
_TENSOR = _fields("VkTensor")
_BYTES = _fields("VkBytes")
_VALUE = _fields("VkValue")

Scalar: TypeAlias = int | float | bool | str | None


@dataclass(frozen=True)
class Header:
    flatbuffer_offset: int
    flatbuffer_size: int
    bytes_offset: int  # the raw bytes block (inline constants, shaders)
    bytes_size: int
    length: int  # the header's own length field


@dataclass
class VkTensor:
    datatype: str
    dims: list[int]
    constant_id: int  # < 0: not a constant
    mem_obj_id: int  # < 0: memory not shared
    storage_type: str
    memory_layout: str
    staging_datatype: str

    @property
    def nbytes(self) -> int | None:
        """Bytes of its data as the CPU side hands it over (the staging dtype, when set)."""
        dtype = self.staging_datatype if self.staging_datatype != "UNSET" else self.datatype
        size = ELEMENT_SIZE.get(dtype)
        if size is None:
            return None
        # Saturated: a tensor of 450 dimensions of 2^32 - 1 would be a number of 4,300 digits.
        return size * saturating_numel(self.dims)


@dataclass
class VkValue:
    """One entry of `VkGraph.values`: its union member and what it holds."""

    index: int
    kind: str  # "Null", "Int", "Double", "Bool", "VkTensor", "IntList", ... or "unknown_<tag>"
    value: Scalar | list[int] | list[float] | list[bool] = None
    tensor: VkTensor | None = None


@dataclass
class VkBytesRef:
    offset: int
    length: int
    named_key: str


@dataclass
class OperatorCall:
    node_id: int
    name: str
    args: list[int] = field(default_factory=list)


def enum_name(enum: str, value: int) -> str:
    name = ENUMS[enum].get(value)
    return name if name is not None else f"{enum}_{value}"


def _enum(t: Table, f: Field) -> str:
    return enum_name(f.ref, t.int(f.slot, f.fmt, int(f.default)))


def read_tensor(t: Table) -> VkTensor:
    f = _TENSOR
    return VkTensor(
        datatype=_enum(t, f["datatype"]),
        dims=t.ints(f["dims"].slot, f["dims"].fmt, "dims"),
        constant_id=t.int(f["constant_id"].slot, f["constant_id"].fmt),
        mem_obj_id=t.int(f["mem_obj_id"].slot, f["mem_obj_id"].fmt),
        storage_type=_enum(t, f["storage_type"]),
        memory_layout=_enum(t, f["memory_layout"]),
        staging_datatype=_enum(t, f["staging_datatype"]),
    )


def read_value(index: int, t: Table) -> VkValue:
    """One VkValue, whichever member of `GraphTypes` it holds."""
    union = _VALUE["value"]
    tag, sub = t.union(union.slot, "value")
    if tag == 0:
        return VkValue(index, "none")
    member = UNIONS[union.ref].get(tag)
    if member is None:
        return VkValue(index, f"unknown_{tag}")
    if sub is None:
        return VkValue(index, member)
    if member == "VkTensor":
        return VkValue(index, member, tensor=read_tensor(sub))
    fields = TABLES[member]
    if not fields:  # Null
        return VkValue(index, member)
    f = fields[0]  # every other member holds one field
    if f.kind == "string":
        return VkValue(index, member, sub.string(f.slot, f.name))
    if f.kind == "vector":
        items = sub.scalars(f.slot, f.fmt, f.name)
        if member == "BoolList":
            return VkValue(index, member, [bool(v) for v in items])
        return VkValue(index, member, list(items))
    raw = sub.scalar(f.slot, f.fmt, f.default)
    return VkValue(index, member, bool(raw) if member == "Bool" else raw)


def read_call(t: Table) -> OperatorCall:
    f = _CALL
    return OperatorCall(
        node_id=t.int(f["node_id"].slot, f["node_id"].fmt),
        name=t.string(f["name"].slot, "name") or "",
        args=t.ints(f["args"].slot, f["args"].fmt, "args"),
    )


def read_bytes_ref(t: Table) -> VkBytesRef:
    f = _BYTES
    return VkBytesRef(
        offset=t.int(f["offset"].slot, f["offset"].fmt),
        length=t.int(f["length"].slot, f["length"].fmt),
        named_key=t.string(f["named_key"].slot, "named_key") or "",
    )


def graph_enum(root: Table, name: str) -> str:
    return _enum(root, GRAPH[name])


def read_header(payload: memoryview, part: str, base: int) -> Header:
    """The `VH00` header (vulkan_graph_serialize.py's VulkanDelegateHeader), every region checked
    against the payload."""
    size = len(payload)
    if size < HEADER_LENGTH:
        raise PteFormatError(
            f"payload is {size} bytes; a Vulkan payload starts with a {HEADER_LENGTH}-byte header",
            part=part,
            offset=base,
        )
    magic = bytes(payload[4:8])
    if magic != HEADER_MAGIC:
        raise PteFormatError(
            f"expected {HEADER_MAGIC!r} at bytes 4-7, found {magic!r}", part=part, offset=base + 4
        )
    (length,) = struct.unpack_from("<H", payload, 8)
    fb_off, fb_size, b_off, b_size = struct.unpack_from("<IIIQ", payload, 10)
    if length < HEADER_LENGTH:
        raise PteFormatError(
            f"VH00 header length {length} is less than {HEADER_LENGTH}", part=part, offset=base + 8
        )
    if fb_size < 8 or fb_off < length or fb_off + fb_size > size:
        raise PteFormatError(
            f"VH00 header puts the FlatBuffer at [{fb_off}, {fb_off + fb_size}), outside the "
            f"{size}-byte payload (or overlapping the header)",
            part=part,
            offset=base + 10,
        )
    if b_off + b_size > size or b_off < fb_off + fb_size:
        raise PteFormatError(
            f"VH00 header puts the raw bytes at [{b_off}, {b_off + b_size}), outside the "
            f"{size}-byte payload (or overlapping the FlatBuffer)",
            part=part,
            offset=base + 18,
        )
    return Header(fb_off, fb_size, b_off, b_size, length)


def check_identifier(ident: bytes, part: str, at: int) -> None:
    if ident != FILE_IDENTIFIER:
        raise PteFormatError(
            f"expected FlatBuffer identifier {FILE_IDENTIFIER!r}, found {ident!r}",
            part=part,
            offset=at,
        )
