"""`pte-adapter profile` output: measured time per partition, the method's split, top CPU operators,
and the run-to-run picture as text sparklines (latency per run, and its distribution)."""

from __future__ import annotations

import json
import math
from typing import Final

from pte_adapter.analysis.profile.report_types import (
    DriftJSON,
    DriftPart,
    MethodTimes,
    ProfileSummary,
)
from pte_adapter.render.time_facts import SPLIT_LABELS, scale_text, time_format
from pte_adapter.wording import TimeFormat, plural

SPARKS: Final = "▁▂▃▄▅▆▇█"
HIST_BINS: Final = 8


def sparkline(values: list[float]) -> str:
    """One block character per value, scaled between the smallest and largest."""
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return ""
    lo, hi = min(finite), max(finite)
    span = hi - lo
    out = []
    for v in values:
        if math.isnan(v):
            out.append(" ")
        elif span <= 0:
            out.append(SPARKS[0])
        else:
            out.append(SPARKS[min(len(SPARKS) - 1, int((v - lo) / span * len(SPARKS)))])
    return "".join(out)


def histogram(values: list[float], bins: int = HIST_BINS) -> list[int]:
    """Counts of `values` in `bins` equal-width bins between min and max."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    counts = [0] * bins
    for v in values:
        i = bins - 1 if hi <= lo else min(bins - 1, int((v - lo) / (hi - lo) * bins))
        counts[i] += 1
    return counts


def _pct(v: float) -> str:
    return f"{v:.1%}"


def _header(summary: ProfileSummary) -> str:
    note = ""
    if summary["unit"] != "ms" and summary["ms_per_unit"] is not None:
        note = "; latency also in ms at that clock"
    return (
        f"{summary['file']} + {summary['etdump']}: times in {summary['unit']} "
        f"(ETDump version {summary['etdump_version']}, {scale_text(summary)}{note})"
    )


def _latency_lines(m: MethodTimes, t: TimeFormat) -> list[str]:
    lat = m["latency"]
    regimes = "  (two regimes: see drift)" if m["drift"]["where"] else ""
    lines = [
        f"  latency            median {t.bare(lat['median'])}  p10 {t.bare(lat['p10'])}  "
        f"p90 {t.bare(lat['p90'])}  min {t.bare(lat['min'])}  max {t.bare(lat['max'])}{regimes}"
    ]
    if t.unit != "ms" and m["latency_ms"]:
        ms = TimeFormat("ms", 1.0)
        lines.append(
            f"  latency (ms)       median {ms.bare(t.ms(lat['median']))}  "
            f"min {ms.bare(min(m['latency_ms']))}  max {ms.bare(max(m['latency_ms']))}"
        )
    runs = m["latency_runs"]
    if runs:
        lines.append(
            f"  per run            {sparkline(runs)}  ({t.bare(min(runs))} .. {t.bare(max(runs))})"
        )
        marks = run_marks(m["drift"], len(runs))
        if marks:
            lines.append(f"                     {marks}")
        counts = histogram(runs)
        lines.append(
            f"  distribution       {sparkline([float(c) for c in counts])}  "
            f"({len(counts)} bins of {t.bare((max(runs) - min(runs)) / len(counts))}; "
            f"counts {' '.join(str(c) for c in counts)})"
        )
    split = m["split"]
    lines.append(
        "  split              "
        + ", ".join(
            f"{label} {_pct(split[k]['share'])} ({t.bare(split[k]['median'])})"
            for k, label in SPLIT_LABELS.items()
            if k in split
        )
    )
    return lines


def run_marks(drift: DriftJSON, runs: int) -> str:
    """A line under the per-run sparkline: `w` under each warm-up run, `^` under the onset, with
    what they are; "" when there is neither."""
    warm, onset = drift["warmup_runs"], drift["onset_run"]
    if not warm and onset is None:
        return ""
    cells = [" "] * runs
    for i in range(min(warm, runs)):
        cells[i] = "w"
    notes = [f"w: {plural(warm, 'warm-up run')} left out"] if warm else []
    if onset is not None and 0 <= onset < runs:
        cells[onset] = "^"
        notes.append(f"^: onset, run {onset}")
    return "".join(cells).rstrip() + "  (" + "; ".join(notes) + ")"


def drift_lines(m: MethodTimes, t: TimeFormat) -> list[str]:
    """The runs over time: the drift's sentence, its figures, and where the time went."""
    d = m["drift"]
    lines = [f"  drift              {d['text']}"]
    if d["first_ms"] is not None and d["state"] not in ("identical",):
        slope = d["slope_ms_per_100_runs"]
        lines.append(
            f"                     first {t.bare(d['first_ms'])}  last {t.bare(d['last_ms'])}  "
            f"change {d['change_pct']:+.1f} %  slope {t.bare(slope)} per 100 runs  "
            f"(medians of {d['window']} runs; run-to-run noise {t.bare(d['noise_ms'])})"
        )
    where = d["where"]
    if where is None:
        return lines
    (b0, b1), (a0, a1) = where["before_runs"], where["after_runs"]
    lines.append(f"  where it changed   runs {b0}-{b1} -> runs {a0}-{a1} (medians):")
    for part in [where["latency"], *where["partitions"][:5]]:
        lines.append(_where_line(part, t))
    changed = [s for s in where["split"] if s["before"] or s["after"]]
    lines.append(
        "    split: "
        + ", ".join(
            f"{SPLIT_LABELS.get(s['name'], s['name'])} {t.bare(s['before'])} -> "
            f"{t.bare(s['after'])}"
            for s in changed
        )
    )
    if where["operators"]:
        lines.append("    operators whose time changed most:")
        lines.extend(_where_line(op, t, indent=6) for op in where["operators"])
    return lines


