"""`pte-adapter diff` as text and as stable JSON: per method, what changed and in which direction."""

from __future__ import annotations

import json
from typing import Any

from pte_adapter.analysis.diff import (
    Change,
    CountsChange,
    MethodDiff,
    PartitionPair,
    ProgramDiff,
    Regression,
)
from pte_adapter.analysis.summary import PartitionSummary
from pte_adapter.backends import CPU
from pte_adapter.render.facts import number_text
from pte_adapter.render.measured_diff_report import measured_json, measured_lines
from pte_adapter.wording import bytes_text, counts_text, plural

LABELS: dict[str, str] = {
    "instructions": "instructions",
    "delegate_partitions": "delegate partitions",
    "cpu_islands": "CPU islands",
    "cpu_kernel_calls": "CPU kernel calls",
    "cpu_compute_calls": "CPU compute calls",
    "cpu_glue_calls": "CPU glue calls",
    "crossing_tensors": "boundary crossings (tensors)",
    "crossing_bytes": "boundary crossing bytes",
    "handoff_tensors": "delegate handoffs (tensors)",
    "handoff_bytes": "delegate handoff bytes",
    "delegate_inner_ops": "operations inside delegates",
    "npu_ops": "NPU operations",
    "cmd_bytes": "NPU command stream bytes",
    "weight_bytes": "NPU weight bytes",
    "scratch_bytes": "NPU scratch bytes",
}
# Decoder numbers shown per partition (the ones a diff reader compares).
PARTITION_STATS = (
    "npu_ops",
    "cmd_bytes",
    "weight_bytes",
    "scratch_bytes",
    "xnn_nodes",
    "vk_ops",
    "tosa_ops",
    "constant_bytes",
    "tosa_constant_bytes",
)
NOTES = [
    "CPU compute operators are listed by operator name; their source modules need "
    "ETRecords, which this version does not read.",
]


def regression_text(r: Regression) -> str:
    return f"{r.method}: {LABELS[r.metric]} grew {r.before} -> {r.after}"


# -- JSON ------------------------------------------------------------------------------------


def _change(c: Change[Any]) -> dict[str, Any]:
    return {"before": c.before, "after": c.after, "delta": c.delta}


def _counts(c: CountsChange) -> dict[str, list[int]]:
    return {"before": list(c.before), "after": list(c.after)}


def _partition_view(p: PartitionSummary | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "name": p.name,
        "backend": p.backend,
        "instructions": p.instructions,
        "kernel_calls": p.kernel_calls,
        "compute_ops": p.compute_ops,
        "glue_ops": p.glue_ops,
        "inner_ops": p.inner_ops,
        "bytes_in": p.bytes_in,
        "bytes_out": p.bytes_out,
        "stats": {k: p.delegate_stats[k] for k in PARTITION_STATS if k in p.delegate_stats},
    }


def _pair(p: PartitionPair) -> dict[str, Any]:
    return {
        "role": p.role,
        "status": p.status,
        "before": _partition_view(p.before),
        "after": _partition_view(p.after),
    }


def _method(m: MethodDiff) -> dict[str, Any]:
    return {
        "name": m.name,
        "status": m.status,
        "numbers": {k: _change(c) for k, c in m.numbers.items()},
        "delegate_calls": {k: _change(c) for k, c in m.delegate_calls.items()},
        "cpu_compute_ops_added": m.cpu_compute_ops_added,
        "cpu_compute_ops_removed": m.cpu_compute_ops_removed,
        "cpu_glue_ops_added": m.cpu_glue_ops_added,
        "cpu_glue_ops_removed": m.cpu_glue_ops_removed,
        "crossings": {k: _counts(c) for k, c in m.crossings.items()},
        "handoffs": {k: _counts(c) for k, c in m.handoffs.items()},
        "partitions": [_pair(p) for p in m.partitions],
    }


def diff_json(diff: ProgramDiff) -> dict[str, Any]:
    s = diff.size
    return {
        "before": diff.before,
        "after": diff.after,
        "methods": [_method(m) for m in diff.methods],
        "size": {
            "file_size": _change(s.file_size),
            "constant_bytes": _change(s.constant_bytes),
            "external_bytes": _change(s.external_bytes),
            "by_kind": {k: _change(c) for k, c in s.by_kind.items()},
        },
        "delegates_size": {"before": diff.delegates_size[0], "after": diff.delegates_size[1]},
        "regressions": [regression_text(r) for r in diff.regressions],
        "notes": list(NOTES),
        "measured": measured_json(diff.measured),
    }


