"""The VGF container (Arm ML SDK for Vulkan `.vgf`): header, sections, modules, sequence, resources.

Layout (Arm `ai-ml-sdk-vgf-library`, `src/header.hpp`; little-endian, 128-byte header):
  bytes 0-3   magic `VGF1` (files from before format 0.4 use the u32 0xF0E1D2C3)
  bytes 4-5   u16 Vulkan header version the encoder was built with
  bytes 8-10  format version major, minor, patch
  bytes 16-79 four (u64 offset, u64 size) section entries, offsets from the start of the file:
              modules, model sequence, model resources, constants
The first three sections are FlatBuffers without a file identifier (`schema/vgf.fbs`). The constants
section is either raw (`CONST00\\0`, u64 count, count x 24-byte records, then the data) or, in old
files, a FlatBuffer `ConstantSection`.

`read_vgf` returns typed records with absolute file offsets (the payload's own offset added) for
every byte range it found, so that the decoder can point at constants and `size` can account for
each byte. It never copies constant data or SPIR-V words.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.errors import PteFormatError

MAGIC: Final = b"VGF1"
MAGIC_OLD: Final = struct.pack("<I", 0xF0E1D2C3)
HEADER_SIZE: Final = 128
SECTIONS: Final = ("modules", "model_sequence", "resources", "constants")
CONST_MAGIC: Final = b"CONST00\x00"
CONST_HEADER: Final = 16  # magic + u64 count
CONST_RECORD: Final = struct.Struct("<IiQQ")  # mrt_index, sparsity_dimension, size, offset

# Slots of `schema/vgf.fbs` (field i in declaration order; a union takes two).
MODULE_TABLE_MODULES: Final = 0
MODULE_TYPE, MODULE_NAME, MODULE_ENTRY, MODULE_CODE = 0, 1, 2, 3
CODE_KINDS: Final = {1: "SPIR-V", 2: "GLSL", 3: "HLSL"}
SPIRV_WORDS, SOURCE_CODE = 0, 0
MRT_ENTRIES: Final = 0
MRT_DESCRIPTOR, MRT_FORMAT, MRT_CATEGORY, MRT_DESCRIPTION = 0, 1, 2, 3
MRT_EXTRA_CONFIG, MRT_ALIAS_GROUP = 4, 6  # a union (type at 4, value at 5), then a uint
EXTRA_CONFIGS: Final = {1: "sampler"}
DESC_SHAPE, DESC_STRIDES = 0, 1
BINDING_BINDING, BINDING_MRT = 0, 1
SET_BINDINGS, SET_INDEX = 0, 1
SEQ_SEGMENTS, SEQ_INPUTS, SEQ_OUTPUTS, SEQ_INPUT_NAMES, SEQ_OUTPUT_NAMES = 0, 1, 2, 3, 4
SEG_TYPE, SEG_NAME, SEG_MODULE, SEG_SET_INFOS, SEG_INPUTS, SEG_OUTPUTS = 0, 1, 2, 3, 4, 5
SEG_CONSTANTS, SEG_DISPATCH, SEG_PUSH_CONSTANTS, SEG_CONSTANT_BINDINGS = 6, 7, 8, 9
# GraphConstantBinding {graph_constant_id: uint; constant_index: uint} (format 0.5; checked
# against Arm's encoder, which writes distinct values in that order).
GCB_GRAPH_CONSTANT_ID, GCB_CONSTANT_INDEX = 0, 1
LEGACY_CONST_DATA: Final = 0
LEGACY_MRT, LEGACY_SPARSITY, LEGACY_RAW = 0, 1, 2
UNSET: Final = 0xFFFFFFFF  # the schema's "not present" for set_index and vk_descriptor_type

MODULE_TYPES: Final = {0: "COMPUTE", 1: "GRAPH"}
CATEGORIES: Final = {0: "INPUT", 1: "OUTPUT", 2: "INTERMEDIATE", 3: "CONSTANT"}

# VkFormat / VkDescriptorType numbers (Vulkan registry) that ML graphs use; others show as numbers.
VK_FORMATS: Final = {
    9: "VK_FORMAT_R8_UNORM", 10: "VK_FORMAT_R8_SNORM", 13: "VK_FORMAT_R8_UINT",
    14: "VK_FORMAT_R8_SINT", 37: "VK_FORMAT_R8G8B8A8_UNORM", 38: "VK_FORMAT_R8G8B8A8_SNORM",
    74: "VK_FORMAT_R16_UINT", 75: "VK_FORMAT_R16_SINT", 76: "VK_FORMAT_R16_SFLOAT",
    98: "VK_FORMAT_R32_UINT", 99: "VK_FORMAT_R32_SINT", 100: "VK_FORMAT_R32_SFLOAT",
    109: "VK_FORMAT_R32G32B32A32_SFLOAT",
    110: "VK_FORMAT_R64_UINT", 111: "VK_FORMAT_R64_SINT", 112: "VK_FORMAT_R64_SFLOAT",
    1000460000: "VK_FORMAT_R8_BOOL_ARM",
}  # fmt: skip
VK_DESCRIPTORS: Final = {
    0: "VK_DESCRIPTOR_TYPE_SAMPLER", 1: "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
    2: "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", 3: "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
    6: "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER", 7: "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
    1000460000: "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
}  # fmt: skip


@dataclass(frozen=True)
class Section:
    name: str
    offset: int  # from the start of the payload
    size: int


@dataclass
class Module:
    index: int
    kind: str  # COMPUTE / GRAPH
    name: str
    entry_point: str
    code_kind: str  # SPIR-V / GLSL / HLSL / no code
    code_offset: int | None = None  # absolute file offset of the words / source text
    code_size: int = 0  # bytes
    spirv: memoryview | None = None  # the SPIR-V words' bytes (a view, not a copy)


@dataclass
class Resource:
    index: int
    category: str
    vk_format: int
    vk_descriptor_type: int
    shape: list[int]
    strides: list[int]
    alias_group: int | None = None  # resources of one group share storage
    extra_config: str = ""  # "sampler" when the resource carries a sampler configuration


@dataclass
class Constant:
    index: int
    mrt_index: int
    sparsity_dimension: int
    offset: int  # absolute file offset of the data
    size: int


@dataclass
class Binding:
    binding: int
    mrt_index: int


@dataclass
class Segment:
    index: int
    kind: str
    name: str
    module_index: int
    inputs: list[Binding]
    outputs: list[Binding]
    constants: list[int]  # constant-table indices
    # graph constant id (OpGraphConstantARM) -> constant-table index
    constant_bindings: dict[int, int]
    descriptor_sets: list[tuple[int, list[Binding]]]  # (set index, bindings)
    dispatch_shape: list[int]
    push_constant_ranges: int


@dataclass
class VgfFile:
    version: str
    vk_header_version: int
    sections: list[Section]
    base: int  # absolute file offset of the payload
    modules: list[Module] = field(default_factory=list)
    resources: list[Resource] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)
    constants_layout: str = "none"  # "raw" (CONST00), "legacy" (FlatBuffer) or "none"
    segments: list[Segment] = field(default_factory=list)
    inputs: list[Binding] = field(default_factory=list)
    outputs: list[Binding] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    has_sequence: bool = False
    problems: list[str] = field(default_factory=list)

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)


def format_name(v: int) -> str:
    return VK_FORMATS.get(v, f"VkFormat({v})")


def descriptor_name(v: int) -> str:
    if v == UNSET:
        return "none"
    return VK_DESCRIPTORS.get(v, f"VkDescriptorType({v})")


# Single-channel formats as the element types they hold (the names TOSA tensors get).
FORMAT_DTYPES: Final = {
    13: "uint8", 14: "int8", 74: "uint16", 75: "int16", 76: "float16", 98: "uint32", 99: "int32",
    100: "float32", 110: "uint64", 111: "int64", 112: "float64", 1000460000: "bool",
}  # fmt: skip


def format_dtype(vk_format: int) -> str:
    """A short element type for the tensor view: int8, float32 ... for single-channel formats, the
    format's own name otherwise (VK_FORMAT_R32G32B32A32_SFLOAT -> r32g32b32a32_sfloat)."""
    if vk_format in FORMAT_DTYPES:
        return FORMAT_DTYPES[vk_format]
    name = VK_FORMATS.get(vk_format)
    return name.removeprefix("VK_FORMAT_").lower() if name else f"vkformat_{vk_format}"


