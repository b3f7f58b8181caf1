"""Where the time went when the latency changed: each partition, each part of the split and the
operators, before the onset and from it (docs/profiling.md#runs-over-time).

The two regimes are the runs after the warm-up up to the onset, and the runs from the onset on
(`drift.py`). For each part: its median time in each regime, the change, and its median share of
the run in each, so a partition that slowed (a throttled NPU, a CPU island, a memcpy) stands out
from one that only kept its share while everything slowed. Operators are the CPU kernels
(`OPERATOR_CALL`) and the operators a delegate logged about itself (XNNPACK's runtime operators),
the TOP_OPERATORS whose time changed most.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from pte_adapter.analysis.profile.drift import Drift, median
from pte_adapter.analysis.profile.join import (
    SPLIT_KEYS,
    MethodProfile,
    MethodRun,
    instruction_label,
    partition_time,
    time_split,
)
from pte_adapter.analysis.profile.report_types import DriftPart, DriftWhere
from pte_adapter.analysis.profile.stats import median_share
from pte_adapter.analysis.profile.time_scale import TimeScale
from pte_adapter.program.model import InstructionKind

TOP_OPERATORS: Final = 5


# A part of a run: (kind, name, partition of an operator or "").
PartKey = tuple[str, str, str]


def _part(
    key: PartKey,
    values: tuple[list[float], list[float]],
    totals: tuple[list[float], list[float]],
) -> DriftPart:
    (b, a), (tb, ta) = values, totals
    before, after = median(b) if b else 0.0, median(a) if a else 0.0
    return {
        "kind": key[0],
        "name": key[1],
        "partition": key[2],
        "before": round(before, 4),
        "after": round(after, 4),
        "change": round(after - before, 4),
        "share_before": round(median_share(b, tb), 4),
        "share_after": round(median_share(a, ta), 4),
    }


def _run_parts(mp: MethodProfile, run: MethodRun, scale: float) -> dict[PartKey, float]:
    """Every part's time in one run: the partitions, the split, the CPU kernels (by instruction)
    and the operators a delegate logged (by the name it logged)."""
    parts = mp.partitions
    out: dict[PartKey, float] = defaultdict(float)
    for p in parts.partitions:
        out[("partition", p.name, "")] = partition_time(mp, run, p.index) * scale
    split = time_split(mp, run)
    for key in SPLIT_KEYS:
        out[("split", key, "")] = split.get(key, 0) * scale
    for index, ticks in run.instruction_time.items():
        if mp.method.instructions[index].kind is InstructionKind.KERNEL:
            where = parts.partitions[parts.partition_of[index]].name
            label = f"#{index} {instruction_label(mp.method, index)}"
            out[("operator", label, where)] += ticks * scale
    for index, events in run.delegate_events.items():
        where = parts.partitions[parts.partition_of[index]].name
        for e in events:
            out[("operator", e.label, where)] += e.duration * scale
    return out


def regime_change(mp: MethodProfile, drift: Drift, time_scale: TimeScale) -> DriftWhere | None:
    """Each part's time before the onset and from it; None without an onset."""
    if drift.onset_run is None or drift.onset_run >= len(mp.runs):
        return None
    scale = time_scale.per_tick_shown
    regimes = (mp.runs[drift.warmup_runs : drift.onset_run], mp.runs[drift.onset_run :])
    if not regimes[0] or not regimes[1]:
        return None
    before = [_run_parts(mp, r, scale) for r in regimes[0]]
    after = [_run_parts(mp, r, scale) for r in regimes[1]]
    totals = (
        [(r.total or 0) * scale for r in regimes[0]],
        [(r.total or 0) * scale for r in regimes[1]],
    )
    keys = list(dict.fromkeys(k for runs in (before, after) for run in runs for k in run))
    parts = {
        k: _part(k, ([r.get(k, 0.0) for r in before], [r.get(k, 0.0) for r in after]), totals)
        for k in keys
    }
    partitions = [v for k, v in parts.items() if k[0] == "partition"]
    operators = [v for k, v in parts.items() if k[0] == "operator"]
    partitions.sort(key=lambda p: -abs(p["change"]))
    operators.sort(key=lambda p: -abs(p["change"]))
    return {
        "before_runs": [drift.warmup_runs, drift.onset_run - 1],
        "after_runs": [drift.onset_run, len(mp.runs) - 1],
        "latency": _part(("latency", "Method::execute", ""), totals, totals),
        "partitions": partitions,
        "split": [v for k, v in parts.items() if k[0] == "split"],
        "operators": operators[:TOP_OPERATORS],
    }
