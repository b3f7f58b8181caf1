"""Where the bytes of a Core ML payload go (`Backend.layout`): each file of the flattened folder and
the folder's index; what is left is the alignment between files."""

from __future__ import annotations

from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.coreml.filetree import read_file_tree
from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    tree = read_file_tree(payload, "Core ML payload", base)
    layout = PayloadLayout(filler_kind="padding", filler_name="payload padding")
    seen: set[tuple[int, int]] = set()
    for f in tree.files:
        if f.size == 0 or (f.offset, f.size) in seen:
            continue
        seen.add((f.offset, f.size))
        layout.spans.append(PayloadSpan("coreml_file", f.path, base + f.offset, f.size))
    layout.spans.append(
        PayloadSpan(
            "coreml_index", "folder index (JSON)", base + tree.index_offset, tree.index_size
        )
    )
    return layout
