"""Runs over time: the warm-up, a drift and the run it started, from a method's per-run latencies.

One median hides what happened when a board throttles, a neighbour takes the core, or the first
runs meet cold caches. The method (docs/profiling.md#runs-over-time; runs are numbered from 0, as
in `latency_runs`):

- **window** W: the number of runs a typical latency is taken over, n // 6 kept between 3 and 25
  and made odd (11 for 60 runs, 3 for 12);
- **warm-up**: from run 0 on, each run slower than all but at most one of the W runs after it and
  more than WARMUP_FACTOR times their median is a warm-up run; the first run that is not ends the
  warm-up (at most a quarter of the runs). Warm-up runs are left out of everything below;
- **noise**: the run-to-run spread of the rest, 1.4826 x the median absolute difference of
  consecutive runs / sqrt(2) (a standard deviation for normal noise; neither a step nor a single
  slow run moves it);
- **first / last**: the median of the first W and of the last W runs after the warm-up;
  **change** = (last - first) / first, in percent;
- **drift**: the change is larger than MIN_CHANGE of the first and than the spread two medians of
  W runs have by chance (SIGNIFICANCE x 1.2533 x noise x sqrt(2 / W)); a change above MIN_CHANGE
  but within that spread is *noisy* (said so, with the spread), one below it *steady*;
- **onset**: with a drift, the first run from which the rolling median of W runs (centred, shorter
  at the ends) stays beyond first +/- that threshold on the side of the change up to the last
  run: a step is found at the run it happened, a creep where it rose out of the noise. It needs
  W steady runs before it; None when the latency is steady, when it never stayed changed, or
  when it changed from the first runs on. The change is a *step* when the median of the W runs
  from the onset is already within the threshold of the last runs' median, a *creep* when the
  latency kept moving after the onset (its slope from then on is said);
- **slope** per 100 runs: the median of (y[i + h] - y[i]) / h over the first h = m // 2 of the
  m runs after the warm-up, times 100 (half the pairs can be outliers before it moves).

A single slow run (a preempted one) moves none of these: every level is a median of W runs, and
the onset needs the rolling median to stay changed. Fewer than MIN_RUNS runs, one run, and runs
that all took the same time get a plain statement and no figures they cannot support.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Final

from pte_adapter.analysis.profile.report_types import DriftJSON, DriftWhere
from pte_adapter.analysis.profile.stats import percentile
from pte_adapter.wording import time_figure

MIN_RUNS: Final = 10
WARMUP_FACTOR: Final = 1.25
MIN_CHANGE: Final = 0.05
SIGNIFICANCE: Final = 3.0
MEDIAN_SE: Final = 1.2533  # standard error of a median of W normal values, in sigma / sqrt(W)
MAD_SIGMA: Final = 1.4826  # a median absolute deviation as a standard deviation (normal noise)


@dataclass(frozen=True)
class Drift:
    """What the runs did over time, in the profile's unit (ms, or cycles)."""

    unit: str
    runs: int
    state: str  # steady | noisy | rose | fell | few_runs | one_run | identical | no_runs
    text: str
    warmup_runs: int = 0
    warmup: tuple[float, ...] = ()  # the warm-up runs' latencies
    window: int = 0
    noise: float | None = None
    first: float | None = None
    last: float | None = None
    change_pct: float | None = None
    onset_run: int | None = None
    shape: str | None = None  # with an onset: "step", or "creep" (it kept changing after it)
    after_slope_per_100_runs: float | None = None  # with an onset: the slope from it on
    slope_per_100_runs: float | None = None
    threshold: float | None = None  # the change a drift must exceed (in the unit)

    @property
    def two_regimes(self) -> bool:
        return self.onset_run is not None


def median(values: list[float]) -> float:
    return percentile(values, 50)


def window_of(runs: int) -> int:
    w = min(25, max(3, runs // 6))
    return w if w % 2 else w + 1


def warmup_count(latency: list[float], window: int) -> int:
    """Leading runs each slower than all but one of the `window` runs after it and more than
    WARMUP_FACTOR times their median (at most a quarter of the runs)."""
    limit = len(latency) // 4
    count = 0
    while count < limit:
        after = sorted(latency[count + 1 : count + 1 + window])
        if len(after) < 2:
            break
        runner_up = after[-2]  # all but the largest: one slow run after it does not hide it
        if not (latency[count] > runner_up and latency[count] > WARMUP_FACTOR * median(after)):
            break
        count += 1
    return count


def run_noise(values: list[float]) -> float:
    """The run-to-run spread: from consecutive differences, so a level change does not count."""
    diffs = [abs(b - a) for a, b in itertools.pairwise(values)]
    return MAD_SIGMA * median(diffs) / math.sqrt(2) if diffs else 0.0


def rolling_median(values: list[float], window: int) -> list[float]:
    half = window // 2
    return [median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))]


def half_split_slope(values: list[float]) -> float:
    """Median over the first half of (y[i + h] - y[i]) / h, h = len // 2: per run."""
    h = len(values) // 2
    if h == 0:
        return 0.0
    return median([(values[i + h] - values[i]) / h for i in range(h)])


def onset_of(steady: list[float], window: int, first: float, threshold: float, up: bool) -> int:
    """Index in `steady` of the first run from which the rolling median stays beyond the band;
    -1 when it never does up to the last run."""
    rolled = rolling_median(steady, window)
    onset = -1
    for i in range(len(rolled) - 1, -1, -1):
        beyond = rolled[i] > first + threshold if up else rolled[i] < first - threshold
        if not beyond:
            break
        onset = i
    return onset


