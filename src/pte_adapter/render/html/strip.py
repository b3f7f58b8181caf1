"""The partition strip: a method's partitions side by side in execution order, each a box in its
backend's colour, as wide as its operations, its estimated time or its measured time, with the
bytes that cross into each partition under the boundary in front of it."""

from __future__ import annotations

from dataclasses import dataclass

from pte_adapter.analysis.partitions import Partition
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.backends import (
    CPU_COMPUTE_COLOUR,
    CPU_GLUE_COLOUR,
    backend_colour,
    backend_info,
    group_prefix,
)
from pte_adapter.render.group_facts import partition_detail, partition_group_names
from pte_adapter.render.html.svg import esc, line, rect, svg, text
from pte_adapter.wording import bytes_short, ms_text, us_text

WIDTH, MARGIN, TOP, HEIGHT = 1000.0, 6.0, 6.0, 52.0
MIN_BOX = 3.0  # px: a partition of (nearly) no weight is still drawn
CHAR = 6.3  # px per character of 11px text, to decide what fits in a box
LABEL_GAP = 56.0  # px between two boundary labels

OPERATIONS, ESTIMATE, MEASURED = "operations", "estimated time", "measured time"


@dataclass(frozen=True)
class Weights:
    """How wide each partition is drawn, and what that width means."""

    measure: str  # OPERATIONS, ESTIMATE or MEASURED
    values: list[float | None]  # per partition; None: not known for it (drawn at MIN_BOX)
    unit: str  # "ops", "us", "ms"


def measures(ma: MethodAnalysis) -> list[Weights]:
    """Every way this method's strip can be drawn: by operations always; by estimated time when
    a partition has an NPU estimate; by measured time when the method ran under an ETDump."""
    parts = ma.partitions.partitions
    ops: list[float | None] = [
        float(p.inner_ops if p.inner_ops is not None else 1)
        if not p.is_cpu
        else float(max(1, sum(p.compute_ops.values()) + sum(p.glue_ops.values())))
        for p in parts
    ]
    out = [Weights(OPERATIONS, ops, "ops")]
    if ma.estimate is not None:
        est = ma.estimate.per_partition_us
        out.append(Weights(ESTIMATE, [est.get(p.index) for p in parts], "us"))
    if ma.measured is not None:
        by_index = {p["index"]: p["median"] for p in ma.measured.summary["partitions"]}
        out.append(Weights(MEASURED, [by_index.get(p.index) for p in parts], "ms"))
    return out


def box_colour(part: Partition) -> tuple[str, str]:
    """A delegate's colour; a CPU island red when it computes, grey when it only converts."""
    if not part.is_cpu:
        return backend_colour(part.backend)
    return CPU_COMPUTE_COLOUR if part.compute_ops else CPU_GLUE_COLOUR


def short_name(part: Partition) -> str:
    """`NPU 2`, `CPU 3`: what fits in a narrow box."""
    if part.is_cpu:
        return f"CPU {part.number}"
    return f"{group_prefix(part.backend).removesuffix(' partition')} {part.number}"


def _value_text(w: Weights, v: float | None) -> str:
    if v is None:
        return f"{w.measure}: not known"
    if w.unit == "us":
        return f"{w.measure}: {us_text(v)}"
    if w.unit == "ms":
        return f"{w.measure}: {ms_text(v)} (median)"
    return f"{int(v)} operation(s)"


def total(w: Weights) -> float:
    return sum(v for v in w.values if v)


def _layout(values: list[float | None], scale: float | None) -> list[tuple[float, float]]:
    """(x, width) of each box: MIN_BOX each, the rest shared by weight (of `scale` in all, when
    two strips are drawn to one scale)."""
    n = len(values)
    total = max(scale or 0.0, sum(v for v in values if v)) or 1.0
    room = WIDTH - 2 * MARGIN - n * MIN_BOX
    out, x = [], MARGIN
    for v in values:
        w = MIN_BOX + room * (v or 0.0) / total
        out.append((x, w))
        x += w
    return out


def partition_boxes(ma: MethodAnalysis) -> list[tuple[float, float]]:
    """(x, width) of each partition's box in the strip drawn by operations (its first panel):
    what is drawn above the strip lines up with it."""
    return _layout(measures(ma)[0].values, None)