def json_diff_report(diff: ProgramDiff) -> str:
    return json.dumps(diff_json(diff), indent=2, ensure_ascii=False)


# -- text ------------------------------------------------------------------------------------


def _delta(key: str, d: int | None) -> str:
    if not d:
        return ""
    sign = "+" if d > 0 else "-"
    return f"  ({sign}{number_text(key, abs(d))})"


def _partition_text(p: PartitionSummary | None) -> str:
    if p is None:
        return "-"
    if p.backend == CPU:
        body = counts_text({**p.compute_ops, **p.glue_ops}) or "no kernel calls"
    else:
        body = f"{p.inner_ops} inner ops" if p.inner_ops is not None else "not decoded"
        if "weight_bytes" in p.delegate_stats:
            body += f", weights {bytes_text(int(p.delegate_stats['weight_bytes']))}"
    return f"{p.name}: {body}"


def _pairs(name: str, rows: dict[str, CountsChange], lines: list[str]) -> None:
    if not rows:
        return
    lines.append(f"  {name}:")
    for direction, c in rows.items():
        (nb, bb), (na, ba) = c.before, c.after
        lines.append(
            f"    {direction:<34} {plural(nb, 'tensor')} / {bytes_text(bb)}  ->  "
            f"{plural(na, 'tensor')} / {bytes_text(ba)}"
        )


def _ops_lines(m: MethodDiff) -> list[str]:
    rows = (
        ("CPU compute ops removed", m.cpu_compute_ops_removed),
        ("CPU compute ops added", m.cpu_compute_ops_added),
        ("CPU glue ops removed", m.cpu_glue_ops_removed),
        ("CPU glue ops added", m.cpu_glue_ops_added),
    )
    return [f"  {label:<30} {counts_text(ops)}" for label, ops in rows if ops]


def _method_lines(m: MethodDiff) -> list[str]:
    if m.status != "both":
        where = "first" if m.status == "removed" else "second"
        return [f"method {m.name}: only in the {where} file"]
    lines = [f"method {m.name}:"]
    for key, label in LABELS.items():
        c = m.numbers[key]
        if c.before is None and c.after is None:
            continue
        lines.append(
            f"  {label:<30} {number_text(key, c.before):>22} -> "
            f"{number_text(key, c.after):<22}{_delta(key, c.delta)}"
        )
    calls = ", ".join(f"{b} {c.before} -> {c.after}" for b, c in m.delegate_calls.items())
    if calls:
        lines.append(f"  partitions by backend          {calls}")
    lines += _ops_lines(m)
    _pairs("boundary crossings", m.crossings, lines)
    _pairs("delegate handoffs", m.handoffs, lines)
    lines.append("  partitions (paired by role):")
    marks = {"same role": "=", "removed": "-", "added": "+"}
    for p in m.partitions:
        lines.append(
            f"    {marks[p.status]} {p.role:<28} {_partition_text(p.before):<60} | "
            f"{_partition_text(p.after)}"
        )
    return lines


def _size_lines(diff: ProgramDiff) -> list[str]:
    s = diff.size
    lines = ["size:"]
    for c, label in (
        (s.file_size, "file"),
        (s.constant_bytes, "constant data"),
        (s.external_bytes, "external .ptd data"),
    ):
        lines.append(
            f"  {label:<30} {bytes_text(c.before):>22} -> {bytes_text(c.after):<22}"
            f"{_delta('bytes', c.delta)}"
        )
    for kind, c in sorted(s.by_kind.items(), key=lambda kv: -abs(kv[1].delta or 0)):
        if c.delta:
            lines.append(
                f"    {kind:<28} {bytes_text(c.before):>22} -> "
                f"{bytes_text(c.after):<22}{_delta('bytes', c.delta)}"
            )
    return lines


def text_diff_report(diff: ProgramDiff) -> str:
    lines = [f"diff {diff.before} -> {diff.after}"]
    measured = measured_lines(diff.measured)
    for m in diff.methods:
        lines.append("")
        lines += _method_lines(m)
        lines += measured.get(m.name, [])
    if measured.get(""):
        lines += ["", *measured[""]]
    lines.append("")
    lines += _size_lines(diff)
    lines.append("")
    if diff.regressions:
        lines.append("regressions:")
        lines += [f"  {regression_text(r)}" for r in diff.regressions]
    else:
        lines.append(
            "no regression (partitions, CPU islands, CPU compute calls, crossing bytes "
            "did not grow)"
        )
    return "\n".join(lines)
