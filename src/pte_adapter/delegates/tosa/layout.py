"""Where the bytes of a TOSA payload go (`Backend.layout`)."""

from __future__ import annotations

from pte_adapter.backends import TOSA
from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan
from pte_adapter.delegates.tosa.reader import read_tosa
from pte_adapter.wording import shape_compact


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    """The graph FlatBuffer and each constant tensor's data in it."""
    model = read_tosa(payload, f"{TOSA.id} payload", base=base)
    layout = PayloadLayout(filler_kind="tosa_flatbuffer", filler_name="TOSA graph FlatBuffer")
    seen: set[int] = set()
    for block in model.blocks:
        for t in block.tensors.values():
            if t.data_offset is None or not t.data_size or t.data_offset in seen:
                continue
            seen.add(t.data_offset)
            shape = shape_compact(t.shape or [])
            layout.spans.append(
                PayloadSpan(
                    "tosa_constant",
                    f"TOSA constant {t.name}",
                    t.data_offset,
                    t.data_size,
                    detail={"shape": shape, "dtype": t.dtype},
                )
            )
    return layout
