"""The measured-time numbers as plain data: what `pte-adapter profile` prints, its JSON, and what the
Model Explorer overlay shows.

Times are in the unit of the time scale (`time_scale.py`): milliseconds, or cycles for an ETDump
in cycles. ETDump times are ticks; the host runtime (ExecuTorch's Python runtime,
`et_pal_current_ticks`) counts nanoseconds, the default; a board's runtime counts CPU cycles.

A share is the median over runs of `the part's time in the run / Method::execute of the run`. On a
busy machine a few runs are preempted for milliseconds; a median of per-run shares is not pulled by
them the way a ratio of sums is. The parts of a method's split therefore add up to about, not
exactly, 100%.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

from pte_adapter.analysis.partitions import Partition
from pte_adapter.analysis.profile.drift import drift_json, run_drift
from pte_adapter.analysis.profile.drift_where import regime_change
from pte_adapter.analysis.profile.join import (
    SPLIT_KEYS,
    MethodProfile,
    ProgramProfile,
    instruction_label,
    kernel_event_name,
    partition_time,
    time_split,
)
from pte_adapter.analysis.profile.report_types import (
    DriftJSON,
    InnerNodes,
    LoadEvent,
    MethodTimes,
    PartitionTimes,
    ProfileSummary,
    SharedStats,
    TopCpuOp,
    UnplacedEvent,
    _PartitionTimes,
)
from pte_adapter.analysis.profile.stats import Stats, median_share
from pte_adapter.analysis.profile.time_scale import NANOSECONDS, TimeScale
from pte_adapter.backends import BACKENDS
from pte_adapter.delegates.registry import hook
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import InstructionKind

TOP_CPU_OPS: Final = 10
TOP_DELEGATE_EVENTS: Final = 10
DELEGATE_GLUE_PREFIXES: Final = ("Convert", "Transpose", "Copy")


@dataclass(frozen=True)
class InstructionTime:
    """Measured time of one instruction over the runs (ms)."""

    index: int
    stats: Stats
    share: float  # median over runs of its share of the run
    calls: int  # instruction events over all runs (a loop body runs more than once per run)
    runs: int  # runs in which it ran


def instruction_times(
    mp: MethodProfile, time_scale: TimeScale = NANOSECONDS
) -> dict[int, InstructionTime]:
    scale = time_scale.per_tick_shown
    per: dict[int, list[float]] = defaultdict(list)
    totals: dict[int, list[float]] = defaultdict(list)
    calls: dict[int, int] = defaultdict(int)
    for run in mp.runs:
        for index, ticks in run.instruction_time.items():
            per[index].append(ticks * scale)
            totals[index].append((run.total or 0) * scale)
            calls[index] += run.instruction_calls.get(index, 0)
    return {
        i: InstructionTime(i, Stats.of(v), median_share(v, totals[i]), calls[i], len(v))
        for i, v in sorted(per.items())
    }


InnerPlacement = tuple[DelegateGraph, dict[str, list[float]], dict[str, str]]


def _shared(values: list[float], latency: list[float]) -> SharedStats:
    return {**Stats.of(values).as_dict(), "share": round(median_share(values, latency), 4)}


def _partition_times(
    mp: MethodProfile,
    p: Partition,
    latency: list[float],
    scale: float,
    inner: InnerPlacement | None,
) -> PartitionTimes:
    values = [partition_time(mp, r, p.index) * scale for r in mp.runs]
    base: _PartitionTimes = {
        "index": p.index,
        "name": p.name,
        "backend": p.backend,
        "instructions": [p.instructions[0], p.instructions[-1]] if p.instructions else [],
        **_shared(values, latency),
    }
    entry = cast(PartitionTimes, base)  # the delegate keys follow for a delegate partition
    if not p.is_cpu:
        entry.update(_delegate_detail(mp, p.instructions, scale))
        if inner is not None:
            graph, node_times, fused = inner
            placed: InnerNodes = {
                "graph": graph.name,
                "matched": len(node_times) + len(fused),
                "of": len(graph.nodes),
                "fused": fused,
                "times": {k: Stats.of(v).as_dict() for k, v in node_times.items()},
            }
            entry["inner_nodes"] = placed
    return entry


def method_times(
    mp: MethodProfile,
    time_scale: TimeScale = NANOSECONDS,
    times: dict[int, InstructionTime] | None = None,
    inner: dict[int, InnerPlacement] | None = None,
) -> MethodTimes:
    """One method's measured numbers; `times` (`instruction_times`) and `inner` (partition index
    -> `delegate_inner_times`) when already made."""
    scale, ms = time_scale.per_tick_shown, time_scale.ms_per_unit
    latency = [(r.total or 0) * scale for r in mp.runs]
    splits = [time_split(mp, r) for r in mp.runs]
    split = {key: _shared([s.get(key, 0) * scale for s in splits], latency) for key in SPLIT_KEYS}
    if inner is None:
        inner = {}
        for p in mp.partitions.delegate_partitions:
            placed = delegate_inner_times(mp, p, time_scale)
            if placed is not None:
                inner[p.index] = placed
    partitions = [
        _partition_times(mp, p, latency, scale, inner.get(p.index))
        for p in mp.partitions.partitions
    ]
    times = times if times is not None else instruction_times(mp, time_scale)
    cpu = [
        t for t in times.values() if mp.method.instructions[t.index].kind is InstructionKind.KERNEL
    ]
    cpu.sort(key=lambda t: -t.stats.median)
    top: list[TopCpuOp] = [
        {
            "instruction": t.index,
            "op": instruction_label(mp.method, t.index),
            "partition": mp.partitions.partitions[mp.partitions.partition_of[t.index]].name,
            **t.stats.as_dict(),
            "share": round(t.share, 4),
        }
        for t in cpu[:TOP_CPU_OPS]
    ]
    return {
        "name": mp.method.name,
        "runs": len(mp.runs),
        "latency_ms": [round(v * ms, 4) for v in latency] if ms is not None else [],
        "latency_runs": [round(v, 4) for v in latency],
        "latency": Stats.of(latency).as_dict(),
        "split": split,
        "partitions": partitions,
        "top_cpu_ops": top,
        "drift": method_drift(mp, latency, time_scale),
    }


def method_drift(mp: MethodProfile, latency: list[float], time_scale: TimeScale) -> DriftJSON:
    """The runs over time (drift.py), and with an onset where the time went (drift_where.py)."""
    drift = run_drift(latency, time_scale.shown_unit)
    return drift_json(drift, regime_change(mp, drift, time_scale))


def delegate_inner_times(
    mp: MethodProfile, part: Partition, time_scale: TimeScale = NANOSECONDS
) -> InnerPlacement | None:
    """A delegate partition's logged operator times placed on its decoded nodes (ms per run), with
    the nodes fused into another's operator; None where the events cannot be placed on nodes
    (only backends with a `profile_events` hook, e.g. XNNPACK's, are understood)."""
    method = mp.method
    d = part.delegate_index
    record = BACKENDS.get(part.backend)
    if record is None or record.profile_events is None:
        return None
    if d is None or not 0 <= d < len(method.delegates):
        return None
    graphs = method.delegates[d].decoded.graphs
    if not graphs:
        return None
    scale = time_scale.per_tick_shown
    runs = [
        [(e.label, e.duration * scale) for e in events]
        for run in mp.runs
        for index in part.instructions
        if (events := run.delegate_events.get(index))
    ]
    if not runs:
        return None
    place: Callable[
        [DelegateGraph, list[list[tuple[str, float]]]],
        tuple[dict[str, list[float]], dict[str, str]] | None,
    ] = hook(record.profile_events)
    result = place(graphs[0], runs)
    return None if result is None else (graphs[0], *result)


def is_delegate_glue(event_name: str) -> bool:
    """A delegate's own data-movement operator: XNNPACK logs its runtime operators by type name,
    and `Convert` (quantize/dequantize at the partition's edges), `Transpose` (NCHW<->NHWC layout)
    and `Copy` move or re-encode data rather than compute the model."""
    return event_name.startswith(DELEGATE_GLUE_PREFIXES)


def _delegate_detail(mp: MethodProfile, instructions: list[int], scale: float) -> PartitionTimes:
    """What the delegate logged about itself: its operators, the part of them that only converts
    data (layout, quantization), and the call's time outside them (ms per run)."""
    by_name: dict[str, list[float]] = defaultdict(list)
    compute: list[float] = []
    glue: list[float] = []
    outside: list[float] = []
    for run in mp.runs:
        for index in instructions:
            events = run.delegate_events.get(index, [])
            if not events:
                continue
            run_compute = run_glue = 0
            for e in events:
                by_name[e.label].append(e.duration * scale)
                if is_delegate_glue(e.label):
                    run_glue += e.duration
                else:
                    run_compute += e.duration
            compute.append(run_compute * scale)
            glue.append(run_glue * scale)
            call = run.instruction_time.get(index, 0)
            outside.append((call - run_compute - run_glue) * scale)
    out: PartitionTimes = {"delegate_events": 0}  # type: ignore[typeddict-item]
    if not by_name:
        return out
    ranked = sorted(by_name.items(), key=lambda kv: -Stats.of(kv[1]).median)
    out.update(
        {
            "delegate_events": sum(len(v) for v in by_name.values()),
            "delegate_operators": len(by_name),
            "inside_compute": Stats.of(compute).as_dict(),
            "inside_glue": Stats.of(glue).as_dict(),
            "outside_logged_ops": Stats.of(outside).as_dict(),
            "top_delegate_ops": [
                {"name": name, **Stats.of(v).as_dict()} for name, v in ranked[:TOP_DELEGATE_EVENTS]
            ],
        }
    )
    return out


def profile_summary(
    profile: ProgramProfile,
    pte_name: str = "",
    time_scale: TimeScale = NANOSECONDS,
    methods: list[MethodTimes] | None = None,
) -> ProfileSummary:
    """Everything `pte-adapter profile` reports; `methods`: each method's `method_times`, when
    already made."""
    scale, ms = time_scale.per_tick_shown, time_scale.ms_per_unit
    return {
        "file": pte_name,
        "etdump": profile.etdump.name,
        "etdump_version": profile.etdump.version,
        "tick_ns": time_scale.tick_ns,
        "time_scale": time_scale.unit,
        "clock_mhz": time_scale.clock_mhz,
        "unit": time_scale.shown_unit,
        "ms_per_unit": ms,
        "methods": methods
        if methods is not None
        else [method_times(mp, time_scale) for mp in profile.methods if mp.runs],
        "load": [
            LoadEvent(
                name=p.event.label,
                ms=round(p.event.duration * scale * ms, 4) if ms is not None else None,
                time=round(p.event.duration * scale, 4),
            )
            for p in profile.placed
            if p.role == "load"
        ],
        "unplaced": [
            UnplacedEvent(
                run=p.run,
                name=p.event.label,
                chain=p.event.chain_index,
                instruction_id=p.event.instruction_id,
                reason=p.reason,
            )
            for p in profile.unplaced
        ],
        "problems": list(profile.problems),
    }


__all__ = ["instruction_times", "kernel_event_name", "method_times", "profile_summary"]
