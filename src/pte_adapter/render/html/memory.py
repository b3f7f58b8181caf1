"""The memory picture drawn (`analysis/memory.py`): every planned tensor as a box from its first to
its last instruction at its offset in its arena, the live bytes over the method with the peak
marked, the arenas beside each NPU partition's scratch, and the tensors live at the peak."""

from __future__ import annotations

import math

from pte_adapter.analysis.memory import ArenaUse, MethodMemory
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.render.html.sections import collapsible
from pte_adapter.render.html.strip import box_colour, short_name
from pte_adapter.render.html.svg import byte_ticks, esc, line, path, rect, svg, table, text
from pte_adapter.render.memory_facts import producer_text, scratch_text
from pte_adapter.wording import bytes_short, bytes_text, shape_text

WIDTH, LEFT, RIGHT, TOP = 1000.0, 70.0, 10.0, 16.0
PLAN_HEIGHT, LIVE_HEIGHT, BAND = 220.0, 120.0, 8.0
MAX_INSTRUCTION_LABELS = 40  # instruction numbers under a chart; more are thinned out
TENSOR_FILL, PEAK_FILL, ARENA_FILL = "#90caf9", "#1565c0", "#b0bec5"
MAX_ROWS = 40  # tensors listed at the peak


def _x(i: float, steps: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * i / max(steps, 1)


def _partition_band(ma: MethodAnalysis, y: float) -> list[str]:
    """A thin strip under a chart (which partition runs at each instruction) and the
    instruction numbers under it."""
    steps = len(ma.method.instructions)
    out = []
    for p in ma.partitions.partitions:
        if p.instructions:
            a, b = _x(p.instructions[0], steps), _x(p.instructions[-1] + 1, steps)
            out.append(rect(a, y, b - a, BAND, box_colour(p)[0], box_colour(p)[1], short_name(p)))
    every = max(1, math.ceil(steps / MAX_INSTRUCTION_LABELS))
    for i in range(0, steps, every):
        out.append(text(_x(i + 0.5, steps), y + BAND + 10, f"{i}", 8, "middle", "#777"))
    return out


def _y_axis(top: float, y0: float, height: float) -> list[str]:
    out = []
    for v in byte_ticks(top):
        y = y0 + height - height * v / (top or 1)
        out.append(line(LEFT - 4, y, WIDTH - RIGHT, y, "#e0e0e0"))
        out.append(text(LEFT - 6, y + 4, bytes_short(int(v)), 9, "end", "#555"))
    return out


def _y(v: float, top: float, height: float) -> float:
    return TOP + height - height * v / (top or 1)


def plan_svg(ma: MethodAnalysis, arena: ArenaUse) -> str:
    """Offset (up) against instruction (right): each planned tensor of one arena a box."""
    m, steps = ma.memory, len(ma.method.instructions)
    mine = [t for t in m.tensors if t.arena == arena.arena]
    top = max(arena.size, max((t.offset + t.nbytes for t in mine), default=0), 1)
    body = _y_axis(top, TOP, PLAN_HEIGHT)
    at_peak = {t.value for t in m.live_at_peak}
    for t in mine:
        x0, x1 = _x(t.first, steps), _x(t.last + 1, steps)
        h = max(PLAN_HEIGHT * t.nbytes / top, 0.8)
        tip = (
            f"%{t.value}: {bytes_short(t.nbytes)} at offset {t.offset}, instructions "
            f"{t.first}..{t.last} ({t.kind}), from {producer_text(ma, t)}"
        )
        fill = PEAK_FILL if t.value in at_peak else TENSOR_FILL
        body.append(rect(x0, _y(t.offset, top, PLAN_HEIGHT) - h, x1 - x0, h, fill, "#37474f", tip))
    y_size = _y(arena.size, top, PLAN_HEIGHT)
    body.append(line(LEFT, y_size, WIDTH - RIGHT, y_size, "#b71c1c", "4 3"))
    label = f"arena {arena.arena}: {bytes_short(arena.size)} planned"
    body.append(text(WIDTH - RIGHT, y_size - 3, label, 10, "end", "#b71c1c"))
    body += _partition_band(ma, TOP + PLAN_HEIGHT + 4)
    label = f"{ma.name}: lifetime and offset of every tensor planned in arena {arena.arena}"
    return svg(WIDTH, TOP + PLAN_HEIGHT + 4 + BAND + 14, body, label, "plan")


def live_svg(ma: MethodAnalysis) -> str:
    """Live planned bytes at each instruction (all arenas), the peak marked."""
    m, steps = ma.memory, len(ma.method.instructions)
    size = sum(a.size for a in m.arenas)
    top = max(size, m.peak_live_bytes, 1)
    body = _y_axis(top, TOP, LIVE_HEIGHT)
    points: list[tuple[float, float]] = []
    for i, v in enumerate(m.live_bytes):
        y = _y(v, top, LIVE_HEIGHT)
        points += [(_x(i, steps), y), (_x(i + 1, steps), y)]
    if points:
        bottom = TOP + LIVE_HEIGHT
        body.append(
            path([(points[0][0], bottom), *points, (points[-1][0], bottom)], "#1565c0", "#bbdefb")
        )
    if m.peak_at >= 0:
        x, y = _x(m.peak_at + 0.5, steps), _y(m.peak_live_bytes, top, LIVE_HEIGHT)
        body.append(line(x, y, x, TOP + LIVE_HEIGHT, PEAK_FILL, "3 2"))
        peak = f"peak {bytes_short(m.peak_live_bytes)} at instruction {m.peak_at}"
        body.append(text(x + 4, y + 12, peak, 10, fill=PEAK_FILL))
    y_size = _y(size, top, LIVE_HEIGHT)
    body.append(line(LEFT, y_size, WIDTH - RIGHT, y_size, "#b71c1c", "4 3"))
    body.append(
        text(WIDTH - RIGHT, y_size - 3, f"arenas: {bytes_short(size)}", 10, "end", "#b71c1c")
    )
    body += _partition_band(ma, TOP + LIVE_HEIGHT + 4)
    label = f"{ma.name}: live planned bytes per instruction"
    return svg(WIDTH, TOP + LIVE_HEIGHT + 4 + BAND + 14, body, label, "live")


def budget_svg(ma: MethodAnalysis) -> str:
    """The planned arenas, the peak, and each partition's scratch, on one scale."""
    m = ma.memory
    bars: list[tuple[str, int, str]] = [
        (f"arena {a.arena} (planned)", a.size, ARENA_FILL) for a in m.arenas
    ]
    bars.append(("peak live (planned)", m.peak_live_bytes, PEAK_FILL))
    for s in m.scratch:
        part = ma.partitions.partitions[s.partition]
        bars.append(
            (f"{short_name(part)} scratch ({s.home})", s.scratch_bytes, box_colour(part)[1])
        )
    top = max((b[1] for b in bars), default=1) or 1
    body, row = [], 18.0
    for k, (label, n, fill) in enumerate(bars):
        y = 4 + k * row
        body.append(text(200, y + 11, label, 10, "end"))
        body.append(
            rect(
                206, y, (WIDTH - 300) * n / top, row - 5, fill, "none", f"{label}: {bytes_text(n)}"
            )
        )
        body.append(text(210 + (WIDTH - 300) * n / top, y + 11, bytes_short(n), 10))
    return svg(
        WIDTH, 8 + len(bars) * row, body, f"{ma.name}: arenas, peak and NPU scratch", "budget"
    )


def _live_rows(ma: MethodAnalysis) -> list[list[object]]:
    rows: list[list[object]] = []
    for t in ma.memory.live_at_peak[:MAX_ROWS]:
        tensor = ma.method.tensor(t.value)
        shape = f"{shape_text(tensor.sizes)} {tensor.dtype}" if tensor else "?"
        rows.append(
            [
                f"%{t.value}",
                shape,
                bytes_text(t.nbytes),
                f"{t.arena} @ {t.offset}",
                f"{t.first}..{t.last}",
                t.kind,
                producer_text(ma, t),
            ]
        )
    return rows


def memory_section(ma: MethodAnalysis) -> str:
    """Everything about one method's memory."""
    m: MethodMemory = ma.memory
    if not m.tensors and not m.scratch:
        return "<p>No memory-planned tensors.</p>"
    peak_part = (
        ma.partitions.partitions[ma.partitions.partition_of[m.peak_at]] if m.peak_at >= 0 else None
    )
    out = [
        f"<p><b>Peak</b> {esc(bytes_text(m.peak_live_bytes))} of planned arena bytes live at "
        f"instruction {m.peak_at}{esc(f' ({peak_part.name})' if peak_part else '')}; "
        + ", ".join(esc(f"arena {a.arena}: {bytes_text(a.size)} planned") for a in m.arenas)
        + ".</p>"
    ]
    if m.scratch:
        out.append(
            "<ul>" + "".join(f"<li>{esc(scratch_text(ma, s))}</li>" for s in m.scratch) + "</ul>"
        )
        out.append(
            f"<p>The {esc(m.scratch[0].home)} must hold at least "
            f"{esc(bytes_text(m.peak_scratch_bytes))} beside the arenas (ExecuTorch resets it "
            "after every instruction).</p>"
        )
    out.append(budget_svg(ma))
    out.append("<h4>Live planned bytes</h4>" + live_svg(ma))
    for arena in m.arenas:
        out.append(
            f"<h4>Arena {arena.arena}: every tensor's lifetime and offset</h4>"
            + plan_svg(ma, arena)
        )
    out.append("<h4>Live at the peak</h4>")
    head = ["value", "tensor", "bytes", "arena @ offset", "live", "kind", "written by"]
    out.append(collapsible(table(head, _live_rows(ma)), len(m.live_at_peak), "tensors"))
    more = len(m.live_at_peak) - MAX_ROWS
    if more > 0:
        out.append(f"<p>… and {more} more.</p>")
    if m.problems:
        out.append("<p class='problem'>" + esc("; ".join(m.problems)) + "</p>")
    return "".join(out)
