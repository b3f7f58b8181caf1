"""Where the Model Explorer graph puts each partition: its group's name (`render/group_facts.py`), for
tests that look partitions up in the graph the adapter sends."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pte_adapter
from pte_adapter.analysis.partitions import CPU, Partition, partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.render.group_facts import block_and_run_names, drawn_group_names


def group_names(path: Path) -> dict[str, list[str]]:
    """Per method, each partition's group name, as the adapter draws the program (its ETRecord and
    ETDump beside it are read, as `convert_path` reads them; short inside a block)."""
    result = pte_adapter.open_analysis(path)
    return {ma.name: drawn_group_names(ma) for ma in result.methods}


def group_paths(path: Path) -> dict[str, list[str]]:
    """Per method, each partition's group path: "<block group>/<group>" inside a block,
    "<run group>/<block group>/<group>" inside a run of blocks."""
    result = pte_adapter.open_analysis(path)
    out: dict[str, list[str]] = {}
    for ma in result.methods:
        names = drawn_group_names(ma)
        labels, runs = block_and_run_names(ma)
        for run, run_label in zip(ma.block_runs, runs, strict=True):
            for k in run.blocks:
                labels[k] = f"{run_label}/{labels[k]}"
        for b, label in zip(ma.blocks, labels, strict=True):
            for i in b.partitions:
                names[i] = f"{label}/{names[i]}"
        out[ma.name] = names
    return out


@dataclass(frozen=True)
class DelegatedPartition:
    """A delegated partition and where the graph draws it."""

    partition: Partition
    view: DelegateGraph  # its delegate's first decoded graph, drawn inside its group
    call: str  # node id of its DelegateCall; the view's node k is drawn as f"{call}.{k}"
    group: str  # its group's name


def delegated_partitions(path: Path, method: str = "forward") -> list[DelegatedPartition]:
    """Each delegated partition of a method, in order: from the program model and the partition
    analysis, not from the renderer."""
    (m,) = [m for m in pte_adapter.load(path).methods if m.name == method]
    parts = partition_method(m)
    ids = instruction_role_ids(m, parts)
    groups = group_names(path)[method]
    out = []
    for part in parts.partitions:
        if part.backend == CPU:
            continue
        assert part.delegate_index is not None
        view = m.delegates[part.delegate_index].decoded.graphs[0]
        out.append(DelegatedPartition(part, view, ids[part.instructions[0]], groups[part.index]))
    return out