def _where_line(part: DriftPart, t: TimeFormat, indent: int = 4) -> str:
    name = part["name"] if part["kind"] != "latency" else "latency"
    share = (
        f"  share {_pct(part['share_before'])} -> {_pct(part['share_after'])}"
        if part["kind"] != "latency"
        else ""
    )
    where = f"  ({part['partition']})" if part["partition"] else ""
    return (
        f"{' ' * indent}{name:<40} {t.bare(part['before']):>9} -> "
        f"{t.bare(part['after']):>9}  ({part['change']:+.3f}){share}{where}"
    )


def _partition_lines(m: MethodTimes, t: TimeFormat) -> list[str]:
    lines = [
        "  partitions:",
        f"    {'#':>3}  {'name':<38} {'instr':<9} {'median':>9} {'p10':>9} {'p90':>9} {'share':>7}",
    ]
    for p in m["partitions"]:
        first, last = (p["instructions"] + [None, None])[:2]
        span = f"#{first}" if first == last else f"#{first}-{last}"
        detail = ""
        if p.get("delegate_operators"):
            detail = (
                f"  {p['delegate_operators']} delegate ops logged: compute "
                f"{t.bare(p['inside_compute']['median'])}, convert/transpose/copy "
                f"{t.bare(p['inside_glue']['median'])}, outside them "
                f"{t.bare(p['outside_logged_ops']['median'])}"
            )
        lines.append(
            f"    {p['index']:>3}  {p['name']:<38} {span:<9} {t.bare(p['median']):>9} "
            f"{t.bare(p['p10']):>9} {t.bare(p['p90']):>9} {_pct(p['share']):>7}{detail}"
        )
    if m["top_cpu_ops"]:
        lines.append("  top CPU operators:")
        for op in m["top_cpu_ops"]:
            lines.append(
                f"    #{op['instruction']:<5} {op['op']:<52} median {t.bare(op['median']):>8}  "
                f"{_pct(op['share']):>6}  ({op['partition']})"
            )
    for p in m["partitions"]:
        if p.get("top_delegate_ops"):
            lines.append(f"  top delegate operators ({p['name']}):")
            for dop in p["top_delegate_ops"][:5]:
                lines.append(f"    {dop['name']:<58} median {t.bare(dop['median']):>8}")
    return lines


def _tail_lines(summary: ProfileSummary, t: TimeFormat) -> list[str]:
    lines: list[str] = []
    if summary["load"]:
        lines.append("")
        lines.append(
            "load: " + ", ".join(f"{e['name']} {t.bare(e['time'])}" for e in summary["load"])
        )
    if summary["unplaced"]:
        lines.append("")
        lines.append(f"unplaced events: {len(summary['unplaced'])}")
        for u in summary["unplaced"][:20]:
            lines.append(
                f"  run {u['run']}: {u['name']} (chain {u['chain']}, "
                f"instruction {u['instruction_id']}): {u['reason']}"
            )
    for problem in summary["problems"]:
        lines.append(f"problem: {problem}")
    lines += [f"note: {note}" for note in summary["notes"]]
    return lines


def text_profile(summary: ProfileSummary) -> str:
    t = time_format(summary)
    lines = [_header(summary)]
    for m in summary["methods"]:
        lines.append("")
        lines.append(f"method {m['name']}: {m['runs']} runs")
        lines += _latency_lines(m, t)
        lines += drift_lines(m, t)
        lines += _partition_lines(m, t)
    lines += _tail_lines(summary, t)
    return "\n".join(lines)


def json_profile(summary: ProfileSummary) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False)