def read_header(payload: memoryview, part: str, base: int) -> tuple[str, int, list[Section]]:
    """(format version, Vulkan header version, sections), every section checked against the size."""
    size = len(payload)
    if size < HEADER_SIZE:
        raise PteFormatError(
            f"a VGF file has a {HEADER_SIZE}-byte header; the payload has {size} bytes",
            part=part,
            offset=base,
        )
    magic = bytes(payload[0:4])
    if magic not in (MAGIC, MAGIC_OLD):
        raise PteFormatError(
            f"expected VGF magic {MAGIC!r} at bytes 0-3, found {magic!r}", part=part, offset=base
        )
    (vk_header,) = struct.unpack_from("<H", payload, 4)
    major, minor, patch = payload[8], payload[9], payload[10]
    sections = []
    for i, name in enumerate(SECTIONS):
        off, length = struct.unpack_from("<QQ", payload, 16 + 16 * i)
        if off + length > size or (length and off < HEADER_SIZE):
            raise PteFormatError(
                f"VGF {name} section [{off}, {off + length}) lies outside the {size}-byte file "
                "(or inside its header)",
                part=part,
                offset=base + 16 + 16 * i,
            )
        sections.append(Section(name, off, length))
    return f"{major}.{minor}.{patch}", vk_header, sections


