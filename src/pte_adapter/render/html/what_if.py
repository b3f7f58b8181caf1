"""The report's what-if: a table of what fixing each CPU island (and all of them) would buy, and
the partition strip drawn as it would be with every fixable island fixed."""

from __future__ import annotations

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.analysis.what_if import WhatIf
from pte_adapter.render.html.strip import box_colour, short_name
from pte_adapter.render.html.svg import esc, rect, svg, table, text
from pte_adapter.render.what_if_facts import npu_text, summarised_text
from pte_adapter.wording import bytes_text, us_text

_WIDTH, _HEIGHT = 960.0, 34.0


def _row(parts: MethodPartitions, s: WhatIf) -> list[object]:
    where = parts.partitions[s.partition].name if s.partition is not None else "all fixable"
    return [
        where,
        s.fix,
        s.text,
        f"{s.npu_partitions_after} (−{s.delegate_calls_removed})" if s.groups else "no merge",
        f"{s.crossings_removed} / {bytes_text(s.boundary_bytes_removed)}",
        s.glue_kernels_removed,
        npu_text(s),
        "not timed" if s.cpu_time_removed_us is None else us_text(s.cpu_time_removed_us),
    ]


def after_strip(ma: MethodAnalysis, s: WhatIf) -> str:
    """The partitions after the scenario, one box each (width by instructions): a merged group
    in its backend's colour, labelled with the partitions it joins."""
    parts = ma.partitions
    merged = {i: g for g in s.groups for i in g}
    boxes: list[tuple[list[int], bool]] = []
    for p in parts.partitions:
        g = merged.get(p.index)
        if g is None:
            boxes.append(([p.index], False))
        elif g[0] == p.index:
            boxes.append((g, True))
    total = max(sum(len(parts.partitions[i].instructions) for g, _ in boxes for i in g), 1)
    x, body = 0.0, []
    for group, is_merged in boxes:
        n = sum(len(parts.partitions[i].instructions) for i in group)
        w = max(_WIDTH * n / total, 3.0)
        lead = next((parts.partitions[i] for i in group if not parts.partitions[i].is_cpu), None)
        fill, stroke = box_colour(lead or parts.partitions[group[0]])
        body.append(rect(x, 2, w - 1, _HEIGHT - 4, fill, stroke))
        label = (
            f"{short_name(lead)}+{len(group) - 1}"
            if is_merged and lead
            else short_name(parts.partitions[group[0]])
        )
        if w > 7 * len(label):
            body.append(text(x + 3, _HEIGHT / 2 + 4, label, 10))
        x += w
    return svg(x, _HEIGHT, body, "the partitions with every fixable island fixed", "strip")


def what_if_section(ma: MethodAnalysis) -> str:
    w = ma.what_if
    if w is None:
        return ""
    parts = ma.partitions
    rows = [_row(parts, s) for s in w.islands]
    if w.all is not None:
        rows.append(_row(parts, w.all))
    head = [
        "island",
        "fix",
        "what to change",
        "delegate partitions after",
        "crossings / bytes removed",
        "glue removed",
        "NPU time after",
        "CPU time removed",
    ]
    out = table(head, rows)
    if w.summarised:
        out += f"<p>{esc(summarised_text(w))}</p>"
    if w.all is not None and w.all.groups:
        out += f"<p>{esc(w.all.text)}: the partitions would be</p>" + after_strip(ma, w.all)
    return out
