"""The report's sections besides the strip and the memory: the numbers of `summary`, the reasons
with their layers and source lines, the NPU estimate per partition, the size breakdown drawn, and
the measured split with the run-to-run plot when an ETDump was read."""

from __future__ import annotations

from pte_adapter.analysis.profile.report_types import MethodTimes
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.size import SizeReport
from pte_adapter.render.facts import crossings_text, estimate_target_text
from pte_adapter.render.group_facts import partition_group_names
from pte_adapter.render.html.runs import drift_block, drift_marks
from pte_adapter.render.html.svg import esc, line, path, rect, svg, table, text, ticks
from pte_adapter.wording import (
    bytes_short,
    bytes_text,
    counts_text,
    cycles_text,
    ms_text,
    thousands,
    us_text,
)

SIZE_COLOURS = ("#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f", "#9e9d24")
COLLAPSE_ABOVE = 12  # table rows shown open; a longer table opens on a click


def numbers_table(ma: MethodAnalysis) -> str:
    """What `pte-adapter summary` says about the method, as a table."""
    s = ma.summary
    rows: list[tuple[str, str]] = [
        ("instructions", str(s.instructions)),
        (
            "delegate partitions",
            f"{s.delegate_partitions} ({counts_text(s.delegate_calls) or 'none'})",
        ),
        ("CPU islands", str(s.cpu_islands)),
        (
            "CPU kernel calls",
            f"{s.cpu_kernel_calls} ({s.cpu_compute_calls} compute, {s.cpu_glue_calls} glue)",
        ),
        ("CPU compute ops", counts_text(s.cpu_compute_ops) or "none"),
        (
            "boundary crossings",
            crossings_text(s.crossings, s.crossing_bytes),
        ),
        (
            "delegate handoffs",
            crossings_text(s.handoffs, s.handoff_bytes),
        ),
        (
            "inside delegates",
            f"{s.delegated_share_by_instructions:.1%} of calls"
            + (
                f", {s.delegated_share_by_inner_ops:.1%} of operations"
                if s.delegated_share_by_inner_ops is not None
                else ""
            ),
        ),
    ]
    if s.npu_estimate is not None:
        est, frag = s.npu_estimate, s.npu_estimate.fragmentation
        rows.append(
            (
                "NPU estimate",
                f"{us_text(est.time_us)} ({cycles_text(est.cycles)}) over {est.partitions} partition(s), busiest {est.busiest}; {estimate_target_text(est.target)}",
            )
        )
        rows.append(
            (
                "boundary cost (est.)",
                f"{us_text(frag.time_us)}: {bytes_text(frag.boundary_bytes)} through {frag.boundary_memory}, {frag.invocations} invocation(s)",
            )
        )
    rows.append(("memory peak", bytes_text(ma.memory.peak_live_bytes)))
    if ma.memory.scratch:
        rows.append(("largest NPU scratch", bytes_text(ma.memory.peak_scratch_bytes)))
    return table([], rows, "numbers")


def partitions_table(ma: MethodAnalysis) -> str:
    names = partition_group_names(ma)
    rows = []
    for p, ps in zip(ma.partitions.partitions, ma.summary.partitions, strict=True):
        span = f"{p.instructions[0]}..{p.instructions[-1]}" if p.instructions else ""
        rows.append(
            [
                names[p.index],
                span,
                bytes_short(p.bytes_in),
                bytes_short(p.bytes_out),
                ", ".join(ps.modules) or "",
                bytes_short(ps.peak_live_bytes),
            ]
        )
    head = ["partition", "instructions", "in", "out", "layers", "planned live peak"]
    return collapsible(table(head, rows), len(rows), "partitions")