def _root(payload: memoryview, s: Section, part: str, base: int) -> Table | None:
    if s.size == 0:
        return None
    fb = FlatBuffer(payload[s.offset : s.offset + s.size], f"{part} {s.name}", base=base + s.offset)
    return fb.root()


def _bindings(t: Table, slot: int, what: str) -> list[Binding]:
    return [
        Binding(b.int(BINDING_BINDING, "I"), b.int(BINDING_MRT, "I"))
        for b in t.iter_tables(slot, what)
    ]


def _modules(payload: memoryview, vgf: VgfFile, part: str) -> None:
    root = _root(payload, vgf.section("modules"), part, vgf.base)
    if root is None:
        return
    for i, m in enumerate(root.iter_tables(MODULE_TABLE_MODULES, "modules")):
        kind = MODULE_TYPES.get(m.int(MODULE_TYPE, "B"), f"type_{m.int(MODULE_TYPE, 'B')}")
        tag, code = m.union(MODULE_CODE, "code")
        mod = Module(
            index=i,
            kind=kind,
            name=m.string(MODULE_NAME, "name") or f"module_{i}",
            entry_point=m.string(MODULE_ENTRY, "entry_point") or "",
            code_kind=CODE_KINDS.get(tag, "no code" if tag == 0 else f"code kind {tag}"),
        )
        if code is not None and tag == 1:
            # A [uint32] vector: bytes_span gives its element count, checked here for 4 bytes each.
            span = code.bytes_span(SPIRV_WORDS, "words")
            if span is not None:
                start, count = span[0] - vgf.base, span[1]
                if start + 4 * count > len(payload):
                    raise PteFormatError(
                        f"VGF module {mod.name}: {count} SPIR-V words do not fit in the payload",
                        part=part,
                        offset=span[0],
                    )
                mod.code_offset, mod.code_size = span[0], 4 * count
                mod.spirv = payload[start : start + 4 * count]
        elif code is not None and tag in (2, 3):
            span = code.bytes_span(SOURCE_CODE, "code")
            if span is not None:
                mod.code_offset, mod.code_size = span
        vgf.modules.append(mod)


def _resources(payload: memoryview, vgf: VgfFile, part: str) -> None:
    root = _root(payload, vgf.section("resources"), part, vgf.base)
    if root is None:
        return
    for i, r in enumerate(root.iter_tables(MRT_ENTRIES, "mrt_entry")):
        cat = r.int(MRT_CATEGORY, "B")
        desc = r.table(MRT_DESCRIPTION, "description")
        alias = r.int(MRT_ALIAS_GROUP, "I", UNSET)
        extra = r.int(MRT_EXTRA_CONFIG, "B")
        vgf.resources.append(
            Resource(
                index=i,
                category=CATEGORIES.get(cat, f"category_{cat}"),
                vk_format=r.int(MRT_FORMAT, "I"),
                vk_descriptor_type=r.int(MRT_DESCRIPTOR, "I"),
                shape=desc.ints(DESC_SHAPE, "q", "shape") if desc else [],
                strides=desc.ints(DESC_STRIDES, "q", "strides") if desc else [],
                alias_group=None if alias == UNSET else alias,
                extra_config=EXTRA_CONFIGS.get(extra, f"config {extra}") if extra else "",
            )
        )


def _constants(payload: memoryview, vgf: VgfFile, part: str) -> None:
    s = vgf.section("constants")
    if s.size == 0:
        return
    base = vgf.base
    data = payload[s.offset : s.offset + s.size]
    if bytes(data[:8]) == CONST_MAGIC:
        vgf.constants_layout = "raw"
        if s.size < CONST_HEADER:
            raise PteFormatError(
                "VGF constants section is truncated", part=part, offset=base + s.offset
            )
        (count,) = struct.unpack_from("<Q", data, 8)
        fits = (s.size - CONST_HEADER) // CONST_RECORD.size
        if count > fits:
            raise PteFormatError(
                f"VGF constants section claims {count} records; only {fits} fit in {s.size} bytes",
                part=part,
                offset=base + s.offset + 8,
            )
        data_start = CONST_HEADER + count * CONST_RECORD.size
        for i in range(count):
            rec = CONST_HEADER + i * CONST_RECORD.size
            mrt, sparsity, size, offset = CONST_RECORD.unpack_from(data, rec)
            if data_start + offset + size > s.size:
                raise PteFormatError(
                    f"VGF constant {i} ({size} bytes at +{offset}) runs past its section",
                    part=part,
                    offset=base + s.offset + rec,
                )
            vgf.constants.append(
                Constant(i, mrt, sparsity, base + s.offset + data_start + offset, size)
            )
        return
    # Legacy layout: a FlatBuffer ConstantSection{data: [ConstantData{mrt_index, sparsity, raw}]}.
    vgf.constants_layout = "legacy"
    root = FlatBuffer(data, f"{part} constants", base=base + s.offset).root()
    for i, c in enumerate(root.iter_tables(LEGACY_CONST_DATA, "data")):
        span = c.bytes_span(LEGACY_RAW, f"data[{i}].raw")
        offset, size = span if span else (base + s.offset, 0)
        vgf.constants.append(
            Constant(i, c.int(LEGACY_MRT, "I"), c.int(LEGACY_SPARSITY, "q"), offset, size)
        )


