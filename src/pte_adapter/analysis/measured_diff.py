"""What a change saved, measured: two programs, each with the ETDump of its runs, compared per
method, next to what the what-if predicted from the first program alone for the same change.

Measured, per method (every figure a median over runs, in the profiles' unit; each side's warm-up
runs, as `analysis/profile/drift.py` finds them, are left out):

- latency: `Method::execute` per run;
- delegate calls per run, per backend: the `DELEGATE_CALL` events of a run;
- CPU island time: the CPU islands' instruction events of a run, summed;
- delegate time per backend: its partitions' instruction events of a run, summed.

Predicted: the what-if of the first program (`analysis/what_if.py`) has one scenario per CPU
island and one with every fixable island fixed. The change is matched to a scenario by what it
removed: the islands of the first program whose CPU compute operators all disappeared
(`diff`'s `cpu_compute_ops_removed`). One island: its scenario; exactly the islands of the
all-islands scenario: that one; anything else has no prediction, and says why. From the scenario:
delegate calls removed (every backend), the CPU time removed (the island's kernels as the first
ETDump measured them), and for a backend with a cost model (Ethos-U) the NPU time before and after.
A side that drifted (`onset_run`) is said so: its median mixes two regimes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pte_adapter.analysis.profile.drift import median
from pte_adapter.analysis.profile.measure import MethodMeasurement
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.what_if import WhatIf

US_PER_MS = 1000.0


@dataclass(frozen=True)
class Measured:
    """One figure before and after (None on a side that did not measure it)."""

    before: float | None
    after: float | None

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def change_pct(self) -> float | None:
        change = self.change
        if change is None or not self.before:
            return None
        return 100.0 * change / self.before


@dataclass
class Prediction:
    """What the what-if said the change would do (its scenario for the islands it fixed)."""

    scenario: str  # "CPU island 1", or "every fixable island"
    text: str  # the scenario's fix, in words
    delegate_calls_change: int  # -(calls removed)
    delegate_partitions_after: int
    cpu_time_change: float | None  # in the unit: -(the islands' kernels, measured before)
    npu_time_change: float | None  # in the unit, with a cost model (Ethos-U)
    latency_change: float | None  # the two above, when both are known (or the CPU part alone)
    notes: list[str] = field(default_factory=list)


@dataclass
class MethodMeasuredDiff:
    name: str
    unit: str
    runs: tuple[int, int]
    warmup: tuple[int, int]
    latency: Measured
    delegate_calls: dict[str, Measured]  # per backend, per run
    delegate_time: dict[str, Measured]
    cpu_island_time: Measured
    fixed_islands: list[str]  # the first program's islands the change removed
    prediction: Prediction | None
    no_prediction: str  # why there is none ("" when there is one)
    notes: list[str] = field(default_factory=list)  # drift on a side, units that differ


@dataclass
class MeasuredDiff:
    before: str  # the ETDumps' names
    after: str
    unit: str
    methods: list[MethodMeasuredDiff]
    problems: list[str] = field(default_factory=list)  # a side without a usable ETDump


def _steady_median(values: list[float], warmup: int) -> float | None:
    rest = values[warmup:] or values
    return median(rest) if rest else None


def _fixed_islands(mb: MethodAnalysis, removed_ops: dict[str, int]) -> tuple[list[int], str]:
    """The first program's CPU islands whose compute operators the change removed, or why they
    cannot be told apart."""
    removed = Counter(removed_ops)
    fixed = [
        p.index
        for p in mb.summary.partitions
        if p.compute_ops and not Counter(p.compute_ops) - removed
    ]
    claimed: Counter[str] = Counter()
    for p in mb.summary.partitions:
        if p.index in fixed:
            claimed.update(p.compute_ops)
    if claimed - removed:
        return [], (
            "the change removed fewer of these operators than the islands that run them hold, so "
            "which islands it fixed cannot be told"
        )
    return fixed, ""


def _scenario(mb: MethodAnalysis, fixed: list[int]) -> tuple[WhatIf | None, str]:
    what_if = mb.what_if
    if what_if is None or not fixed:
        return None, "the change removed no CPU island's compute operators"
    if len(fixed) == 1 and fixed[0] in what_if.by_partition:
        return what_if.by_partition[fixed[0]], ""
    if what_if.all is not None and sorted(what_if.all.islands) == sorted(fixed):
        return what_if.all, ""
    return None, (
        "the what-if has a scenario per island and one with every fixable island fixed; none "
        "of them is this change"
    )


def _prediction(s: WhatIf, name: str, ms_per_unit: float | None, backends: list[str]) -> Prediction:
    def unit(us: float | None) -> float | None:
        if us is None or not ms_per_unit:
            return None
        return us / US_PER_MS / ms_per_unit

    cpu = unit(s.cpu_time_removed_us)
    npu: float | None = None
    notes: list[str] = []
    if s.npu_time_after_us is not None and s.npu_cycles_before is not None and s.npu_cycles_after:
        before_us = s.npu_time_after_us * s.npu_cycles_before / s.npu_cycles_after
        npu = unit(s.npu_time_after_us - before_us)
    else:
        notes.append(
            "no prediction of the delegate's time: no cost model for "
            + (", ".join(backends) or "its backend")
        )
    if cpu is None:
        notes.append("no CPU time removed predicted: the first ETDump did not time the island")
    latency = None
    if cpu is not None:
        latency = -cpu + (npu or 0.0)
        if npu is None:
            notes.append("the predicted latency change is the CPU time removed alone")
    return Prediction(
        scenario=name,
        text=s.text,
        delegate_calls_change=-s.delegate_calls_removed,
        delegate_partitions_after=s.npu_partitions_after,
        cpu_time_change=None if cpu is None else -cpu,
        npu_time_change=npu,
        latency_change=latency,
        notes=notes,
    )


def _by_backend(
    b: dict[str, list[float]] | dict[str, list[int]],
    a: dict[str, list[float]] | dict[str, list[int]],
    warm: tuple[int, int],
) -> dict[str, Measured]:
    return {
        k: Measured(
            _steady_median([float(v) for v in b[k]], warm[0]) if k in b else 0.0,
            _steady_median([float(v) for v in a[k]], warm[1]) if k in a else 0.0,
        )
        for k in sorted({*b, *a})
    }


def measured_method(
    mb: MethodAnalysis,
    ma: MethodAnalysis,
    removed_ops: dict[str, int],
    unit: str,
    ms_per_unit: float | None,
) -> MethodMeasuredDiff | None:
    """The method measured on both sides, and the what-if's prediction for the change, which
    removed `removed_ops` (CPU compute operator -> calls) from the method."""
    xb, xa = mb.measured, ma.measured
    if xb is None or xa is None or xb.series is None or xa.series is None:
        return None
    db, da = xb.summary["drift"], xa.summary["drift"]
    warm = (db["warmup_runs"], da["warmup_runs"])
    sb, sa = xb.series, xa.series
    fixed, why = _fixed_islands(mb, removed_ops)
    scenario, no_prediction = (None, why) if why else _scenario(mb, fixed)
    names = [mb.partitions.partitions[i].name for i in fixed]
    backends = sorted(
        {p.backend for p in mb.partitions.partitions if not p.is_cpu and scenario is not None}
    )
    prediction = None
    if scenario is not None:
        label = names[0] if scenario.partition is not None else "every fixable island"
        prediction = _prediction(scenario, label, ms_per_unit, backends)
    notes = [
        f"{side}: {d['text']}"
        for side, d in (("before", db), ("after", da))
        if d["onset_run"] is not None or d["state"] in ("noisy", "few_runs")
    ]
    return MethodMeasuredDiff(
        name=mb.name,
        unit=unit,
        runs=(xb.summary["runs"], xa.summary["runs"]),
        warmup=warm,
        latency=Measured(
            _steady_median(xb.summary["latency_runs"], warm[0]),
            _steady_median(xa.summary["latency_runs"], warm[1]),
        ),
        delegate_calls=_by_backend(sb.delegate_calls, sa.delegate_calls, warm),
        delegate_time=_by_backend(sb.delegates, sa.delegates, warm),
        cpu_island_time=Measured(
            _steady_median(sb.cpu_islands, warm[0]), _steady_median(sa.cpu_islands, warm[1])
        ),
        fixed_islands=names,
        prediction=prediction,
        no_prediction=no_prediction,
        notes=notes,
    )


def _measurement(m: MethodAnalysis | None) -> MethodMeasurement | None:
    return m.measured if m is not None else None


def measured_diff(
    before: ProgramAnalysis, after: ProgramAnalysis, removed_ops: dict[str, dict[str, int]]
) -> MeasuredDiff | None:
    """Both programs measured: the comparison per method both ran (`removed_ops`: per method,
    the CPU compute operators the change removed); None when neither side has an ETDump. One
    side without (or with one that could not be used) is a problem, said."""
    sides = (before, after)
    if all(r.profile_summary is None and r.profile_error is None for r in sides):
        return None
    problems = []
    for label, r in zip(("before", "after"), sides, strict=True):
        if r.profile_error is not None:
            problems.append(f"{label}: the ETDump could not be used: {r.profile_error}")
        elif r.profile_summary is None:
            problems.append(f"{label}: no ETDump beside the program, so nothing to compare with")
    sb, sa = before.profile_summary, after.profile_summary
    if sb is None or sa is None:
        return MeasuredDiff(
            sb["etdump"] if sb else "", sa["etdump"] if sa else "", "", [], problems
        )
    if sb["unit"] != sa["unit"] or sb["ms_per_unit"] != sa["ms_per_unit"]:
        problems.append(
            f"the two ETDumps are in different units ({sb['unit']}, {sa['unit']}): give both "
            "the same time scale (--time-scale, --clock-mhz)"
        )
        return MeasuredDiff(sb["etdump"], sa["etdump"], "", [], problems)
    out = MeasuredDiff(sb["etdump"], sa["etdump"], sb["unit"], [], problems)
    for name, removed in removed_ops.items():
        mb, ma = before.method(name), after.method(name)
        if mb is None or ma is None or _measurement(mb) is None or _measurement(ma) is None:
            continue
        row = measured_method(mb, ma, removed, sb["unit"], sb["ms_per_unit"])
        if row is not None:
            out.methods.append(row)
    return out
