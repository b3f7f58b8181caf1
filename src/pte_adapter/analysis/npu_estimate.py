"""What a method costs on the Ethos-U NPU, and what its split into partitions costs.

The per-operation estimate is made when the payload is decoded (delegates/ethosu/perf.py) and
summed per partition into the delegate's typed `DelegateEstimate`. Here those sums are added up per
method, the busiest resource is named, and the fragmentation is priced:

- boundary traffic: every byte that crosses a partition boundary (CPU<->NPU crossings and
  NPU->NPU handoffs) is written once and read once through the memory of the arena, where the
  runtime places every delegate input and output (the slowest memory such a tensor can touch:
  the constant memory, often flash, holds no feature maps);
- per-invocation work: each invocation after the first restarts the pipeline, paying the
  latencies of a first read of the command stream (constant memory), a first IFM read and a
  last OFM write (arena memory) once more.

Not priced: the CPU time of the islands between partitions (quantize/dequantize glue and the
operators the NPU did not take; there is no CPU model) and the host driver's invocation cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.program.delegate_graph import DelegateEstimate, EstimateTarget
from pte_adapter.program.model import Method

FRAGMENTATION_ASSUMPTIONS = (
    "boundary bytes are written once and read once through the arena's memory (region 1), where "
    "the runtime places every delegate input and output",
    "each invocation after the first pays a command-stream read latency (constant memory) and "
    "a first-IFM read and last-OFM write latency (arena memory)",
    "not included: CPU time of the islands (no CPU model) and the host driver's invocation cost",
)


@dataclass
class Fragmentation:
    """What the split into partitions costs on top of the partitions' own time."""

    boundary_bytes: int  # bytes crossing into, out of or between estimated partitions
    boundary_memory: str  # where they go: the arena's memory
    boundary_memory_gb_per_s: float
    boundary_cycles: int
    invocations: int
    per_invocation_cycles: int
    invocation_cycles: int
    cycles: int
    time_us: float
    share_of_npu_time: float | None
    assumptions: tuple[str, ...]


@dataclass
class MethodEstimate:
    """The estimated partitions of one method, summed, and the fragmentation cost."""

    partitions: int
    cycles: int
    time_us: float
    per_partition_us: dict[int, float]  # partition index -> its estimate
    macs: int
    busy_cycles: dict[str, int]
    busiest: str | None
    not_covered_ops: int
    target: EstimateTarget
    assumptions: tuple[str, ...]
    fragmentation: Fragmentation


def method_estimate(method: Method, parts: MethodPartitions) -> MethodEstimate | None:
    """Per-method sums and the fragmentation cost; None when no partition of the method has an
    estimate."""
    rows: list[tuple[int, DelegateEstimate]] = []  # partition index, its estimate
    for p in parts.delegate_partitions:
        if p.delegate_index is None or not 0 <= p.delegate_index < len(method.delegates):
            continue
        est = method.delegates[p.delegate_index].decoded.estimate
        if est is not None:
            rows.append((p.index, est))
    if not rows:
        return None
    target = rows[0][1].target
    time_us = sum(e.time_us for _, e in rows)
    busy: dict[str, int] = {}
    for _, e in rows:
        for name, c in e.busy_cycles.items():
            busy[name] = busy.get(name, 0) + c
    # Each tensor crossing into, out of or between partitions of the estimated backends (an
    # undecodable partition of the same backend included), counted once.
    estimated = {parts.partitions[i].backend for i, _ in rows}
    backend_of = {p.name: p.backend for p in parts.partitions}
    boundary = sum(
        c.nbytes
        for c in parts.crossings
        if backend_of.get(c.source) in estimated or backend_of.get(c.target) in estimated
    )
    return MethodEstimate(
        partitions=len(rows),
        cycles=sum(e.cycles for _, e in rows),
        time_us=round(time_us, 1),
        per_partition_us={i: e.time_us for i, e in rows},
        macs=sum(e.macs for _, e in rows),
        busy_cycles=dict(sorted(busy.items())),
        busiest=max(busy.items(), key=lambda kv: kv[1])[0] if busy else None,
        not_covered_ops=sum(e.not_covered for _, e in rows),
        target=target,
        assumptions=rows[0][1].assumptions,
        fragmentation=_fragmentation(len(rows), boundary, target, time_us),
    )


def _fragmentation(
    invocations: int, boundary: int, target: EstimateTarget, npu_time_us: float
) -> Fragmentation:
    const, arena = target.constant_memory, target.arena_memory
    boundary_cycles = 2 * boundary / arena.bytes_per_cycle
    per_invocation = const.read_latency + arena.read_latency + arena.write_latency
    invocation_cycles = (invocations - 1) * per_invocation
    cycles = boundary_cycles + invocation_cycles
    time_us = cycles / target.clock_hz * 1e6
    return Fragmentation(
        boundary_bytes=boundary,
        boundary_memory=arena.name,
        boundary_memory_gb_per_s=round(arena.bytes_per_cycle * target.clock_hz / 1e9, 3),
        boundary_cycles=round(boundary_cycles),
        invocations=invocations,
        per_invocation_cycles=per_invocation,
        invocation_cycles=invocation_cycles,
        cycles=round(cycles),
        time_us=round(time_us, 1),
        share_of_npu_time=round(time_us / npu_time_us, 4) if npu_time_us else None,
        assumptions=FRAGMENTATION_ASSUMPTIONS,
    )
