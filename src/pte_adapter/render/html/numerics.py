"""The numeric gap in the report: SNR along the method, drawn above the partition strip (each
compared output a dot over its partition's box, the threshold a dashed line, the worst and the
first below named), and the table of rows.

Read from the analysis (`analysis/numerics/`); nothing is computed here but positions.
"""

from __future__ import annotations

import math

from pte_adapter.analysis.numerics.rows import MethodNumerics, NumericRow
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.render.html.sections import collapsible
from pte_adapter.render.html.strip import WIDTH, box_colour, partition_boxes
from pte_adapter.render.html.svg import circle, esc, line, svg, table, text
from pte_adapter.render.numerics_facts import (
    accuracy_line,
    emulated_words,
    reference_text,
    snr_text,
    where_text,
)
from pte_adapter.wording import shape_compact

TRACK_TOP, TRACK_HEIGHT = 14.0, 70.0
WORST, BELOW, ABOVE = "#b2182b", "#ef8a62", "#2166ac"


def _db(r: NumericRow, cap: float) -> float | None:
    v = r.snr_db
    if v is None or math.isnan(v):
        return None
    return min(v, cap) if v > 0 else max(v, -cap)


def snr_track(ma: MethodAnalysis) -> str:
    """SNR of every compared output, above the strip's boxes (x) on a dB scale (y)."""
    m = ma.numerics
    if m is None or not m.compared:
        return ""
    finite = [r.snr_db for r in m.compared if r.snr_db is not None and math.isfinite(r.snr_db)]
    top = max([*finite, m.threshold_db]) + 5
    bottom = min([*finite, m.threshold_db]) - 5
    boxes = partition_boxes(ma)

    def y(db: float) -> float:
        return TRACK_TOP + TRACK_HEIGHT * (top - db) / (top - bottom)

    by_partition: dict[int, list[NumericRow]] = {}
    for r in sorted(m.compared, key=lambda r: (r.first_instruction, r.output)):
        by_partition.setdefault(r.partition, []).append(r)
    body = [
        line(0, y(m.threshold_db), WIDTH, y(m.threshold_db), "#b2182b", "4 3"),
        text(WIDTH - 4, y(m.threshold_db) - 3, f"{m.threshold_db:g} dB", 10, "end", "#b2182b"),
        text(2, TRACK_TOP - 3, f"SNR dB (top {top:.0f}, bottom {bottom:.0f})", 10, fill="#444"),
    ]
    for p, rows in by_partition.items():
        if not 0 <= p < len(boxes):
            continue
        x0, w = boxes[p]
        border = box_colour(ma.partitions.partitions[p])[1]
        body.append(line(x0, TRACK_TOP + TRACK_HEIGHT, x0 + w, TRACK_TOP + TRACK_HEIGHT, border))
        for k, r in enumerate(rows):
            db = _db(r, top)
            if db is None:
                continue
            x = x0 + w * (k + 1) / (len(rows) + 1)
            colour = WORST if r is m.worst else BELOW if db < m.threshold_db else ABOVE
            tip = f"{where_text(r)}: SNR {snr_text(r.snr_db)} dB"
            body.append(circle(x, y(db), 4.5 if r is m.worst else 3.5, colour, tip))
            if r is m.worst or r is m.first_below:
                label = f"{snr_text(r.snr_db)} dB {r.layer}"
                anchor = "start" if x < WIDTH / 2 else "end"
                body.append(
                    text(x + (6 if anchor == "start" else -6), y(db) + 4, label, 10, anchor)
                )
    label = f"{ma.name}: SNR per compared output, above the partition strip"
    return svg(WIDTH, TRACK_TOP + TRACK_HEIGHT + 4, body, label, "snr-track")


def _rows(m: MethodNumerics) -> list[list[object]]:
    out: list[list[object]] = []
    for r in sorted(m.rows, key=lambda r: (r.first_instruction, r.output)):
        met = r.metrics
        deq = [q.text for q in (r.dequantized, r.reference_dequantized) if q is not None]
        out.append(
            [
                ", ".join(str(i) for i in r.instructions),
                ", ".join(r.runtime_ops),
                r.layer,
                r.module,
                r.partition_name,
                shape_compact(r.shape),
                r.dtype,
                snr_text(met.snr_db) if met else "-",
                f"{met.mse:.4g}" if met else "-",
                f"{met.l1:.4g}" if met else "-",
                f"{met.max_abs:.4g}" if met else "-",
                f"{met.cosine:.6f}" if met and met.cosine is not None else "-",
                "; ".join(deq + ([r.note] if r.note else [])),
            ]
        )
    return out


def numerics_section(ma: MethodAnalysis) -> str:
    """The rows, what they were compared with, and what could not be joined."""
    m = ma.numerics
    if m is None or m.reference is None:
        return ""
    head = [
        "instr",
        "runtime ops",
        "layer",
        "module",
        "partition",
        "shape",
        "dtype",
        "SNR dB",
        "MSE",
        "L1 (sum)",
        "max |d|",
        "cosine",
        "note",
    ]
    words = emulated_words(m.emulated, m.reference_emulated)
    out = [
        f"<p>{esc(accuracy_line(m))}</p>",
        f'<p class="note">against {esc(reference_text(m))}; run {m.run + 1} of {m.runs}. '
        "SNR = 10 log10(mean(reference²) / MSE); L1 is the sum of |difference| (the "
        "Inspector's).</p>",
    ]
    if words:
        out.append(f'<p class="problem">{esc(words)}</p>')
    rows = _rows(m)
    out.append(collapsible(table(head, rows), len(rows), "rows"))
    if m.unjoined:
        unjoined = [
            [", ".join(str(i) for i in u.instructions), ", ".join(u.runtime_ops), u.layer, u.reason]
            for u in m.unjoined
        ]
        body = table(["instr", "runtime ops", "layer", "not joined because"], unjoined)
        out.append(collapsible(body, len(unjoined), "outputs not joined"))
    out += [f"<p class='problem'>problem: {esc(p)}</p>" for p in m.problems]
    return "".join(out)
