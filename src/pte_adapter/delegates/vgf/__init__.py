"""VGF delegate payloads (ExecuTorch `VgfBackend`): the Arm ML SDK for Vulkan `.vgf` container.

Layout (Arm `ai-ml-sdk-vgf-library`, `src/header.hpp`; little-endian, 128-byte header):
  bytes 0-3   magic `VGF1` (files from before format 0.4 use the u32 0xF0E1D2C3)
  bytes 4-5   u16 Vulkan header version the encoder was built with
  bytes 8-10  format version major, minor, patch
  bytes 16-79 four (u64 offset, u64 size) section entries, offsets from the start of the file:
              modules, model sequence, model resources, constants
The first three sections are FlatBuffers without a file identifier (`schema/vgf.fbs`). The constants
section is either raw (`CONST00\\0`, u64 count, count x 24-byte records, then the data) or, in old
files, a FlatBuffer `ConstantSection`.

What we show: the modules (name, kind, entry point, SPIR-V size), the model sequence (segments with
their input/output/constant resources) as a small graph, and the resource table as its tensors. The
SPIR-V itself (the TOSA graph as Vulkan ML extensions) is not decoded here.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass
from typing import Final

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode, TensorInfo

MAGIC: Final = b"VGF1"
MAGIC_OLD: Final = struct.pack("<I", 0xF0E1D2C3)
HEADER_SIZE: Final = 128
SECTIONS: Final = ("modules", "model_sequence", "resources", "constants")
CONST_MAGIC: Final = b"CONST00\x00"
CONST_RECORD: Final = struct.Struct("<IiQQ")  # mrt_index, sparsity_dimension, size, offset

# Slots of `schema/vgf.fbs` (field i in declaration order; a union takes two).
MODULE_TABLE_MODULES: Final = 0
MODULE_TYPE, MODULE_NAME, MODULE_ENTRY, MODULE_CODE = 0, 1, 2, 3
CODE_KINDS: Final = {1: "SPIR-V", 2: "GLSL", 3: "HLSL"}
SPIRV_WORDS, SOURCE_CODE = 0, 0
MRT_ENTRIES: Final = 0
MRT_DESCRIPTOR, MRT_FORMAT, MRT_CATEGORY, MRT_DESCRIPTION = 0, 1, 2, 3
DESC_SHAPE, DESC_STRIDES = 0, 1
BINDING_BINDING, BINDING_MRT = 0, 1
SEQ_SEGMENTS, SEQ_INPUTS, SEQ_OUTPUTS, SEQ_INPUT_NAMES, SEQ_OUTPUT_NAMES = 0, 1, 2, 3, 4
SEG_TYPE, SEG_NAME, SEG_MODULE, SEG_SET_INFOS, SEG_INPUTS, SEG_OUTPUTS = 0, 1, 2, 3, 4, 5
SEG_CONSTANTS, SEG_DISPATCH = 6, 7
LEGACY_CONST_DATA: Final = 0
LEGACY_MRT, LEGACY_SPARSITY, LEGACY_RAW = 0, 1, 2

MODULE_TYPES: Final = {0: "COMPUTE", 1: "GRAPH"}
CATEGORIES: Final = {0: "INPUT", 1: "OUTPUT", 2: "INTERMEDIATE", 3: "CONSTANT"}

# VkFormat / VkDescriptorType numbers (Vulkan registry) that ML graphs use; others show as numbers.
VK_FORMATS: Final = {
    9: "VK_FORMAT_R8_UNORM", 13: "VK_FORMAT_R8_UINT", 14: "VK_FORMAT_R8_SINT",
    74: "VK_FORMAT_R16_UINT", 75: "VK_FORMAT_R16_SINT", 76: "VK_FORMAT_R16_SFLOAT",
    98: "VK_FORMAT_R32_UINT", 99: "VK_FORMAT_R32_SINT", 100: "VK_FORMAT_R32_SFLOAT",
    110: "VK_FORMAT_R64_UINT", 111: "VK_FORMAT_R64_SINT", 112: "VK_FORMAT_R64_SFLOAT",
    1000460000: "VK_FORMAT_R8_BOOL_ARM",
}  # fmt: skip
VK_DESCRIPTORS: Final = {
    1000460000: "VK_DESCRIPTOR_TYPE_TENSOR_ARM", 6: "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER",
    7: "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER", 3: "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
}  # fmt: skip
# What the encoder writes for resources without a descriptor (constants), seen in real files.
NO_DESCRIPTOR: Final = 0xFFFFFFFF


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int


def _format_name(v: int) -> str:
    return VK_FORMATS.get(v, f"VkFormat({v})")


def _descriptor_name(v: int) -> str:
    if v == NO_DESCRIPTOR:
        return "none"
    return VK_DESCRIPTORS.get(v, f"VkDescriptorType({v})")


def _dtype(vk_format: int) -> str:
    """A short element type for the tensor view (VK_FORMAT_R8_SINT -> r8_sint)."""
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


def _bindings(t: Table, slot: int, what: str) -> list[tuple[int, int]]:
    """(binding, mrt_index) pairs of a [BindingSlot] vector."""
    return [
        (b.int(BINDING_BINDING, "I"), b.int(BINDING_MRT, "I")) for b in t.iter_tables(slot, what)
    ]


def _constants(payload: memoryview, s: Section, part: str, base: int) -> list[tuple[int, int]]:
    """(mrt_index, size) of every constant in the constants section."""
    if s.size == 0:
        return []
    data = payload[s.offset : s.offset + s.size]
    if bytes(data[:8]) == CONST_MAGIC:
        if s.size < 16:
            raise PteFormatError(
                "VGF constants section is truncated", part=part, offset=base + s.offset
            )
        (count,) = struct.unpack_from("<Q", data, 8)
        if count > (s.size - 16) // CONST_RECORD.size:
            raise PteFormatError(
                f"VGF constants section claims {count} records; only "
                f"{(s.size - 16) // CONST_RECORD.size} fit in {s.size} bytes",
                part=part,
                offset=base + s.offset + 8,
            )
        payload_start = 16 + count * CONST_RECORD.size
        out = []
        for i in range(count):
            mrt, _sparsity, size, offset = CONST_RECORD.unpack_from(
                data, 16 + i * CONST_RECORD.size
            )
            if payload_start + offset + size > s.size:
                raise PteFormatError(
                    f"VGF constant {i} ({size} bytes at +{offset}) runs past its section",
                    part=part,
                    offset=base + s.offset + 16 + i * CONST_RECORD.size,
                )
            out.append((mrt, size))
        return out
    # Legacy layout: a FlatBuffer ConstantSection{data: [ConstantData{mrt_index, sparsity, raw}]}.
    root = FlatBuffer(data, f"{part} constants", base=base + s.offset).root()
    out = []
    for i, c in enumerate(root.iter_tables(LEGACY_CONST_DATA, "data")):
        span = c.bytes_span(LEGACY_RAW, f"data[{i}].raw")
        out.append((c.int(LEGACY_MRT, "I"), span[1] if span else 0))
    return out


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"VGF payload ({ctx.delegate_id})"
    base = ctx.payload_offset or 0
    version, vk_header, sections = read_header(payload, part, base)
    by_name = {s.name: s for s in sections}
    problems: list[str] = []

    # Modules.
    modules: list[str] = []
    module_names: list[str] = []
    mroot = _root(payload, by_name["modules"], part, base)
    for i, m in enumerate(mroot.iter_tables(MODULE_TABLE_MODULES, "modules") if mroot else []):
        kind = MODULE_TYPES.get(m.int(MODULE_TYPE, "B"), f"type_{m.int(MODULE_TYPE, 'B')}")
        name = m.string(MODULE_NAME, "name") or f"module_{i}"
        entry = m.string(MODULE_ENTRY, "entry_point") or ""
        tag, code = m.union(MODULE_CODE, "code")
        lang = CODE_KINDS.get(tag, "no code" if tag == 0 else f"code kind {tag}")
        if code is not None and tag == 1:
            lang += f", {code.vector_len(SPIRV_WORDS, 4, 'words')} words"
        elif code is not None and tag in (2, 3):
            src = code.string_bytes(SOURCE_CODE, "code")
            lang += f", {len(src) if src is not None else 0} bytes"
        module_names.append(name)
        modules.append(f"{name} ({kind}, entry {entry}, {lang})")

    # Resources = the tensors of the sequence graph.
    graph = DelegateGraph(name="VGF model sequence")
    categories: Counter[str] = Counter()
    rroot = _root(payload, by_name["resources"], part, base)
    for i, r in enumerate(rroot.iter_tables(MRT_ENTRIES, "mrt_entry") if rroot else []):
        cat = CATEGORIES.get(r.int(MRT_CATEGORY, "B"), f"category_{r.int(MRT_CATEGORY, 'B')}")
        categories[cat] += 1
        fmt = r.int(MRT_FORMAT, "I")
        desc = r.table(MRT_DESCRIPTION, "description")
        shape = desc.ints(DESC_SHAPE, "q", "shape") if desc else []
        strides = desc.ints(DESC_STRIDES, "q", "strides") if desc else []
        attrs = {
            "category": cat,
            "vk_format": _format_name(fmt),
            "vk_descriptor_type": _descriptor_name(r.int(MRT_DESCRIPTOR, "I")),
        }
        if strides:
            attrs["strides"] = str(strides)
        graph.tensors[f"r{i}"] = TensorInfo(
            id=f"r{i}", name=f"{cat.lower()} r{i}", shape=shape, dtype=_dtype(fmt), attrs=attrs
        )

    constants = _constants(payload, by_name["constants"], part, base)
    for ci, (mrt, size) in enumerate(constants):
        t = graph.tensors.get(f"r{mrt}")
        if t is None:
            problems.append(f"constant {ci} names resource {mrt}, which does not exist")
        else:
            t.attrs["constant_bytes"] = str(size)
            t.constant_bytes = size
            t.attrs["constant_index"] = str(ci)

    def tensor_ids(pairs: list[tuple[int, int]], what: str) -> list[str]:
        ids = []
        for _, mrt in pairs:
            if f"r{mrt}" not in graph.tensors:
                problems.append(f"{what} refers to resource {mrt}, which does not exist")
            ids.append(f"r{mrt}")
        return ids

    # Model sequence: one node per segment.
    seq_in: list[tuple[int, int]] = []
    seq_out: list[tuple[int, int]] = []
    segments: list[str] = []
    sroot = _root(payload, by_name["model_sequence"], part, base)
    if sroot is not None:
        seq_in = _bindings(sroot, SEQ_INPUTS, "inputs")
        seq_out = _bindings(sroot, SEQ_OUTPUTS, "outputs")
        in_names = sroot.strings(SEQ_INPUT_NAMES, "input_names")
        out_names = sroot.strings(SEQ_OUTPUT_NAMES, "output_names")
        for i, seg in enumerate(sroot.iter_tables(SEQ_SEGMENTS, "segments")):
            kind = MODULE_TYPES.get(seg.int(SEG_TYPE, "B"), f"type_{seg.int(SEG_TYPE, 'B')}")
            name = seg.string(SEG_NAME, "name") or f"segment_{i}"
            module = seg.int(SEG_MODULE, "I")
            consts = seg.ints(SEG_CONSTANTS, "I", "constants")
            const_ids = []
            for c in consts:
                if 0 <= c < len(constants):
                    const_ids.append(f"r{constants[c][0]}")
                else:
                    problems.append(f"segment {name} uses constant {c}; there are {len(constants)}")
            node = OpNode(
                id=f"segment{i}",
                kind=f"{kind}_SEGMENT",
                label=name,
                inputs=tensor_ids(_bindings(seg, SEG_INPUTS, "inputs"), name) + const_ids,
                outputs=tensor_ids(_bindings(seg, SEG_OUTPUTS, "outputs"), name),
                attrs={
                    "type": kind,
                    "module": module_names[module] if module < len(module_names) else str(module),
                    "constants": str(len(consts)),
                    "dispatch_shape": str(seg.ints(SEG_DISPATCH, "I", "dispatch_shape")),
                    "descriptor_sets": str(seg.vector_len(SEG_SET_INFOS, 4, "set_infos")),
                },
            )
            if module >= len(module_names):
                problems.append(
                    f"segment {name} uses module {module}; there are {len(module_names)}"
                )
            graph.nodes.append(node)
            segments.append(f"{name} ({kind}, module {node.attrs['module']})")
        # A binding may name a missing resource (reported by tensor_ids below): no name then.
        for tid, nm in zip([f"r{mrt}" for _, mrt in seq_in], in_names, strict=False):
            if tid in graph.tensors:
                graph.tensors[tid].name = nm
        for tid, nm in zip([f"r{mrt}" for _, mrt in seq_out], out_names, strict=False):
            if tid in graph.tensors:
                graph.tensors[tid].name = nm
    graph.inputs = tensor_ids(seq_in, "model input")
    graph.outputs = tensor_ids(seq_out, "model output")

    const_bytes = sum(size for _, size in constants)
    summary = {
        "format": f"VGF {version}",
        "vk_header_version": str(vk_header),
        "sections": ", ".join(f"{s.name} {s.size} B @ {s.offset}" for s in sections),
        "modules": "; ".join(modules) if modules else "none",
        "segments": "; ".join(segments) if segments else "none",
        "resources": ", ".join(f"{k} x{n}" for k, n in sorted(categories.items())) or "none",
        "inputs": str(len(seq_in)),
        "outputs": str(len(seq_out)),
        "constants": f"{len(constants)} ({const_bytes} bytes)",
    }
    graph.attrs = dict(summary)
    return DecodedDelegate(
        graphs=[graph],
        summary=summary,
        num_inputs=len(seq_in) if sroot is not None else None,
        num_outputs=len(seq_out) if sroot is not None else None,
        inner_op_count=None,  # the operators live in the SPIR-V graph, which is not decoded here
        stats={
            "vgf_modules": len(modules),
            "vgf_segments": len(segments),
            "vgf_resources": len(graph.tensors),
            "constant_bytes": const_bytes,
        },
        problems=problems,
    )
