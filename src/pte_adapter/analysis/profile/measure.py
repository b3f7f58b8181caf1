"""What an ETDump measured of each method, in the time scale's unit (milliseconds, or cycles),
worked out once for every view.

The profile summary (`summary.py`: latency, the split, partitions, top operators), each
instruction's times, the times a delegate logged for its own operations placed on its decoded
nodes, and each DelegateCall's time outside those operations. The Model Explorer attributes, the
node-data overlay and `pte-adapter profile` all read this.
"""

from __future__ import annotations

from dataclasses import dataclass

from pte_adapter.analysis.profile.join import MethodProfile, ProgramProfile
from pte_adapter.analysis.profile.report_types import MethodTimes, ProfileSummary
from pte_adapter.analysis.profile.stats import Stats
from pte_adapter.analysis.profile.summary import (
    InstructionTime,
    delegate_inner_times,
    instruction_times,
    method_times,
    profile_summary,
)
from pte_adapter.analysis.profile.time_scale import NANOSECONDS, TimeScale
from pte_adapter.program.delegate_graph import DelegateGraph


@dataclass
class InnerTimes:
    """A delegate's own logged operations placed on its decoded graph (per run, in the unit)."""

    graph: DelegateGraph  # the view whose nodes carry the times
    times: dict[str, list[float]]  # node id -> its operator's time in each run
    fused: dict[str, str]  # node id -> the node whose operator ran it (a fused clamp)
    stats: dict[str, Stats]  # node id -> its times' statistics


@dataclass
class RunSeries:
    """Per run, in the unit: what a measured before/after comparison adds up
    (analysis/measured_diff.py)."""

    cpu_islands: list[float]  # the CPU islands' instruction times summed
    delegates: dict[str, list[float]]  # backend id -> its partitions' times summed
    delegate_calls: dict[str, list[int]]  # backend id -> its DELEGATE_CALL events


@dataclass
class MethodMeasurement:
    summary: MethodTimes  # `pte-adapter profile`'s numbers for the method (summary.py)
    instruction_times: dict[int, InstructionTime]
    inner: dict[int, InnerTimes]  # partition index -> its delegate's operations, when placed
    outside_ops: dict[int, float]  # DelegateCall instruction -> median time outside logged ops
    series: RunSeries | None = None


def run_series(mp: MethodProfile, time_scale: TimeScale = NANOSECONDS) -> RunSeries:
    scale = time_scale.per_tick_shown
    parts = mp.partitions.partitions
    cpu = [i for p in parts if p.is_cpu for i in p.instructions]
    mine: dict[str, list[int]] = {}
    for p in parts:
        if not p.is_cpu:
            mine.setdefault(p.backend, []).extend(p.instructions)
    out = RunSeries([], {b: [] for b in sorted(mine)}, {b: [] for b in sorted(mine)})
    for run in mp.runs:
        times, calls = run.instruction_time, run.instruction_calls
        out.cpu_islands.append(sum(times.get(i, 0) for i in cpu) * scale)
        for b, instructions in mine.items():
            out.delegates[b].append(sum(times.get(i, 0) for i in instructions) * scale)
            out.delegate_calls[b].append(sum(calls.get(i, 0) for i in instructions))
    return out


def _outside_ops(mp: MethodProfile, index: int, scale: float) -> float:
    """Median over runs of a DelegateCall's time outside the operations its delegate logged."""
    values = [
        (run.instruction_time.get(index, 0) - sum(e.duration for e in events)) * scale
        for run in mp.runs
        if (events := run.delegate_events.get(index))
    ]
    return Stats.of(values).median


def measure_method(mp: MethodProfile, time_scale: TimeScale = NANOSECONDS) -> MethodMeasurement:
    scale = time_scale.per_tick_shown
    placements = {}
    inner: dict[int, InnerTimes] = {}
    outside: dict[int, float] = {}
    for part in mp.partitions.delegate_partitions:
        placed = delegate_inner_times(mp, part, time_scale)
        if placed is not None and part.instructions:
            placements[part.index] = placed
            graph, times_, fused = placed
            stats = {k: Stats.of(v) for k, v in times_.items()}
            inner[part.index] = InnerTimes(graph, times_, fused, stats)
            outside[part.instructions[0]] = _outside_ops(mp, part.instructions[0], scale)
    times = instruction_times(mp, time_scale)
    return MethodMeasurement(
        summary=method_times(mp, time_scale, times, placements),
        instruction_times=times,
        inner=inner,
        outside_ops=outside,
        series=run_series(mp, time_scale),
    )


def measure_program(
    profile: ProgramProfile, pte_name: str, time_scale: TimeScale = NANOSECONDS
) -> tuple[ProfileSummary, dict[str, MethodMeasurement]]:
    """The profile summary of the whole program, and each method's measurement."""
    per_method = {
        mp.method.name: measure_method(mp, time_scale) for mp in profile.methods if mp.runs
    }
    summaries = [m.summary for m in per_method.values()]
    return profile_summary(profile, pte_name, time_scale, summaries), per_method
