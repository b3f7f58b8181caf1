"""The fragmentation numbers of one method, as typed data: what `summary`, `check`, `diff` and the
Model Explorer attributes show (`render/summary_json.py` gives the stable JSON; the keys are in
docs/json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pte_adapter.analysis.memory import MethodMemory, TensorLife
from pte_adapter.analysis.npu_estimate import MethodEstimate
from pte_adapter.analysis.partitions import MethodPartitions, Partition
from pte_adapter.analysis.source import InstructionSource, MethodSource, PartitionSource
from pte_adapter.analysis.why import Reason
from pte_adapter.program.model import Method


@dataclass
class PartitionSummary:
    index: int
    name: str
    backend: str
    instructions: list[int]  # [first, last] instruction index
    kernel_calls: int  # CPU islands: kernel calls (compute + glue)
    compute_ops: dict[str, int]
    glue_ops: dict[str, int]
    control: dict[str, int]
    inner_ops: int | None  # delegates: decoded operations inside (None = not decoded)
    bytes_in: int  # bytes of tensors read from other partitions / method inputs
    bytes_out: int  # bytes of tensors read by other partitions / returned by the method
    delegate_stats: dict[str, Any] = field(default_factory=dict)  # the decoder's numbers
    problems: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # layers covered (from the ETRecord)
    causes: list[str] = field(default_factory=list)  # CPU islands: "features.4 LRN → op"
    why: list[str] = field(default_factory=list)  # CPU islands: why each compute op stayed on CPU
    # The most planned arena bytes live at any of its instructions (analysis/memory.py).
    peak_live_bytes: int = 0


@dataclass
class MethodSummary:
    name: str
    instructions: int
    delegate_calls: dict[str, int]  # per backend id
    delegate_partitions: int
    cpu_islands: int
    cpu_kernel_calls: int
    cpu_compute_calls: int
    cpu_glue_calls: int
    cpu_compute_ops: dict[str, int]  # operator -> calls
    cpu_glue_ops: dict[str, int]
    crossings: dict[str, int]  # "CPU→EthosUBackend" -> tensor edges
    crossing_bytes: dict[str, int]
    handoffs: dict[str, int]  # "EthosUBackend→EthosUBackend" -> tensors passed delegate to delegate
    handoff_bytes: dict[str, int]
    delegated_share_by_instructions: float
    delegated_share_by_inner_ops: float | None
    partitions: list[PartitionSummary]
    problems: list[str]
    # The estimated cost on the NPU and of the split (analysis/npu_estimate.py); None when no
    # partition has an estimate.
    npu_estimate: MethodEstimate | None = None
    # Per CPU compute kernel and partitioner: why it was not delegated.
    why: list[Reason] = field(default_factory=list)
    # Per instruction with a recorded source (ETRecord), in instruction order.
    sources: list[InstructionSource] = field(default_factory=list)
    # The memory picture (analysis/memory.py): the most planned arena bytes live at once, the
    # tensors live then, and the largest NPU scratch of one partition (temp allocator).
    peak_live_bytes: int = 0
    live_at_peak: list[TensorLife] = field(default_factory=list)
    peak_scratch_bytes: int = 0


def partition_summary(
    method: Method, part: Partition, source: PartitionSource, why: list[str], memory: MethodMemory
) -> PartitionSummary:
    stats: dict[str, Any] = {}
    problems: list[str] = []
    if part.delegate_index is not None and 0 <= part.delegate_index < len(method.delegates):
        d = method.delegates[part.delegate_index]
        stats = dict(d.decoded.stats)
        problems = d.problems + d.decoded.problems
    return PartitionSummary(
        index=part.index,
        name=part.name,
        backend=part.backend,
        instructions=[part.instructions[0], part.instructions[-1]] if part.instructions else [],
        kernel_calls=sum(part.compute_ops.values()) + sum(part.glue_ops.values()),
        # A delegate partition's counts are empty: nothing to sort (half a method's partitions).
        compute_ops=dict(sorted(part.compute_ops.items())) if part.compute_ops else {},
        glue_ops=dict(sorted(part.glue_ops.items())) if part.glue_ops else {},
        control=dict(sorted(part.control.items())) if part.control else {},
        inner_ops=part.inner_ops,
        bytes_in=part.bytes_in,
        bytes_out=part.bytes_out,
        delegate_stats=stats,
        problems=problems,
        modules=source.modules,
        causes=source.causes,
        why=why,
        peak_live_bytes=memory.partition_peaks[part.index],
    )


def method_summary(
    method: Method,
    parts: MethodPartitions,
    source: MethodSource | None,
    partition_sources: list[PartitionSource],
    reasons: list[Reason],
    estimate: MethodEstimate | None,
    memory: MethodMemory,
) -> MethodSummary:
    """The numbers, from what the analysis found (`analysis.program_analysis`)."""
    why_by_part: list[list[str]] = [[] for _ in parts.partitions]
    for r in reasons:
        texts = why_by_part[parts.partition_of[r.instruction]]
        if r.text not in texts:
            texts.append(r.text)
    compute = parts.cpu_compute_ops()
    glue = parts.cpu_glue_ops()
    share = parts.delegated_share()
    by_ops = share["by_inner_ops"]
    return MethodSummary(
        name=method.name,
        instructions=len(method.instructions),
        delegate_calls=dict(sorted(parts.delegate_calls_by_backend().items())),
        delegate_partitions=len(parts.delegate_partitions),
        cpu_islands=len(parts.cpu_islands),
        cpu_kernel_calls=sum(compute.values()) + sum(glue.values()),
        cpu_compute_calls=sum(compute.values()),
        cpu_glue_calls=sum(glue.values()),
        cpu_compute_ops=dict(sorted(compute.items())),
        cpu_glue_ops=dict(sorted(glue.items())),
        crossings=dict(sorted(parts.crossing_counts().items())),
        crossing_bytes=dict(sorted(parts.crossing_bytes().items())),
        handoffs=dict(sorted(parts.crossing_counts(handoffs=True).items())),
        handoff_bytes=dict(sorted(parts.crossing_bytes(handoffs=True).items())),
        delegated_share_by_instructions=round(float(share["by_instructions"] or 0.0), 4),
        delegated_share_by_inner_ops=None if by_ops is None else round(float(by_ops), 4),
        partitions=[
            partition_summary(method, p, partition_sources[p.index], why_by_part[p.index], memory)
            for p in parts.partitions
        ],
        problems=list(method.problems) + list(parts.dataflow.problems),
        npu_estimate=estimate,
        why=reasons,
        sources=[s for _, s in sorted(source.instructions.items())] if source else [],
        peak_live_bytes=memory.peak_live_bytes,
        live_at_peak=list(memory.live_at_peak),
        peak_scratch_bytes=memory.peak_scratch_bytes,
    )
