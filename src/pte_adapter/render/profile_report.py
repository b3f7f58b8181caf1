"""`pte-adapter profile` output: measured time per partition, the method's split, top CPU operators,
and the run-to-run picture as text sparklines (latency per run, and its distribution)."""

from __future__ import annotations

import json
import math
from typing import Final

from pte_adapter.analysis.profile.report_types import MethodTimes, ProfileSummary

SPARKS: Final = "▁▂▃▄▅▆▇█"
HIST_BINS: Final = 8
SPLIT_LABELS: Final = {
    "delegates": "delegates",
    "cpu_compute": "CPU compute",
    "glue": "glue",
    "control": "control flow",
    "runtime": "runtime overhead",
}


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


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _pct(v: float) -> str:
    return f"{v:.1%}"


def _latency_lines(m: MethodTimes) -> list[str]:
    lat = m["latency"]
    lines = [
        f"  latency            median {_ms(lat['median'])}  p10 {_ms(lat['p10'])}  "
        f"p90 {_ms(lat['p90'])}  min {_ms(lat['min'])}  max {_ms(lat['max'])}"
    ]
    runs = m["latency_ms"]
    if runs:
        lines.append(
            f"  per run            {sparkline(runs)}  ({_ms(min(runs))} .. {_ms(max(runs))})"
        )
        counts = histogram(runs)
        lines.append(
            f"  distribution       {sparkline([float(c) for c in counts])}  "
            f"({len(counts)} bins of {_ms((max(runs) - min(runs)) / len(counts))}; "
            f"counts {' '.join(str(c) for c in counts)})"
        )
    split = m["split"]
    lines.append(
        "  split              "
        + ", ".join(
            f"{label} {_pct(split[k]['share'])} ({_ms(split[k]['median'])})"
            for k, label in SPLIT_LABELS.items()
            if k in split
        )
    )
    return lines


def _partition_lines(m: MethodTimes) -> list[str]:
    lines = [
        "  partitions:",
        f"    {'#':>3}  {'name':<38} {'instr':<9} {'median':>9} {'p10':>9} {'p90':>9} {'share':>7}",
    ]
    for p in m["partitions"]:
        first, last = ([*p["instructions"], None, None])[:2]
        span = f"#{first}" if first == last else f"#{first}-{last}"
        detail = ""
        if p.get("delegate_operators"):
            detail = (
                f"  {p['delegate_operators']} delegate ops logged: compute "
                f"{_ms(p['inside_compute']['median'])}, convert/transpose/copy "
                f"{_ms(p['inside_glue']['median'])}, outside them "
                f"{_ms(p['outside_logged_ops']['median'])}"
            )
        lines.append(
            f"    {p['index']:>3}  {p['name']:<38} {span:<9} {_ms(p['median']):>9} "
            f"{_ms(p['p10']):>9} {_ms(p['p90']):>9} {_pct(p['share']):>7}{detail}"
        )
    return lines


def _top_lines(m: MethodTimes) -> list[str]:
    lines = []
    if m["top_cpu_ops"]:
        lines.append("  top CPU operators:")
        for op in m["top_cpu_ops"]:
            lines.append(
                f"    #{op['instruction']:<5} {op['op']:<52} median {_ms(op['median']):>8}  "
                f"{_pct(op['share']):>6}  ({op['partition']})"
            )
    for p in m["partitions"]:
        if p.get("top_delegate_ops"):
            lines.append(f"  top delegate operators ({p['name']}):")
            for dop in p["top_delegate_ops"][:5]:
                lines.append(f"    {dop['name']:<58} median {_ms(dop['median']):>8}")
    return lines


def text_profile(summary: ProfileSummary) -> str:
    lines = [
        f"{summary['file']} + {summary['etdump']}: times in ms "
        f"(ETDump version {summary['etdump_version']}, 1 tick = {summary['tick_ns']:g} ns)"
    ]
    for m in summary["methods"]:
        lines += ["", f"method {m['name']}: {m['runs']} runs"]
        lines += _latency_lines(m) + _partition_lines(m) + _top_lines(m)
    if summary["load"]:
        lines.append("")
        lines.append("load: " + ", ".join(f"{e['name']} {_ms(e['ms'])}" for e in summary["load"]))
    if summary["unplaced"]:
        lines.append("")
        lines.append(f"unplaced events: {len(summary['unplaced'])}")
        for u in summary["unplaced"][:20]:
            lines.append(
                f"  run {u['run']}: {u['name']} (chain {u['chain']}, "
                f"instruction {u['instruction_id']}): {u['reason']}"
            )
    lines += [f"problem: {problem}" for problem in summary["problems"]]
    return "\n".join(lines)


def json_profile(summary: ProfileSummary) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False)
