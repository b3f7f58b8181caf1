"""Where the bytes of a VGF payload go, for `pte-adapter size`: every byte in one span.

The header, the three FlatBuffer tables (modules, model sequence, resources) and the constants
section. Inside the module table each SPIR-V module is broken into runs of its instructions by
kind (types, inline constants, graph operations, shader functions, metadata); inside the constants
section the record table and every constant's bytes (the encoder pads each to 8 bytes: that is the
padding between them). Bytes between sections are padding. Constant data is never read.
"""

from __future__ import annotations

from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan
from pte_adapter.delegates.vgf.container import (
    CONST_HEADER,
    CONST_RECORD,
    HEADER_SIZE,
    VgfFile,
    format_dtype,
    read_vgf,
)
from pte_adapter.delegates.vgf.spirv import SPAN_NAMES, byte_runs
from pte_adapter.errors import PteFormatError
from pte_adapter.wording import shape_compact

SECTION_KINDS = {
    "modules": ("vgf_module_table", "VGF module table FlatBuffer"),
    "model_sequence": ("vgf_model_sequence", "VGF model sequence FlatBuffer"),
    "resources": ("vgf_resource_table", "VGF resource table FlatBuffer"),
    "constants": ("vgf_constants", "VGF constants section"),
}


def _fill(parent: PayloadSpan, kind: str, name: str) -> None:
    """Add spans of `kind` for the bytes of `parent` its children leave uncovered."""
    pos = parent.offset
    gaps = []
    for c in sorted(parent.children, key=lambda s: s.offset):
        if c.offset > pos:
            gaps.append(PayloadSpan(kind, name, pos, c.offset - pos))
        pos = max(pos, c.offset + c.size)
    if pos < parent.offset + parent.size:
        gaps.append(PayloadSpan(kind, name, pos, parent.offset + parent.size - pos))
    parent.children = sorted(parent.children + gaps, key=lambda s: s.offset)


def _modules(vgf: VgfFile, span: PayloadSpan, problems: list[str]) -> None:
    for m in vgf.modules:
        if m.code_offset is None or not m.code_size:
            continue
        kind = "vgf_spirv_module" if m.spirv is not None else "vgf_shader_source"
        child = PayloadSpan(
            kind,
            f"{m.code_kind} module {m.name}",
            m.code_offset,
            m.code_size,
            detail={"module": m.name, "type": m.kind},
        )
        if m.spirv is not None:
            try:
                runs = byte_runs(m.spirv, f"VGF module {m.name}", m.code_offset)
            except PteFormatError as e:
                problems.append(str(e))
                runs = []
            child.children = [PayloadSpan(k, SPAN_NAMES[k], o, n) for k, o, n in runs]
        span.children.append(child)
    _fill(span, "vgf_flatbuffer", "module table (FlatBuffer tables)")


def _constants(vgf: VgfFile, span: PayloadSpan) -> None:
    by_index = {r.index: r for r in vgf.resources}
    seen: set[tuple[int, int]] = set()
    for c in vgf.constants:
        if not c.size or (c.offset, c.size) in seen:
            continue
        seen.add((c.offset, c.size))
        r = by_index.get(c.mrt_index)
        shape = shape_compact(r.shape) if r else ""
        span.children.append(
            PayloadSpan(
                "vgf_constant",
                f"VGF constant {c.index} (r{c.mrt_index})",
                c.offset,
                c.size,
                detail={"shape": shape, "dtype": format_dtype(r.vk_format) if r else ""},
            )
        )
    if vgf.constants_layout == "raw":
        records = CONST_HEADER + len(vgf.constants) * CONST_RECORD.size
        span.children.append(
            PayloadSpan("vgf_constant_records", "VGF constant records", span.offset, records)
        )
        _fill(span, "padding", "constant padding")
    else:  # the legacy FlatBuffer ConstantSection
        _fill(span, "vgf_flatbuffer", "constants (FlatBuffer tables)")


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    """Byte-exact spans of a VGF payload; raises `PteFormatError` on a payload it cannot read."""
    vgf = read_vgf(payload, "VGF payload", base)
    layout = PayloadLayout(filler_kind="padding", filler_name="section padding")
    layout.spans.append(PayloadSpan("vgf_header", "VGF header", base, HEADER_SIZE))
    for s in vgf.sections:
        if not s.size:
            continue
        kind, name = SECTION_KINDS[s.name]
        span = PayloadSpan(kind, name, base + s.offset, s.size)
        if s.name == "modules":
            _modules(vgf, span, layout.problems)
        elif s.name == "constants":
            _constants(vgf, span)
        layout.spans.append(span)
    return layout
