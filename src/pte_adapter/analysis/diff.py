"""Compare two programs: "did the fix work?" per method, as plain data for `pte-adapter diff`.

Methods are paired by name, partitions by role (`roles.py`): the island before the first NPU
partition in one export is the island before the first NPU partition in the other, whatever the
instruction indices. Numbers come from the same analysis as `summary` (partitions, crossings,
decoded delegate stats) and `size` (the byte breakdown), so a diff never disagrees with them.

A *regression* is growth in something that costs at run time on the CPU or across boundaries:
delegate partitions, CPU islands, CPU compute kernel calls, or bytes crossing a delegate/CPU
boundary. `--fail-on-regression` exits 1 naming each.
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher
from typing import Any

from pte_adapter.analysis.partitions import partition_method
from pte_adapter.analysis.roles import partition_roles
from pte_adapter.analysis.size import SizeReport, size_report
from pte_adapter.analysis.summary import MethodSummary, PartitionSummary, method_summary
from pte_adapter.program.model import Method, Program

# Method numbers compared, in display order: key -> label.
METRICS: dict[str, str] = {
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
REGRESSION_KEYS = ("delegate_partitions", "cpu_islands", "cpu_compute_calls", "crossing_bytes")

# Leaf kinds of the size breakdown that are constant data (weights, biases, scales, tables).
CONSTANT_KINDS = frozenset(
    {
        "constant_tensor",
        "mutable_tensor",
        "named_data",
        "npu_weights",
        "npu_scales",
        "npu_constant_feature_map",
        "npu_dma_other",
        "xnnpack_constant",
        "tosa_constant",
        "vgf_constant",
        "spirv_constant",
    }
)


def _change(before: Any, after: Any) -> dict[str, Any]:
    delta = after - before if isinstance(before, int) and isinstance(after, int) else None
    return {"before": before, "after": after, "delta": delta}


def _stat_sum(s: MethodSummary, key: str) -> int | None:
    values = [p.delegate_stats.get(key) for p in s.partitions if p.backend != "CPU"]
    nums = [int(v) for v in values if isinstance(v, (int, float))]
    return sum(nums) if nums else None


def method_numbers(s: MethodSummary) -> dict[str, int | None]:
    inner = [p.inner_ops for p in s.partitions if p.backend != "CPU"]
    return {
        "instructions": s.instructions,
        "delegate_partitions": s.delegate_partitions,
        "cpu_islands": s.cpu_islands,
        "cpu_kernel_calls": s.cpu_kernel_calls,
        "cpu_compute_calls": s.cpu_compute_calls,
        "cpu_glue_calls": s.cpu_glue_calls,
        "crossing_tensors": sum(s.crossings.values()),
        "crossing_bytes": sum(s.crossing_bytes.values()),
        "handoff_tensors": sum(s.handoffs.values()),
        "handoff_bytes": sum(s.handoff_bytes.values()),
        "delegate_inner_ops": None if any(i is None for i in inner) else sum(i or 0 for i in inner),
        "npu_ops": _stat_sum(s, "npu_ops"),
        "cmd_bytes": _stat_sum(s, "cmd_bytes"),
        "weight_bytes": _stat_sum(s, "weight_bytes"),
        "scratch_bytes": _stat_sum(s, "scratch_bytes"),
    }


def _counter_diff(before: dict[str, int], after: dict[str, int]) -> tuple[dict[str, int], ...]:
    b, a = Counter(before), Counter(after)
    return dict(sorted((a - b).items())), dict(sorted((b - a).items()))


def _partition_view(p: PartitionSummary) -> dict[str, Any]:
    keys = (
        "npu_ops",
        "cmd_bytes",
        "weight_bytes",
        "scratch_bytes",
        "xnn_nodes",
        "tosa_ops",
        "constant_bytes",
        "tosa_constant_bytes",
    )
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
        "stats": {k: p.delegate_stats[k] for k in keys if k in p.delegate_stats},
    }


def _summarise(method: Method | None) -> tuple[MethodSummary | None, list[str]]:
    if method is None:
        return None, []
    parts = partition_method(method)
    return method_summary(method, parts), partition_roles(parts)


def _pair_partitions(
    sb: MethodSummary | None, rb: list[str], sa: MethodSummary | None, ra: list[str]
) -> list[dict[str, Any]]:
    """Partitions of both sides in execution order, paired by role."""
    before = sb.partitions if sb else []
    after = sa.partitions if sa else []
    out: list[dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=rb, b=ra, autojunk=False).get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out.append(
                    {
                        "role": rb[i],
                        "status": "same role",
                        "before": _partition_view(before[i]),
                        "after": _partition_view(after[j]),
                    }
                )
            continue
        for i in range(i1, i2):
            out.append(
                {
                    "role": rb[i],
                    "status": "removed",
                    "before": _partition_view(before[i]),
                    "after": None,
                }
            )
        for j in range(j1, j2):
            out.append(
                {
                    "role": ra[j],
                    "status": "added",
                    "before": None,
                    "after": _partition_view(after[j]),
                }
            )
    return out


def _by_key(before: dict[str, int], after: dict[str, int]) -> dict[str, dict[str, Any]]:
    return {k: _change(before.get(k, 0), after.get(k, 0)) for k in sorted({*before, *after})}


def diff_method(name: str, mb: Method | None, ma: Method | None) -> dict[str, Any]:
    sb, rb = _summarise(mb)
    sa, ra = _summarise(ma)
    nb = method_numbers(sb) if sb else {}
    na = method_numbers(sa) if sa else {}
    status = "both" if sb and sa else ("removed" if sb else "added")
    added, removed = _counter_diff(
        sb.cpu_compute_ops if sb else {}, sa.cpu_compute_ops if sa else {}
    )
    glue_added, glue_removed = _counter_diff(
        sb.cpu_glue_ops if sb else {}, sa.cpu_glue_ops if sa else {}
    )
    crossings = {
        d: {
            "before": [
                sb.crossings.get(d, 0) if sb else 0,
                sb.crossing_bytes.get(d, 0) if sb else 0,
            ],
            "after": [
                sa.crossings.get(d, 0) if sa else 0,
                sa.crossing_bytes.get(d, 0) if sa else 0,
            ],
        }
        for d in sorted({*(sb.crossings if sb else {}), *(sa.crossings if sa else {})})
    }
    handoffs = {
        d: {
            "before": [sb.handoffs.get(d, 0) if sb else 0, sb.handoff_bytes.get(d, 0) if sb else 0],
            "after": [sa.handoffs.get(d, 0) if sa else 0, sa.handoff_bytes.get(d, 0) if sa else 0],
        }
        for d in sorted({*(sb.handoffs if sb else {}), *(sa.handoffs if sa else {})})
    }
    return {
        "name": name,
        "status": status,
        "numbers": {k: _change(nb.get(k), na.get(k)) for k in METRICS},
        "delegate_calls": _by_key(sb.delegate_calls if sb else {}, sa.delegate_calls if sa else {}),
        "cpu_compute_ops_added": added,
        "cpu_compute_ops_removed": removed,
        "cpu_glue_ops_added": glue_added,
        "cpu_glue_ops_removed": glue_removed,
        "crossings": crossings,
        "handoffs": handoffs,
        "partitions": _pair_partitions(sb, rb, sa, ra),
    }


def _size_section(before: SizeReport, after: SizeReport) -> dict[str, Any]:
    tb, ta = before.totals(), after.totals()

    def constant(t: dict[str, int]) -> int:
        return sum(v for k, v in t.items() if k in CONSTANT_KINDS)

    ext_b = sum(e.referenced_bytes for e in before.external)
    ext_a = sum(e.referenced_bytes for e in after.external)
    return {
        "file_size": _change(before.file_size, after.file_size),
        "constant_bytes": _change(constant(tb), constant(ta)),
        "external_bytes": _change(ext_b, ext_a),
        "by_kind": _by_key(tb, ta),
    }


def regressions(methods: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in methods:
        if m["status"] != "both":
            continue
        for key in REGRESSION_KEYS:
            c = m["numbers"][key]
            if c["delta"] is not None and c["delta"] > 0:
                out.append(f"{m['name']}: {METRICS[key]} grew {c['before']} -> {c['after']}")
    return out


def diff_programs(before: Program, after: Program) -> dict[str, Any]:
    """Everything `pte-adapter diff` reports, JSON-ready."""
    names = list(dict.fromkeys([m.name for m in before.methods] + [m.name for m in after.methods]))
    by_b = {m.name: m for m in before.methods}
    by_a = {m.name: m for m in after.methods}
    methods = [diff_method(n, by_b.get(n), by_a.get(n)) for n in names]
    size_b, size_a = size_report(before), size_report(after)
    return {
        "before": size_b.file,
        "after": size_a.file,
        "methods": methods,
        "size": _size_section(size_b, size_a),
        "delegates_size": {"before": size_b.delegate_totals(), "after": size_a.delegate_totals()},
        "regressions": regressions(methods),
        "notes": [
            "CPU compute operators are listed by operator name; their source modules need "
            "ETRecords, which this version does not read.",
        ],
    }
