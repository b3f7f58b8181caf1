"""What a method costs on the Ethos-U NPU, and what its split into partitions costs.

The per-operation estimate is made when the payload is decoded (delegates/ethosu/perf.py) and
summed per partition into the delegate's stats (`npu_est_*`). Here those sums are added up per
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

from typing import Any

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.delegates.ethosu.perf import ASSUMPTIONS, Target, target_for
from pte_adapter.program.model import Method

BACKEND = "EthosUBackend"
FRAGMENTATION_ASSUMPTIONS = (
    "boundary bytes are written once and read once through the arena's memory (region 1), where "
    "the runtime places every delegate input and output",
    "each invocation after the first pays a command-stream read latency (constant memory) and "
    "a first-IFM read and last-OFM write latency (arena memory)",
    "not included: CPU time of the islands (no CPU model) and the host driver's invocation cost",
)


def _target(stats: dict[str, Any]) -> Target | None:
    parts = str(stats.get("npu_est_target", "")).split()
    if len(parts) != 3:
        return None
    try:
        return target_for(*parts)
    except ValueError:
        return None


def method_npu_estimate(method: Method, parts: MethodPartitions) -> dict[str, Any] | None:
    """Per-method sums and the fragmentation cost; None when the method has no estimated NPU
    partition."""
    rows: list[tuple[int, dict[str, Any]]] = []  # partition index, stats
    for p in parts.partitions:
        if p.backend != BACKEND or p.delegate_index is None:
            continue
        if not 0 <= p.delegate_index < len(method.delegates):
            continue
        stats = method.delegates[p.delegate_index].decoded.stats
        if "npu_est_cycles" in stats:
            rows.append((p.index, dict(stats)))
    if not rows:
        return None
    target = _target(rows[0][1])
    time_us = sum(float(s["npu_est_us"]) for _, s in rows)
    busy: dict[str, int] = {}
    for _, s in rows:
        for k, v in s.items():
            if k.startswith("npu_est_busy_"):
                name = k.removeprefix("npu_est_busy_")
                busy[name] = busy.get(name, 0) + int(v)
    out: dict[str, Any] = {
        "partitions": len(rows),
        "cycles": sum(int(s["npu_est_cycles"]) for _, s in rows),
        "time_us": round(time_us, 1),
        "per_partition_us": {str(i): s["npu_est_us"] for i, s in rows},
        "macs": sum(int(s["npu_est_macs"]) for _, s in rows),
        "busy_cycles": dict(sorted(busy.items())),
        "busiest": max(busy.items(), key=lambda kv: kv[1])[0] if busy else None,
        "not_covered_ops": sum(int(s.get("npu_est_not_covered", 0)) for _, s in rows),
        "target": rows[0][1].get("npu_est_target"),
        "assumptions": list(ASSUMPTIONS),
    }
    if target is not None:
        # Each tensor crossing into, out of or between NPU partitions, counted once.
        boundary = sum(
            n
            for handoffs in (False, True)
            for direction, n in parts.crossing_bytes(handoffs=handoffs).items()
            if BACKEND in direction
        )
        out["fragmentation"] = _fragmentation(len(rows), boundary, target, time_us)
        # On the Ethos-U55 the layout transposes at the boundaries are NPU work of their own
        # (already inside the partitions' cycles): said apart, as part of what the split costs.
        layout = sum(int(s.get("npu_est_transpose_cycles", 0)) for _, s in rows)
        if layout:
            out["fragmentation"]["transpose_cycles_in_partitions"] = layout
    return out


def _fragmentation(
    invocations: int, boundary: int, target: Target, npu_time_us: float
) -> dict[str, Any]:
    mem = target.regions[1]
    boundary_cycles = 2 * boundary / mem.bandwidth
    const, arena = target.regions[0], target.regions[1]
    per_invocation = const.read_latency + arena.read_latency + arena.write_latency
    invocation_cycles = (invocations - 1) * per_invocation
    cycles = boundary_cycles + invocation_cycles
    time_us = cycles / target.clock_hz * 1e6
    return {
        "boundary_bytes": boundary,
        "boundary_memory": mem.name,
        "boundary_memory_gb_per_s": round(mem.bandwidth * target.clock_hz / 1e9, 3),
        "boundary_cycles": round(boundary_cycles),
        "invocations": invocations,
        "per_invocation_cycles": per_invocation,
        "invocation_cycles": invocation_cycles,
        "cycles": round(cycles),
        "time_us": round(time_us, 1),
        "share_of_npu_time": round(time_us / npu_time_us, 4) if npu_time_us else None,
        "assumptions": list(FRAGMENTATION_ASSUMPTIONS),
    }