def _box(ma: MethodAnalysis, part: Partition, name: str, w: Weights, x: float, bw: float) -> str:
    bg, border = box_colour(part)
    value = w.values[part.index]
    tip = "\n".join(
        [
            name,
            f"instructions {part.instructions[0]}..{part.instructions[-1]}"
            if part.instructions
            else "",
            _value_text(w, value),
            f"in {bytes_short(part.bytes_in)}, out {bytes_short(part.bytes_out)}",
        ]
    )
    dashed = value is None
    out = [
        rect(x, TOP, bw, HEIGHT, bg, "#999" if dashed else border, tip, "dashed" if dashed else "")
    ]
    label, detail = short_name(part), partition_detail(ma, part)
    if len(label) * CHAR < bw - 4:
        out.append(text(x + 3, TOP + 16, label, 11, fill="#111"))
        if detail and len(detail) * CHAR * 0.9 < bw - 4:
            out.append(text(x + 3, TOP + 32, detail, 10, fill="#333"))
        elif detail and bw > 30:
            fit = int((bw - 4) / (CHAR * 0.9)) - 1
            out.append(text(x + 3, TOP + 32, detail[: max(fit, 1)] + "…", 10, fill="#333"))
    return "".join(out)


def strip_svg(ma: MethodAnalysis, w: Weights, scale: float | None = None) -> str:
    """One method's strip drawn by one measure (all of `scale` filling the width, if given)."""
    parts = ma.partitions.partitions
    names = partition_group_names(ma)
    boxes = _layout(w.values, scale)
    body = [_box(ma, p, names[p.index], w, x, bw) for p, (x, bw) in zip(parts, boxes, strict=True)]
    last_label = -LABEL_GAP
    for p, (x, _) in zip(parts, boxes, strict=True):
        if p.index == 0 or not p.bytes_in:
            continue
        body.append(line(x, TOP + HEIGHT, x, TOP + HEIGHT + 8, "#5d4037"))
        if x - last_label >= LABEL_GAP:
            anchor = "start" if x < LABEL_GAP else "end" if x > WIDTH - LABEL_GAP else "middle"
            into = bytes_short(p.bytes_in)
            body.append(text(x, TOP + HEIGHT + 20, into, 10, anchor, "#5d4037"))
            last_label = x
    label = f"{ma.name}: {len(parts)} partitions, width by {w.measure}"
    return svg(WIDTH, TOP + HEIGHT + 26, body, label, "strip")


def strip_legend(ma: MethodAnalysis) -> str:
    """The colours the strip uses, for this method's backends."""
    items: list[tuple[tuple[str, str], str]] = []
    for b in dict.fromkeys(p.backend for p in ma.partitions.delegate_partitions):
        items.append((backend_colour(b), f"{backend_info(b).display} ({b})"))
    items += [(CPU_COMPUTE_COLOUR, "CPU island that computes"), (CPU_GLUE_COLOUR, "CPU glue only")]
    return (
        '<p class="legend">'
        + "".join(
            f'<span class="swatch" style="background:{esc(c[0])};border-color:{esc(c[1])}"></span>'
            f"{esc(t)} "
            for c, t in items
        )
        + "</p>"
    )


def strip_block(ma: MethodAnalysis, key: str, scales: dict[str, float] | None = None) -> str:
    """The strip with its width toggle (radio buttons, pure CSS: no script) and legend. `key` makes
    the radio group unique in the page; `scales` (per measure) draws two programs to one scale."""
    ws = measures(ma)
    radios, panels = [], []
    for k, w in enumerate(ws):
        rid = f"{key}-w{k}"
        checked = " checked" if k == 0 else ""
        radios.append(
            f'<input type="radio" name="{esc(key)}-width" id="{esc(rid)}"{checked}>'
            f'<label for="{esc(rid)}">{esc(w.measure)}</label>'
        )
        only = " only" if len(ws) == 1 else ""
        scale = (scales or {}).get(w.measure)
        unknown = sum(v is None for v in w.values)
        why = "only NPU partitions are estimated" if w.measure == ESTIMATE else "not in the ETDump"
        note = (
            f'<p class="note">{unknown} partition(s) without a {esc(w.measure)} ({why}): drawn '
            "at the least width, dashed.</p>"
            if unknown
            else ""
        )
        panels.append(f'<div class="panel{only}">{strip_svg(ma, w, scale)}{note}</div>')
    toggle = "width by " + "".join(radios) if len(ws) > 1 else ""
    return (
        f'<div class="toggle">{toggle}<div class="panels">{"".join(panels)}</div></div>'
        + strip_legend(ma)
    )
