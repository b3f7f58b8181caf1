"""How a what-if's merge changes a method's partitioning (analysis/what_if.py): which partitions
and islands become one partition, and the crossings and bytes that removes, recounted only around
the merged groups with the one crossing definition of `partitions.py`."""

from __future__ import annotations

from collections import Counter

from pte_adapter.analysis.dataflow import TensorEdge
from pte_adapter.analysis.partitions import (
    Crossing,
    MethodPartitions,
    Origins,
    Partition,
    crossings_of,
    kernel_names,
)
from pte_adapter.backends import CPU
from pte_adapter.program.model import Method


def merged_groups(parts: MethodPartitions, absorbed: set[int]) -> list[list[int]]:
    """The partitions after absorbing islands: each group a list of old partition indices."""
    groups: list[list[int]] = []
    open_backend: str | None = None  # the backend of the last group, while it may still grow
    pending: list[int] = []  # absorbed islands waiting for a delegate partition after them
    for p in parts.partitions:
        if p.is_cpu and p.index in absorbed:
            if open_backend is not None:
                groups[-1].append(p.index)
            else:
                pending.append(p.index)
            continue
        if p.is_cpu:
            groups.extend([i] for i in pending)  # nothing to join: they stay islands
            pending = []
            groups.append([p.index])
            open_backend = None
            continue
        last = groups[-1] if groups else []
        joins = (
            open_backend == p.backend and last and parts.partitions[last[-1]].is_cpu and not pending
        )
        if joins:
            last.append(p.index)
        else:
            groups.append([*pending, p.index])
        pending = []
        open_backend = p.backend
    groups.extend([i] for i in pending)
    return groups


def has_delegate(parts: MethodPartitions, group: list[int]) -> bool:
    return any(not parts.partitions[i].is_cpu for i in group)


def merge_plan(parts: MethodPartitions, islands: list[int]) -> tuple[list[list[int]], list[int]]:
    """(the groups that become one partition each, the islands with nothing to join). One island
    looks only at its neighbours, as `merged_groups` would; several walk the method."""
    if len(islands) == 1:
        i, n = islands[0], len(parts.partitions)
        before = parts.partitions[i - 1] if i > 0 else None
        after = parts.partitions[i + 1] if i + 1 < n else None
        prev = before is not None and not before.is_cpu
        nxt = after is not None and not after.is_cpu
        if prev and nxt and before is not None and after is not None:
            if before.backend == after.backend:
                return [[i - 1, i, i + 1]], []
            return [[i - 1, i]], []
        if prev:
            return [[i - 1, i]], []
        if nxt:
            return [[i, i + 1]], []
        return [], [i]
    groups = merged_groups(parts, set(islands))
    merged = [g for g in groups if len(g) > 1 and has_delegate(parts, g)]
    return merged, [i for i in islands if [i] in groups]


class MethodFlow:
    """What every scenario of a method looks up, made once: who reads each instruction's
    results, who wrote each value, the reads touching each instruction, the values of dynamic
    shape, the crossings per partition."""

    def __init__(
        self, method: Method, parts: MethodPartitions, kernels: list[str] | None = None
    ) -> None:
        flow = parts.dataflow
        self.kernels = kernel_names(method) if kernels is None else kernels
        reads = [e for edges in flow.edges for e in edges] + flow.loop_edges
        self.origins = Origins(method, reads)
        self.readers = flow.readers
        self.touching: dict[int, list[TensorEdge]] = {}
        for e in [*reads, *flow.output_edges]:
            self.touching.setdefault(e.consumer, []).append(e)
            if e.producer >= 0:
                self.touching.setdefault(e.producer, []).append(e)
        self.writer: dict[int, int] = {}
        for i, io in enumerate(flow.io):
            for v in io.output_tensors:
                self.writer[v] = i
        # Values whose shape is dynamic (an island touching one is priced at its upper bounds).
        self.dynamic = frozenset(
            [i for i, t in enumerate(method.tensors) if t is not None and t.dynamism != "static"]
        )
        self.crossings_at: dict[str, list[Crossing]] = {}
        for c in parts.crossings:
            self.crossings_at.setdefault(c.source, []).append(c)
            if c.target != c.source:
                self.crossings_at.setdefault(c.target, []).append(c)


def kept_on_cpu(
    method: Method, parts: MethodPartitions, group: list[int], flow: MethodFlow
) -> list[int]:
    """The dequantize kernels of a group's islands whose float result is read outside the group:
    the partition hands out the integer tensor, and they stay on the CPU beside it."""
    inside = {i for k in group for i in parts.partitions[k].instructions}
    return [
        i
        for k in group
        if parts.partitions[k].is_cpu
        for i in parts.partitions[k].instructions
        if "dequantize" in flow.kernels[i] and not flow.readers.get(i, set()) <= inside
    ]


def _integer_side(
    method: Method, flow: MethodFlow, parts: MethodPartitions, c: Crossing
) -> tuple[int, int]:
    """(value, bytes) a crossing into a delegate moves: a float a CPU dequantize made crosses as
    the integer tensor it was made from (the partition would take the dequantize in)."""
    w = flow.writer.get(c.value)
    if c.target.startswith("CPU") or w is None or "dequantize" not in flow.kernels[w]:
        return c.value, c.nbytes
    edges = parts.dataflow.edges[w] if w < len(parts.dataflow.edges) else []
    source = next((e.value for e in edges), None)
    tensor = method.tensor(source) if source is not None else None
    return (
        (source, tensor.nbytes)
        if source is not None and tensor is not None
        else (c.value, c.nbytes)
    )


def crossings_removed(
    method: Method,
    parts: MethodPartitions,
    groups: list[list[int]],
    kept: set[int],
    flow: MethodFlow,
) -> tuple[int, int]:
    """(crossings, bytes) removed when the merged groups become one partition each, `kept`
    instructions staying on the CPU: only the reads that touch the groups are recounted."""
    new: list[Partition] = []
    moved: dict[int, Partition] = {}
    base = len(parts.partitions)
    names: set[str] = set()
    numbers: dict[str, int] = {}
    # The merged partitions stand in for their members in `crossings_of`, which reads only their
    # names and backends: they share one empty count of kernels, not three each.
    empty: Counter[str] = Counter()
    for g in groups:
        members = [parts.partitions[i] for i in g]
        names.update([p.name for p in members])
        backend = next(p.backend for p in members if not p.is_cpu)
        number = numbers[backend] = numbers.get(backend, 0) + 1
        part = Partition(base + len(new), backend, 10_000 + number, [], None, empty, empty, empty)
        stay = Partition(base + len(new) + 1, CPU, 10_000 + len(new), [], None, empty, empty, empty)
        for p in members:
            for i in p.instructions:
                target = stay if i in kept else part
                target.instructions.append(i)
                moved[i] = target
        new.append(part)
        new.append(stay)
    before = {id(c): c for name in names for c in flow.crossings_at.get(name, [])}
    reads: dict[int, TensorEdge] = {}
    for i in moved:
        for e in flow.touching.get(i, []):
            reads[id(e)] = e
    after = crossings_of(
        method,
        parts.dataflow,
        parts.partitions,
        parts.partition_of,
        only=list(reads.values()),
        origins=flow.origins,
        moved=moved,
    )
    seen: dict[tuple[int, str, str], int] = {}
    for c in after:
        value, nbytes = _integer_side(method, flow, parts, c)
        seen.setdefault((value, c.direction, c.target), nbytes)
    removed_bytes = sum(c.nbytes for c in before.values()) - sum(seen.values())
    return len(before) - len(seen), removed_bytes
