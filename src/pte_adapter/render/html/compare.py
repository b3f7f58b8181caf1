"""`pte-adapter report BEFORE AFTER`: did the fix work, in one file. Per method the two strips one
above the other, the numbers side by side with what grew in red and what shrank in green (the
same comparison as `pte-adapter diff`, `analysis/diff.py`), the partitions paired by role, the
memory peaks, and the size change."""

from __future__ import annotations

from pte_adapter.analysis.diff import REGRESSION_KEYS, MethodDiff, ProgramDiff
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.diff_report import LABELS, regression_text
from pte_adapter.render.facts import number_text
from pte_adapter.render.html.page import STYLE, page
from pte_adapter.render.html.runs import measured_html, measured_problems
from pte_adapter.render.html.strip import measures, strip_block, total
from pte_adapter.render.html.svg import esc, section, table
from pte_adapter.wording import bytes_text, counts_text, signed_bytes

# Numbers where less is better (a delta the other way is a regression or a cost).
LOWER_IS_BETTER = set(REGRESSION_KEYS) | {
    "cpu_kernel_calls",
    "cpu_glue_calls",
    "crossing_tensors",
    "handoff_tensors",
    "handoff_bytes",
    "instructions",
}


def _delta_cell(key: str, d: int | None) -> str:
    if not d:
        return "<td></td>"
    cls = ("delta-worse" if d > 0 else "delta-better") if key in LOWER_IS_BETTER else ""
    sign = "+" if d > 0 else "-"
    return f'<td class="{cls}">{esc(sign + number_text(key, abs(d)))}</td>'


def numbers_rows(m: MethodDiff) -> str:
    rows = ["<table><thead><tr><th></th><th>before</th><th>after</th><th>change</th></tr></thead>"]
    rows.append("<tbody>")
    for key, label in LABELS.items():
        c = m.numbers[key]
        if c.before is None and c.after is None:
            continue
        rows.append(
            f"<tr><td>{esc(label)}</td><td>{esc(number_text(key, c.before))}</td>"
            f"<td>{esc(number_text(key, c.after))}</td>{_delta_cell(key, c.delta)}</tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _ops(m: MethodDiff) -> str:
    items = [
        ("CPU compute ops removed", m.cpu_compute_ops_removed),
        ("CPU compute ops added", m.cpu_compute_ops_added),
        ("CPU glue ops removed", m.cpu_glue_ops_removed),
        ("CPU glue ops added", m.cpu_glue_ops_added),
    ]
    lines = [f"<li>{esc(label)}: {esc(counts_text(ops))}</li>" for label, ops in items if ops]
    return f"<ul>{''.join(lines)}</ul>" if lines else ""


def _pairs(m: MethodDiff) -> str:
    marks = {"same role": "=", "removed": "- removed", "added": "+ added"}
    rows = [
        [
            p.role,
            marks[p.status],
            p.before.name if p.before else "",
            p.after.name if p.after else "",
        ]
        for p in m.partitions
    ]
    return table(["role", "", "before", "after"], rows)


def _scales(*methods: MethodAnalysis | None) -> dict[str, float]:
    """Per measure, the larger total of the two: both strips are drawn to one scale."""
    out: dict[str, float] = {}
    for ma in methods:
        for w in measures(ma) if ma is not None else []:
            out[w.measure] = max(out.get(w.measure, 0.0), total(w))
    return out


def _method(before: ProgramAnalysis, after: ProgramAnalysis, m: MethodDiff, k: int) -> str:
    mb, ma = before.method(m.name), after.method(m.name)
    scales = _scales(mb, ma)
    out = [f"<h3>method {esc(m.name)}</h3>", "<p>Both strips are drawn to one scale.</p>"]
    if mb is not None:
        out.append(f"<h4>before: {esc(program_name(before))}</h4>")
        out.append(strip_block(mb, f"b{k}", scales))
    if ma is not None:
        out.append(f"<h4>after: {esc(program_name(after))}</h4>")
        out.append(strip_block(ma, f"a{k}", scales))
    if m.status != "both":
        where = "before" if m.status == "removed" else "after"
        out.append(f"<p>Only in the {where} program.</p>")
        return "".join(out)
    out.append(numbers_rows(m))
    out.append(_ops(m))
    if mb is not None and ma is not None:
        pb, pa = mb.memory.peak_live_bytes, ma.memory.peak_live_bytes
        out.append(
            f"<p>memory peak {esc(bytes_text(pb))} → {esc(bytes_text(pa))}; largest NPU "
            f"scratch {esc(bytes_text(mb.memory.peak_scratch_bytes))} → "
            f"{esc(bytes_text(ma.memory.peak_scratch_bytes))}</p>"
        )
    out.append("<h4>Partitions, paired by role</h4>" + _pairs(m))
    return "".join(out)


def program_name(result: ProgramAnalysis) -> str:
    return result.program.path.name if result.program.path else "program"


def _signed_bytes(d: int | None) -> str:
    return signed_bytes(d) if d else ""


def _size(diff: ProgramDiff) -> str:
    s = diff.size
    rows = [
        [
            label,
            bytes_text(c.before),
            bytes_text(c.after),
            _signed_bytes(c.delta),
        ]
        for c, label in (
            (s.file_size, "file"),
            (s.constant_bytes, "constant data"),
            (s.external_bytes, "external .ptd data"),
        )
    ]
    return table(["", "before", "after", "change"], rows)


def compare_fragment(before: ProgramAnalysis, after: ProgramAnalysis, diff: ProgramDiff) -> str:
    """The comparison of two programs as a `<div class="pte-report">` with its styles."""
    title = f"{diff.before} → {diff.after}"
    verdict = (
        "<p class='problem'>Regressions: "
        + esc("; ".join(regression_text(r) for r in diff.regressions))
        + "</p>"
        if diff.regressions
        else "<p>No regression: partitions, CPU islands, CPU compute calls and crossing bytes "
        "did not grow.</p>"
    )
    body = [f"<style>{STYLE}</style>", f"<h1>{esc(title)}</h1>", verdict]
    body.append(measured_problems(diff.measured))
    for k, m in enumerate(diff.methods):
        body.append(_method(before, after, m, k))
        body.append(measured_html(diff.measured, m.name))
    body.append(section("Size", _size(diff), "size"))
    return f'<div class="pte-report">{"".join(body)}</div>'


def compare_html(before: ProgramAnalysis, after: ProgramAnalysis, diff: ProgramDiff) -> str:
    """`pte-adapter report BEFORE AFTER`: the comparison as one self-contained HTML file."""
    title = f"{diff.before} → {diff.after}: pte-adapter report"
    return page(title, compare_fragment(before, after, diff))
