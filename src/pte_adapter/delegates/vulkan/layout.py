"""Where the bytes of a Vulkan payload go (`Backend.layout`)."""

from __future__ import annotations

from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan
from pte_adapter.delegates.vulkan.decode import read_data_refs
from pte_adapter.delegates.vulkan.records import UINT64_MAX


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    """The VH00 header, the VkGraph FlatBuffer and the raw bytes block with each inline constant
    and shader in it (constants kept in named data are listed by key instead); the rest is the
    16-byte alignment padding between the parts."""
    header, constants, shaders = read_data_refs(payload, "Vulkan payload", base)
    layout = PayloadLayout(filler_kind="padding", filler_name="payload padding")
    layout.spans.append(PayloadSpan("payload_header", "VH00 header", base, header.length))
    layout.spans.append(
        PayloadSpan(
            "vulkan_flatbuffer",
            "Vulkan graph FlatBuffer (VK00)",
            base + header.flatbuffer_offset,
            header.flatbuffer_size,
        )
    )
    block = PayloadSpan(
        "vulkan_raw_bytes", "raw bytes block", base + header.bytes_offset, header.bytes_size
    )
    seen: set[tuple[int, int]] = set()
    for kind, refs in (("constant", constants), ("shader", shaders)):
        for idx, ref in enumerate(refs):
            if ref.named_key:
                layout.named_keys.setdefault(ref.named_key, f"Vulkan {kind} {idx}")
                continue
            end = ref.offset + ref.length
            if ref.length == 0 or ref.offset == UINT64_MAX or end > header.bytes_size:
                continue  # empty, or invalid (the decoder reports it)
            if (ref.offset, ref.length) in seen:
                continue  # shared bytes count once
            seen.add((ref.offset, ref.length))
            block.children.append(
                PayloadSpan(
                    f"vulkan_{kind}", f"Vulkan {kind} {idx}", block.offset + ref.offset, ref.length
                )
            )
    block.children.sort(key=lambda s: s.offset)
    if header.bytes_size:
        layout.spans.append(block)
    return layout
