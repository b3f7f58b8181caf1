"""The fragmentation numbers as plain data: what the CLI prints, the JSON holds and the API returns.

`summarize(program)` -> {"file": ..., "methods": [MethodSummary as dict, ...]}. Keys are stable;
new keys may be added, existing ones keep their meaning (documented in the README).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pte_adapter.analysis.npu_performance import method_npu_estimate
from pte_adapter.analysis.partitions import MethodPartitions, Partition, partition_method
from pte_adapter.program import Method, Program


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
    delegate_stats: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


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
    # Ethos-U performance estimate and fragmentation cost (analysis/npu_performance.py);
    # None when no partition has one.
    npu_estimate: dict[str, Any] | None = None


def partition_summary(method: Method, part: Partition) -> PartitionSummary:
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
        compute_ops=dict(sorted(part.compute_ops.items())),
        glue_ops=dict(sorted(part.glue_ops.items())),
        control=dict(sorted(part.control.items())),
        inner_ops=part.inner_ops,
        bytes_in=part.bytes_in,
        bytes_out=part.bytes_out,
        delegate_stats=stats,
        problems=problems,
    )


def method_summary(method: Method, parts: MethodPartitions | None = None) -> MethodSummary:
    parts = parts or partition_method(method)
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
        partitions=[partition_summary(method, p) for p in parts.partitions],
        problems=list(method.problems) + list(parts.dataflow.problems),
        npu_estimate=method_npu_estimate(method, parts),
    )


def summarize(program: Program) -> dict[str, Any]:
    """Per-method partition numbers as plain data (JSON-ready)."""
    return {
        "file": program.path.name if program.path else None,
        "file_size": program.file_size,
        "methods": [asdict(method_summary(m)) for m in program.methods],
        "problems": list(program.problems),
    }