def _sequence(payload: memoryview, vgf: VgfFile, part: str) -> None:
    root = _root(payload, vgf.section("model_sequence"), part, vgf.base)
    if root is None:
        return
    vgf.has_sequence = True
    vgf.inputs = _bindings(root, SEQ_INPUTS, "inputs")
    vgf.outputs = _bindings(root, SEQ_OUTPUTS, "outputs")
    vgf.input_names = root.strings(SEQ_INPUT_NAMES, "input_names")
    vgf.output_names = root.strings(SEQ_OUTPUT_NAMES, "output_names")
    for i, seg in enumerate(root.iter_tables(SEQ_SEGMENTS, "segments")):
        kind = MODULE_TYPES.get(seg.int(SEG_TYPE, "B"), f"type_{seg.int(SEG_TYPE, 'B')}")
        constants = seg.ints(SEG_CONSTANTS, "I", "constants")
        if seg.has(SEG_CONSTANT_BINDINGS):
            cbind = {
                b.int(GCB_GRAPH_CONSTANT_ID, "I"): b.int(GCB_CONSTANT_INDEX, "I")
                for b in seg.iter_tables(SEG_CONSTANT_BINDINGS, "constant_bindings")
            }
        else:  # files before format 0.5: graph constant id == constant index
            cbind = {c: c for c in constants}
        sets = []
        for pos, info in enumerate(seg.iter_tables(SEG_SET_INFOS, "set_infos")):
            index = info.int(SET_INDEX, "I", UNSET)
            sets.append(
                (pos if index == UNSET else index, _bindings(info, SET_BINDINGS, "bindings"))
            )
        vgf.segments.append(
            Segment(
                index=i,
                kind=kind,
                name=seg.string(SEG_NAME, "name") or f"segment_{i}",
                module_index=seg.int(SEG_MODULE, "I"),
                inputs=_bindings(seg, SEG_INPUTS, "inputs"),
                outputs=_bindings(seg, SEG_OUTPUTS, "outputs"),
                constants=constants,
                constant_bindings=cbind,
                descriptor_sets=sets,
                dispatch_shape=seg.ints(SEG_DISPATCH, "I", "dispatch_shape"),
                push_constant_ranges=seg.vector_len(SEG_PUSH_CONSTANTS, 4, "push_constant_ranges"),
            )
        )


def read_vgf(payload: memoryview, part: str, base: int) -> VgfFile:
    """Every table of the container; raises `PteFormatError` on bytes that do not form one.

    Cross-references (a segment naming a module, constant or resource that does not exist) are
    not errors here: they go to `problems`, so that the rest can still be shown.
    """
    version, vk_header, sections = read_header(payload, part, base)
    vgf = VgfFile(version, vk_header, sections, base)
    _modules(payload, vgf, part)
    _resources(payload, vgf, part)
    _constants(payload, vgf, part)
    _sequence(payload, vgf, part)
    n_res, n_const, n_mod = len(vgf.resources), len(vgf.constants), len(vgf.modules)
    for c in vgf.constants:
        if c.mrt_index >= n_res:
            vgf.problems.append(
                f"constant {c.index} names resource {c.mrt_index}, which does not exist"
            )
    for seg in vgf.segments:
        if seg.module_index >= n_mod:
            vgf.problems.append(
                f"segment {seg.name} uses module {seg.module_index}; there are {n_mod}"
            )
        for ci in seg.constants:
            if ci >= n_const:
                vgf.problems.append(f"segment {seg.name} uses constant {ci}; there are {n_const}")
        for b in (*seg.inputs, *seg.outputs, *(b for _, bs in seg.descriptor_sets for b in bs)):
            if b.mrt_index >= n_res:
                vgf.problems.append(
                    f"segment {seg.name} binds resource {b.mrt_index}, which does not exist"
                )
    for what, bindings in (("model input", vgf.inputs), ("model output", vgf.outputs)):
        for b in bindings:
            if b.mrt_index >= n_res:
                vgf.problems.append(
                    f"{what} refers to resource {b.mrt_index}, which does not exist"
                )
    vgf.problems = list(dict.fromkeys(vgf.problems))
    return vgf
