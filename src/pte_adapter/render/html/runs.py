"""Measured runs in the report. The runs over time: on the latency-per-run plot the warm-up
shaded, the typical latency at the start and at the end, and the onset of a drift as a red line
with its run; under it the drift in a sentence and, with an onset, where the time went
(`analysis/profile/drift.py`, `drift_where.py`). Times are drawn in milliseconds: the drift's
figures are in the profile's unit and are converted with its `ms_per_unit`, never read back from
text. And in the comparison of two programs, what the change saved, measured, next to what the
what-if predicted (`analysis/measured_diff.py`)."""

from __future__ import annotations

from collections.abc import Callable

from pte_adapter.analysis.measured_diff import MeasuredDiff
from pte_adapter.analysis.profile.report_types import DriftJSON, DriftPart
from pte_adapter.render.html.svg import esc, line, num, rect, table, text
from pte_adapter.render.measured_diff_report import measured_rows
from pte_adapter.wording import time_figure

ONSET: str = "#c62828"
LEVEL: str = "#ef6c00"


def _level(x1: float, x2: float, y: float, label: str) -> list[str]:
    """A typical latency over the runs it is the median of: a thick translucent bar, labelled."""
    return [
        f'<line x1="{num(x1)}" y1="{num(y)}" x2="{num(x2)}" y2="{num(y)}" stroke="{LEVEL}" '
        'stroke-width="4" stroke-opacity="0.55"/>',
        text(x1, y - 5, label, 9, fill=LEVEL),
    ]


def drift_marks(
    drift: DriftJSON,
    x_of: Callable[[float], float],
    y_of: Callable[[float], float],
    ms_per_unit: float,
    height: tuple[float, float],
) -> list[str]:
    """SVG pieces on the latency plot; `x_of(run)`, `y_of(ms)` place a point, `height` is the
    plot's (top, bottom)."""
    top, bottom = height
    left, right = x_of(0), x_of(max(drift["runs"] - 1, 0))
    out: list[str] = []
    warm = drift["warmup_runs"]
    if warm:
        x0, x1 = max(x_of(-0.5), left), x_of(warm - 0.5)
        out.append(rect(x0, top, x1 - x0, bottom - top, "#e0e0e0", "none", f"{warm} warm-up runs"))
        out.append(text(x1 + 3, bottom - 4, f"warm-up ({warm}), left out", 9, fill="#555"))
    first, last, window, runs = (
        drift["first_ms"],
        drift["last_ms"],
        drift["window"],
        drift["runs"],
    )
    if first is not None and last is not None and drift["state"] != "identical":
        ms = "ms" if drift["unit"] == "ms" else drift["unit"]
        a, b = x_of(warm - 0.5), x_of(warm + window - 0.5)
        out += _level(max(a, left), b, y_of(first * ms_per_unit), f"first {first:.3f} {ms}")
        a, b = x_of(runs - window - 0.5), min(x_of(runs - 0.5), right)
        out += _level(a, b, y_of(last * ms_per_unit), f"last {last:.3f} {ms}")
    onset = drift["onset_run"]
    if onset is not None:
        x = x_of(onset - 0.5)
        out.append(line(x, top, x, bottom, ONSET, "5 3"))
        label = f"onset: run {onset} ({drift['change_pct']:+.0f} %)"
        out.append(text(x + 4, top + 12, label, 11, fill=ONSET))
    return out


def _row(part: DriftPart, unit: str) -> list[str]:
    name = part["name"] + (f" ({part['partition']})" if part["partition"] else "")
    return [
        name,
        f"{time_figure(part['before'], unit)} {unit}",
        f"{time_figure(part['after'], unit)} {unit}",
        time_figure(part["change"], unit, signed=True),
        f"{part['share_before']:.1%} → {part['share_after']:.1%}",
    ]


def drift_block(drift: DriftJSON) -> str:
    """The drift's sentence, and with an onset the parts whose time changed."""
    out = [f"<p class='drift'>runs over time: {esc(drift['text'])}</p>"]
    where = drift["where"]
    if where is None:
        return "".join(out)
    (b0, b1), (a0, a1) = where["before_runs"], where["after_runs"]
    head = ["where the time went", f"runs {b0}-{b1}", f"runs {a0}-{a1}", "change", "share"]
    rows = [_row(p, drift["unit"]) for p in where["partitions"]]
    rows += [_row(p, drift["unit"]) for p in where["operators"]]
    out.append(table(head, rows))
    return "".join(out)


def measured_html(md: MeasuredDiff | None, method: str) -> str:
    """The measured comparison of one method (empty when it was not measured on both sides)."""
    if md is None:
        return ""
    m = next((x for x in md.methods if x.name == method), None)
    if m is None:
        return ""
    head = [
        "measured (medians, warm-up left out)",
        "before",
        "after",
        "change",
        "what-if predicted",
    ]
    out = [
        f"<h4>What the change saved, measured: {esc(md.before)} → {esc(md.after)}</h4>",
        table(head, measured_rows(m)),
    ]
    if m.prediction is not None:
        notes = [f"the what-if of {m.prediction.scenario}: {m.prediction.text}"]
        notes += m.prediction.notes
    else:
        notes = [f"no what-if for this change: {m.no_prediction}"]
    notes += m.notes
    out.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    return "".join(out)


def measured_problems(md: MeasuredDiff | None) -> str:
    if md is None or not md.problems:
        return ""
    return "".join(f"<p class='problem'>measured: {esc(p)}</p>" for p in md.problems)