def _reason_rows(ma: MethodAnalysis) -> list[list[object]]:
    """One row per operator and reason: how often, in which partitions and layers, from which
    source lines (a transformer repeats the same refusal in every layer)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for r in ma.reasons:
        groups.setdefault((r.operator, r.text), []).append(r.instruction)
    rows: list[list[object]] = []
    for (op, why), instructions in groups.items():
        parts, layers, lines = [], [], []
        for i in instructions:
            parts.append(ma.partitions.partitions[ma.partitions.partition_of[i]].name)
            src = ma.source.instructions.get(i) if ma.source else None
            if src is not None:
                layers += [m.text for m in src.modules]
                lines += [src.source_line] if src.source_line else []
        where = ", ".join(dict.fromkeys(parts))
        rows.append(
            [
                op if len(instructions) == 1 else f"{op} ×{len(instructions)}",
                ", ".join(str(i) for i in instructions[:8])
                + (" …" if len(instructions) > 8 else ""),
                _first(where.split(", "), 4),
                _first(list(dict.fromkeys(layers)), 4),
                _first(list(dict.fromkeys(lines)), 2),
                why,
            ]
        )
    return rows


def _first(items: list[str], n: int) -> str:
    return ", ".join(items[:n]) + (f" … (+{len(items) - n})" if len(items) > n else "")


def reasons_table(ma: MethodAnalysis) -> str:
    """Why each CPU compute kernel was not delegated, with its layer and source line."""
    if not ma.reasons:
        return "<p>No CPU compute kernel (nothing the partitioners refused).</p>"
    head = ["operator", "instructions", "partitions", "layers", "source lines", "why not delegated"]
    return collapsible(table(head, _reason_rows(ma)), len(ma.reasons), "reasons")


def collapsible(html_table: str, rows: int, what: str) -> str:
    """A long table folded away (an HTML `<details>`: no script), a short one as it is."""
    if rows <= COLLAPSE_ABOVE:
        return html_table
    return f"<details><summary>{rows} {esc(what)}</summary>{html_table}</details>"


def estimate_table(ma: MethodAnalysis) -> str:
    if ma.estimate is None:
        return ""
    rows = []
    for p in ma.partitions.delegate_partitions:
        d = p.delegate_index
        est = (
            ma.method.delegates[d].decoded.estimate
            if d is not None and 0 <= d < len(ma.method.delegates)
            else None
        )
        if est is None:
            continue
        rows.append(
            [
                p.name,
                p.inner_ops if p.inner_ops is not None else "",
                thousands(est.cycles),
                us_text(est.time_us),
                thousands(est.macs),
                est.busiest,
                est.not_covered or "",
            ]
        )
    frag = ma.estimate.fragmentation
    note = f"<p>Boundary cost (estimated): {esc(us_text(frag.time_us))}; {esc('; '.join(frag.assumptions))}.</p>"
    return (
        table(["partition", "NPU ops", "cycles", "time", "MACs", "busiest", "not priced"], rows)
        + note
    )


def size_section(report: SizeReport) -> str:
    """Where the file's bytes go: one bar, each kind its share, and the table."""
    totals = report.totals()
    total = report.file_size or 1
    body, x = [], 0.0
    for k, (kind, n) in enumerate(totals.items()):
        w = 1000 * n / total
        body.append(
            rect(
                x,
                0,
                w,
                28,
                SIZE_COLOURS[k % len(SIZE_COLOURS)],
                "#fff",
                f"{kind}: {bytes_text(n)} ({n / total:.1%})",
            )
        )
        if w > 70:
            body.append(text(x + 4, 18, kind, 10, fill="#fff"))
        x += w
    rows = [[kind, bytes_text(n), f"{n / total:.1%}"] for kind, n in totals.items()]
    bar = svg(1000, 28, body, f"{report.file}: bytes by kind", "size")
    return (
        f"<p>{esc(report.file)}: {esc(bytes_text(report.file_size))}</p>"
        + bar
        + table(["kind", "bytes", "share"], rows)
    )


def _latency_svg(m: MethodTimes, ms_per_unit: float) -> str:
    lat = m["latency_ms"]
    # A zero (or, from end ticks before start ticks, negative) latency never divides.
    top = max(max(lat, default=0.0), 0.0) * 1.1 or 1.0
    w, h, left = 1000.0, 140.0, 60.0
    body = []
    for v in ticks(top):
        y = 4 + h - h * v / top
        body += [
            line(left, y, w, y, "#e0e0e0"),
            text(left - 4, y + 4, f"{v:g} ms", 9, "end", "#555"),
        ]

    def x_of(run: float) -> float:
        return left + (w - left - 10) * run / max(len(lat) - 1, 1)

    def y_of(ms: float) -> float:
        return 4 + h - h * ms / top

    drift = m["drift"]
    body += drift_marks(drift, x_of, y_of, ms_per_unit, (4.0, 4 + h))
    body.append(path([(x_of(k), y_of(v)) for k, v in enumerate(lat)], "#1565c0"))
    median = m["latency"]["median"]
    if median is not None and drift["onset_run"] is None:  # one regime: its median means something
        y = y_of(median * ms_per_unit)
        body += [
            line(left, y, w, y, "#888", "4 3"),
            text(w - 4, y - 3, f"median {ms_text(median * ms_per_unit)}", 10, "end", "#555"),
        ]
    return svg(w, h + 10, body, f"{m['name']}: latency per run ({len(lat)} runs)", "latency")


def profile_section(result: ProgramAnalysis) -> str:
    if result.profile_error is not None:
        return f"<p class='problem'>{esc(result.profile_error)}</p>"
    summary = result.profile_summary
    if summary is None:
        return ""
    out = [f"<p>{esc(summary['etdump'])}</p>"]
    ms = summary["ms_per_unit"]
    for m in summary["methods"]:
        lat = m["latency"]
        if not m["latency_ms"] or ms is None or lat["median"] is None:
            # Cycles without a clock: no time to draw; the runs over time are still said.
            out.append(f"<h3>{esc(m['name'])}: {m['runs']} runs, in {esc(summary['unit'])}</h3>")
            out.append(drift_block(m["drift"]))
            continue
        p10, p90 = lat["p10"] or 0.0, lat["p90"] or 0.0
        regimes = " over two regimes (runs over time, below)" if m["drift"]["where"] else ""
        out.append(
            f"<h3>{esc(m['name'])}: {m['runs']} runs, median {ms_text(lat['median'] * ms)} "
            f"(p10 {p10 * ms:.3f}, p90 {p90 * ms:.3f}){regimes}</h3>"
        )
        out.append(_latency_svg(m, ms))
        out.append(drift_block(m["drift"]))
        rows = [
            [
                k,
                f"{v['share']:.1%}",
                ms_text(v["median"] * ms) if v["median"] is not None else "",
            ]
            for k, v in m["split"].items()
        ]
        out.append(table(["measured split", "share of a run", "median"], rows))
    return "".join(out)
