"""What a change saved, measured (`analysis/measured_diff.py`), as `pte-adapter diff` shows it:
text lines per method, the JSON under `measured`, and the rows the HTML comparison draws."""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.measured_diff import (
    Measured,
    MeasuredDiff,
    MethodMeasuredDiff,
    Prediction,
)
from pte_adapter.wording import time_figure


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _measured(m: Measured) -> dict[str, float | None]:
    pct = m.change_pct
    return {
        "before": _r(m.before),
        "after": _r(m.after),
        "change": _r(m.change),
        "change_pct": None if pct is None else round(pct, 2),
    }


def _prediction(p: Prediction | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "scenario": p.scenario,
        "text": p.text,
        "delegate_calls_change": p.delegate_calls_change,
        "delegate_partitions_after": p.delegate_partitions_after,
        "cpu_time_change": _r(p.cpu_time_change),
        "npu_time_change": _r(p.npu_time_change),
        "latency_change": _r(p.latency_change),
        "notes": list(p.notes),
    }


def method_json(m: MethodMeasuredDiff) -> dict[str, Any]:
    return {
        "name": m.name,
        "unit": m.unit,
        "runs": list(m.runs),
        "warmup_runs": list(m.warmup),
        "latency": _measured(m.latency),
        "delegate_calls": {k: _measured(v) for k, v in m.delegate_calls.items()},
        "delegate_time": {k: _measured(v) for k, v in m.delegate_time.items()},
        "cpu_island_time": _measured(m.cpu_island_time),
        "fixed_islands": list(m.fixed_islands),
        "predicted": _prediction(m.prediction),
        "no_prediction": m.no_prediction,
        "notes": list(m.notes),
    }


def measured_json(md: MeasuredDiff | None) -> dict[str, Any] | None:
    if md is None:
        return None
    return {
        "before": md.before,
        "after": md.after,
        "unit": md.unit,
        "methods": [method_json(m) for m in md.methods],
        "problems": list(md.problems),
    }


def _num(v: float | None, unit: str) -> str:
    return time_figure(v, unit)


def _signed(v: float | None, unit: str) -> str:
    return time_figure(v, unit, signed=True)


def measured_rows(m: MethodMeasuredDiff) -> list[list[str]]:
    """[what, before, after, change, what-if predicted] per measured figure."""
    u, p = m.unit, m.prediction

    def change(x: Measured) -> str:
        pct = x.change_pct
        return _signed(x.change, u) + (f" ({pct:+.1f} %)" if pct is not None else "")

    not_predicted = "no prediction" if p is None else "not predicted"
    latency_predicted = not_predicted
    if p is not None and p.latency_change is not None:
        latency_predicted = _signed(p.latency_change, u) + (
            " (CPU time removed alone)" if p.npu_time_change is None else ""
        )
    rows = [["latency", _num(m.latency.before, u), _num(m.latency.after, u), change(m.latency)]]
    rows[0].append(latency_predicted)
    for backend, calls in m.delegate_calls.items():
        predicted = not_predicted
        if p is not None:
            predicted = (
                f"{p.delegate_calls_change:+d} (→ {p.delegate_partitions_after} partition"
                f"{'s' if p.delegate_partitions_after != 1 else ''})"
            )
        rows.append(
            [
                f"{backend} calls per run",
                _num(calls.before, "count"),
                _num(calls.after, "count"),
                _signed(calls.change, "count"),
                predicted,
            ]
        )
    for backend, t in m.delegate_time.items():
        predicted = not_predicted
        if p is not None and p.npu_time_change is not None:
            predicted = _signed(p.npu_time_change, u) + " (the cost model)"
        rows.append([f"{backend} time", _num(t.before, u), _num(t.after, u), change(t), predicted])
    predicted = not_predicted
    if p is not None and p.cpu_time_change is not None:
        predicted = _signed(p.cpu_time_change, u) + " (its kernels, measured before)"
    c = m.cpu_island_time
    rows.append(["CPU island time", _num(c.before, u), _num(c.after, u), change(c), predicted])
    return rows


def measured_lines(md: MeasuredDiff | None) -> dict[str, list[str]]:
    """Per method name, its lines for the text report; "" holds the lines for the whole diff."""
    if md is None:
        return {}
    out: dict[str, list[str]] = {"": [f"measured: {p}" for p in md.problems]}
    for m in md.methods:
        head = (
            f"  measured ({md.before} -> {md.after}; medians in {m.unit} over "
            f"{m.runs[0]} and {m.runs[1]} runs, warm-up left out: {m.warmup[0]} and "
            f"{m.warmup[1]} runs):"
        )
        lines = [head]
        lines.append(f"    {'':<30} {'before':>10} {'after':>10}  {'change':<20} what-if predicted")
        for what, before, after, change, predicted in measured_rows(m):
            lines.append(f"    {what:<30} {before:>10} {after:>10}  {change:<20} {predicted}")
        if m.prediction is not None:
            lines.append(f"    the what-if of {m.prediction.scenario}: {m.prediction.text}")
            lines.extend(f"    note: {n}" for n in m.prediction.notes)
        else:
            lines.append(f"    no what-if for this change: {m.no_prediction}")
        lines.extend(f"    note: {n}" for n in m.notes)
        out[m.name] = lines
    return out
