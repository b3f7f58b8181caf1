"""Where the bytes of an XNNPACK payload go (`Backend.layout`)."""

from __future__ import annotations

from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan
from pte_adapter.delegates.xnnpack import decode as xnnpack


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    """The XH00 header, the graph FlatBuffer and each constant in the constant data block
    (constants kept in named data are listed by key instead)."""
    part = "XNNPACK payload"
    header = xnnpack.read_header(payload, part, base)
    layout = PayloadLayout(filler_kind="padding", filler_name="payload padding")
    if header.flatbuffer_offset:
        length = int.from_bytes(payload[8:10], "little")
        layout.spans.append(PayloadSpan("payload_header", "XH00 header", base, length))
    layout.spans.append(
        PayloadSpan(
            "xnnpack_flatbuffer",
            "XNNPACK graph FlatBuffer",
            base + header.flatbuffer_offset,
            header.flatbuffer_size,
        )
    )
    fb = FlatBuffer(
        payload[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size],
        part,
        base=base + header.flatbuffer_offset,
    )
    root = fb.root()
    block = PayloadSpan(
        "xnnpack_constant_block",
        "constant data block",
        base + header.constant_offset,
        header.constant_size,
    )
    seen: set[tuple[int, int]] = set()
    slot = xnnpack._GRAPH["constant_data"].slot
    for idx, t in enumerate(root.iter_tables(slot, "constant_data")):
        rec = xnnpack.read_record(t, "ConstantDataOffset")
        size = xnnpack._int(rec.fields.get("size"))
        key = str(rec.fields.get("named_key") or "")
        offset = xnnpack._int(rec.fields.get("offset"))
        if key:
            layout.named_keys.setdefault(key, f"XNNPACK constant {idx}")
            continue
        if idx == 0 or offset == xnnpack.UINT64_MAX or size == 0:
            continue
        if offset + size > header.constant_size or (offset, size) in seen:
            continue  # the decoder reports bad offsets; a shared constant counts once
        seen.add((offset, size))
        block.children.append(
            PayloadSpan("xnnpack_constant", f"XNNPACK constant {idx}", block.offset + offset, size)
        )
    if header.constant_size:
        layout.spans.append(block)
    return layout
