"""Where the bytes of a delegate payload go: byte-exact spans, for `pte-adapter size`.

Each backend's `layout` hook (`Backend.layout` in `pte_adapter.backends`, e.g.
`delegates/ethosu/layout.py`) returns `PayloadSpan`s (absolute file offsets, as the payload's own
offset is added) that do not overlap; whatever they leave uncovered the caller labels as
padding/structure. The hooks reuse their decoder's readers and never read constant bytes
themselves. A backend without a hook, or a payload its hook cannot read, is one opaque span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pte_adapter.backends import BACKENDS
from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.registry import hook
from pte_adapter.errors import PteFormatError


@dataclass
class PayloadSpan:
    kind: str
    name: str
    offset: int  # absolute in the .pte
    size: int
    children: list[PayloadSpan] = field(default_factory=list)
    detail: dict[str, str | int] = field(default_factory=dict)


@dataclass
class PayloadLayout:
    spans: list[PayloadSpan] = field(default_factory=list)
    filler_kind: str = "payload_structure"  # what the uncovered bytes are
    filler_name: str = "payload structure"
    # Named-data keys the payload refers to -> what uses them (e.g. "XNNPACK constant 3").
    named_keys: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


LayoutHook = Callable[[memoryview, int, DataSources | None], PayloadLayout]


def payload_layout(
    backend: str, payload: memoryview, base: int, sources: DataSources | None
) -> PayloadLayout:
    """The layout of one payload; a payload that cannot be read is one opaque span."""
    record = BACKENDS.get(backend)
    if record is None or record.layout is None:
        return PayloadLayout(
            filler_kind="payload_opaque", filler_name=f"{backend} payload (parts not broken down)"
        )
    layout: LayoutHook = hook(record.layout)
    try:
        return layout(payload, base, sources)
    except PteFormatError as e:
        return PayloadLayout(
            filler_kind="payload_opaque",
            filler_name=f"{backend} payload (unreadable, not broken down)",
            problems=[str(e)],
        )
