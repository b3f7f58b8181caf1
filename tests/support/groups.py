"""Where the Model Explorer graph puts each partition: its group's name (`render/names.py`), for
tests that look partitions up in the graph the adapter sends."""

from __future__ import annotations

from pathlib import Path

import pte_adapter
from pte_adapter.render.names import block_group_name, partition_group_names


def group_names(path: Path) -> dict[str, list[str]]:
    """Per method, each partition's group name, as the adapter draws the program (its ETRecord and
    ETDump beside it are read, as `convert_path` reads them)."""
    result = pte_adapter.open_analysis(path)
    return {ma.name: partition_group_names(ma) for ma in result.methods}


def group_paths(path: Path) -> dict[str, list[str]]:
    """Per method, each partition's group path: "<block group>/<group>" inside a block."""
    result = pte_adapter.open_analysis(path)
    out: dict[str, list[str]] = {}
    for ma in result.methods:
        names = partition_group_names(ma)
        for b in ma.blocks:
            label = block_group_name(ma, b)
            for i in b.partitions:
                names[i] = f"{label}/{names[i]}"
        out[ma.name] = names
    return out
