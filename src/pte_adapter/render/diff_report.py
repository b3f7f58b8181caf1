"""`pte-adapter diff` as text: per method, what changed and in which direction."""

from __future__ import annotations

import json
from typing import Any

from pte_adapter.analysis.diff import METRICS
from pte_adapter.render.facts import counts_text, human_bytes


def _num(key: str, v: Any) -> str:
    if v is None:
        return "-"
    return human_bytes(int(v)) if key.endswith("bytes") else str(v)


def _delta(key: str, d: int | None) -> str:
    if not d:
        return ""
    sign = "+" if d > 0 else "-"
    return f"  ({sign}{_num(key, abs(d))})"


def _partition_text(p: dict[str, Any] | None) -> str:
    if p is None:
        return "-"
    if p["backend"] == "CPU":
        body = counts_text({**p["compute_ops"], **p["glue_ops"]}) or "no kernel calls"
    else:
        stats = p["stats"]
        body = f"{p['inner_ops']} inner ops" if p["inner_ops"] is not None else "not decoded"
        if "weight_bytes" in stats:
            body += f", weights {human_bytes(int(stats['weight_bytes']))}"
    return f"{p['name']}: {body}"


def _pairs(name: str, rows: dict[str, dict[str, Any]], lines: list[str]) -> None:
    if not rows:
        return
    lines.append(f"  {name}:")
    for direction, c in rows.items():
        (nb, bb), (na, ba) = c["before"], c["after"]
        lines.append(
            f"    {direction:<34} {nb} tensors / {human_bytes(bb)}  ->  "
            f"{na} tensors / {human_bytes(ba)}"
        )


def text_diff_report(diff: dict[str, Any]) -> str:
    lines = [f"diff {diff['before']} -> {diff['after']}"]
    for m in diff["methods"]:
        lines.append("")
        if m["status"] != "both":
            lines.append(
                f"method {m['name']}: only in the {'first' if m['status'] == 'removed' else 'second'} file"
            )
            continue
        lines.append(f"method {m['name']}:")
        for key, label in METRICS.items():
            c = m["numbers"][key]
            if c["before"] is None and c["after"] is None:
                continue
            lines.append(
                f"  {label:<30} {_num(key, c['before']):>22} -> "
                f"{_num(key, c['after']):<22}{_delta(key, c['delta'])}"
            )
        calls = ", ".join(
            f"{b} {c['before']} -> {c['after']}" for b, c in m["delegate_calls"].items()
        )
        if calls:
            lines.append(f"  partitions by backend          {calls}")
        if m["cpu_compute_ops_removed"]:
            lines.append(
                f"  CPU compute ops removed        {counts_text(m['cpu_compute_ops_removed'])}"
            )
        if m["cpu_compute_ops_added"]:
            lines.append(
                f"  CPU compute ops added          {counts_text(m['cpu_compute_ops_added'])}"
            )
        if m["cpu_glue_ops_removed"]:
            lines.append(
                f"  CPU glue ops removed           {counts_text(m['cpu_glue_ops_removed'])}"
            )
        if m["cpu_glue_ops_added"]:
            lines.append(f"  CPU glue ops added             {counts_text(m['cpu_glue_ops_added'])}")
        _pairs("boundary crossings", m["crossings"], lines)
        _pairs("delegate handoffs", m["handoffs"], lines)
        lines.append("  partitions (paired by role):")
        marks = {"same role": "=", "removed": "-", "added": "+"}
        for p in m["partitions"]:
            lines.append(
                f"    {marks[p['status']]} {p['role']:<28} {_partition_text(p['before']):<60} | "
                f"{_partition_text(p['after'])}"
            )
    s = diff["size"]
    lines.append("")
    lines.append("size:")
    for key, label in (
        ("file_size", "file"),
        ("constant_bytes", "constant data"),
        ("external_bytes", "external .ptd data"),
    ):
        c = s[key]
        lines.append(
            f"  {label:<30} {human_bytes(c['before']):>22} -> {human_bytes(c['after']):<22}"
            f"{_delta('bytes', c['delta'])}"
        )
    for kind, c in sorted(s["by_kind"].items(), key=lambda kv: -abs(kv[1]["delta"] or 0)):
        if c["delta"]:
            lines.append(
                f"    {kind:<28} {human_bytes(c['before']):>22} -> "
                f"{human_bytes(c['after']):<22}{_delta('bytes', c['delta'])}"
            )
    lines.append("")
    if diff["regressions"]:
        lines.append("regressions:")
        lines += [f"  {r}" for r in diff["regressions"]]
    else:
        lines.append(
            "no regression (partitions, CPU islands, CPU compute calls, crossing bytes "
            "did not grow)"
        )
    return "\n".join(lines)


def json_diff_report(diff: dict[str, Any]) -> str:
    return json.dumps(diff, indent=2, ensure_ascii=False)