def _num(v: float, unit: str) -> str:
    # Rounded as the JSON rounds it first, so the sentence and the figures read the same.
    return time_figure(round(v, 4), unit)


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _warmup_text(warmup: tuple[float, ...], unit: str) -> str:
    if not warmup:
        return "no warm-up"
    shown = ", ".join(_num(v, unit) for v in warmup[:5]) + (", ..." if len(warmup) > 5 else "")
    return f"{_runs(len(warmup))} of warm-up left out ({shown} {unit})"


def _drift_text(d: Drift, early: bool = False) -> str:
    """The drift in one sentence; `early`: the change began within the first window."""
    unit, first, last = d.unit, d.first or 0.0, d.last or 0.0
    pct = d.change_pct or 0.0
    span = f"{_num(first, unit)} → {_num(last, unit)} {unit}"
    warm = _warmup_text(d.warmup, unit)
    if d.state == "noisy":
        return (
            f"no drift stands out of the run-to-run noise: {span} ({pct:+.1f} %), but runs "
            f"vary by about {_num(d.noise or 0.0, unit)} {unit} from one to the next; {warm}"
        )
    if d.state == "steady":
        return (
            f"steady: {_num(first, unit)} {unit} at the start, {_num(last, unit)} at the end "
            f"({pct:+.1f} %); {warm}"
        )
    verb = "rose" if d.state == "rose" else "fell"
    if d.onset_run is None:
        how = (
            "changing from the first runs on"
            if early
            else "but from no one run on did it stay changed"
        )
        return f"latency {verb} {abs(pct):.0f} % from the first runs to the last ({span}), {how}; {warm}"
    if d.shape == "creep":
        rate = f"{_num(abs(d.after_slope_per_100_runs or 0.0), unit)} {unit} per 100 runs"
        return (
            f"latency crept {'up' if verb == 'rose' else 'down'} {abs(pct):.0f} % from run "
            f"{d.onset_run}: {span}, gradually ({rate} from then on); steady before; no one "
            f"median describes the runs; {warm}"
        )
    return (
        f"latency {verb} {abs(pct):.0f} % from run {d.onset_run}: {span}; steady before; two "
        f"regimes, so no one median describes the runs; {warm}"
    )


def _plain(latency: list[float], unit: str) -> Drift | None:
    """No runs, one run, every run the same, or too few: a statement, and only the figures the
    runs support."""
    n = len(latency)
    if n == 0:
        return Drift(unit, 0, "no_runs", "no runs")
    if n == 1:
        return Drift(
            unit, 1, "one_run", f"one run ({_num(latency[0], unit)} {unit}): nothing to compare"
        )
    if max(latency) == min(latency):
        v = latency[0]
        return Drift(
            unit,
            n,
            "identical",
            f"all {n} runs took {_num(v, unit)} {unit}: steady",
            window=window_of(n),
            noise=0.0,
            first=v,
            last=v,
            change_pct=0.0,
            slope_per_100_runs=0.0,
            threshold=0.0,
        )
    if n < MIN_RUNS:
        return Drift(
            unit,
            n,
            "few_runs",
            f"{n} runs: too few to tell a warm-up or a drift from run-to-run noise "
            f"({MIN_RUNS} or more are needed)",
        )
    return None


def run_drift(latency: list[float], unit: str = "ms") -> Drift:
    """Warm-up, first and last typical latency, change, onset and slope of one method's runs."""
    plain = _plain(latency, unit)
    if plain is not None:
        return plain
    n = len(latency)
    window = window_of(n)
    warm = warmup_count(latency, window)
    steady = latency[warm:]
    w = min(window, len(steady))
    first, last = median(steady[:w]), median(steady[-w:])
    noise = run_noise(steady)
    threshold = max(MIN_CHANGE * abs(first), SIGNIFICANCE * MEDIAN_SE * noise * math.sqrt(2 / w))
    change = last - first
    pct = 100.0 * change / first if first else 0.0
    state, onset, at, shape, after_slope = "steady", None, -1, None, None
    if MIN_CHANGE * abs(first) < abs(change) <= threshold:
        state = "noisy"
    elif abs(change) > threshold:
        state = "rose" if change > 0 else "fell"
        at = onset_of(steady, w, first, threshold, change > 0)
        onset = warm + at if at >= w else None
        if onset is not None:
            after = steady[at:]
            kept_moving = abs(last - median(after[:w])) > threshold
            shape = "creep" if kept_moving else "step"
            after_slope = 100.0 * half_split_slope(after)
    d = Drift(
        unit,
        n,
        state,
        "",
        warmup_runs=warm,
        warmup=tuple(latency[:warm]),
        window=w,
        noise=noise,
        first=first,
        last=last,
        change_pct=pct,
        onset_run=onset,
        shape=shape,
        after_slope_per_100_runs=after_slope,
        slope_per_100_runs=100.0 * half_split_slope(steady),
        threshold=threshold,
    )
    return Drift(**{**d.__dict__, "text": _drift_text(d, 0 <= at < w)})


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def drift_json(d: Drift, where: DriftWhere | None = None) -> DriftJSON:
    return {
        "unit": d.unit,
        "runs": d.runs,
        "state": d.state,
        "warmup_runs": d.warmup_runs,
        "first_ms": _r(d.first),
        "last_ms": _r(d.last),
        "change_pct": None if d.change_pct is None else round(d.change_pct, 2),
        "onset_run": d.onset_run,
        "shape": d.shape,
        "slope_ms_per_100_runs": _r(d.slope_per_100_runs),
        "window": d.window,
        "noise_ms": _r(d.noise),
        "threshold_ms": _r(d.threshold),
        "text": d.text,
        "where": where,
    }
