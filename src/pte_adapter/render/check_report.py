"""`pte-adapter check` in words: one line per method checked, one `FAIL` line per limit exceeded
(then each CPU op's layer and reason), and a note for a `--backend` the program does not use."""

from __future__ import annotations

from pte_adapter.analysis.check import CheckResult, MethodCheck
from pte_adapter.analysis.summary import MethodSummary


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _partitions_label(m: MethodCheck, backend: str | None) -> str:
    if backend:
        return f"{backend} partitions" if m.partitions != 1 else f"{backend} partition"
    return "delegate partitions" if m.partitions != 1 else "delegate partition"


def notes(result: CheckResult) -> list[str]:
    if result.unused_backend is None:
        return []
    return [
        f"the program has no {result.limits.backend} partitions (delegates it uses: "
        + (", ".join(result.unused_backend) or "none")
        + ")"
    ]


def report_lines(result: CheckResult) -> list[str]:
    """One line per method checked: its numbers."""
    return [
        f"{m.summary.name}: {m.partitions} {_partitions_label(m, result.limits.backend)}, "
        f"{_plural(m.compute, 'CPU compute op')}, {_plural(m.islands, 'CPU island')}"
        + (
            f"; latency {_drift_change(m)} over the runs"
            if result.limits.max_drift is not None
            else ""
        )
        for m in result.methods
    ]


def _drift_change(m: MethodCheck) -> str:
    d = m.drift
    if d is None:
        return "not measured (the ETDump has no run of this method)"
    if d["change_pct"] is None:
        return f"not measured ({d['text']})"
    return f"changed {d['change_pct']:+.1f} %"


def _drift_failure(m: MethodCheck, limit: float) -> str:
    d = m.drift
    if d is None or d["change_pct"] is None:
        return f"latency drift {_drift_change(m)}: cannot be checked against {limit:g} %"
    return f"latency changed {d['change_pct']:+.1f} % over the runs > {limit:g} %: {d['text']}"


def failure_lines(result: CheckResult) -> list[str]:
    """`FAIL <method>: ...` per limit exceeded, then the layer and reason of each CPU op."""
    lim = result.limits
    lines: list[str] = []
    for m in result.methods:
        name, label = m.summary.name, _partitions_label(m, lim.backend)
        texts = {
            "max_partitions": f"{m.partitions} {label} > {lim.max_partitions}",
            "min_partitions": f"{m.partitions} {label} < {lim.min_partitions}",
            "max_cpu_ops": f"{_plural(m.compute, 'CPU compute op')} > {lim.max_cpu_ops} ("
            + ", ".join(f"{k} ×{n}" for k, n in m.summary.cpu_compute_ops.items())
            + ")",
            "max_cpu_islands": f"{_plural(m.islands, 'CPU island')} > {lim.max_cpu_islands}",
            "max_fixable_islands": f"{_plural(len(m.fixable), 'fixable CPU island')} > "
            f"{lim.max_fixable_islands}",
        }
        if "max_drift" in m.failed and lim.max_drift is not None:
            texts["max_drift"] = _drift_failure(m, lim.max_drift)
        lines.extend(f"FAIL {name}: {texts[f]}" for f in m.failed)
        if "max_fixable_islands" in m.failed:
            lines.extend(f"  fix {text}" for text in m.fixable)
        if m.too_many:
            lines.extend(why_lines(m.summary))
    return lines


def why_lines(m: MethodSummary) -> list[str]:
    """`  why aten::avg_pool3d.out in features.4 (LocalResponseNorm): <reason>` per CPU compute
    op (the layer from the ETRecord when there is one; the reason from the partitioner rules)."""
    modules = {s.index: [mod.text for mod in s.modules] for s in m.sources}
    lines: list[str] = []
    for r in m.why:
        where = ", ".join(modules.get(r.instruction, []))
        line = f"  why {r.operator}" + (f" in {where}" if where else "") + f": {r.text}"
        if line not in lines:
            lines.append(line)
    return lines
