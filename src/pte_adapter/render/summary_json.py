"""The stable JSON of `pte-adapter summary --json` (and `pte_adapter.summarize`), from the analysis.

Keys are documented in docs/json.md; new keys may be added, existing ones keep their meaning.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pte_adapter.analysis.npu_estimate import MethodEstimate
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.summary import MethodSummary, PartitionSummary
from pte_adapter.render.bundle_facts import bundle_json
from pte_adapter.render.constant_facts import constant_json
from pte_adapter.render.fit_report import fit_json, fit_skipped_json
from pte_adapter.render.ops_report import needs_json
from pte_adapter.render.what_if_facts import what_if_json


def estimate_json(est: MethodEstimate) -> dict[str, Any]:
    t = est.target
    frag = asdict(est.fragmentation)
    frag["assumptions"] = list(est.fragmentation.assumptions)
    return {
        "partitions": est.partitions,
        "cycles": est.cycles,
        "time_us": est.time_us,
        "per_partition_us": {str(i): us for i, us in est.per_partition_us.items()},
        "macs": est.macs,
        "busy_cycles": dict(est.busy_cycles),
        "busiest": est.busiest,
        "not_covered_ops": est.not_covered_ops,
        "target": f"{t.accelerator} {t.system_config} {t.memory_mode}",
        "assumptions": list(est.assumptions),
        "fragmentation": frag,
    }


def partition_json(p: PartitionSummary) -> dict[str, Any]:
    return asdict(p)


def method_json(s: MethodSummary) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": s.name,
        "instructions": s.instructions,
        "delegate_calls": dict(s.delegate_calls),
        "delegate_partitions": s.delegate_partitions,
        "cpu_islands": s.cpu_islands,
        "cpu_kernel_calls": s.cpu_kernel_calls,
        "cpu_compute_calls": s.cpu_compute_calls,
        "cpu_glue_calls": s.cpu_glue_calls,
        "cpu_compute_ops": dict(s.cpu_compute_ops),
        "cpu_glue_ops": dict(s.cpu_glue_ops),
        "crossings": dict(s.crossings),
        "crossing_bytes": dict(s.crossing_bytes),
        "handoffs": dict(s.handoffs),
        "handoff_bytes": dict(s.handoff_bytes),
        "delegated_share_by_instructions": s.delegated_share_by_instructions,
        "delegated_share_by_inner_ops": s.delegated_share_by_inner_ops,
        "partitions": [partition_json(p) for p in s.partitions],
        "problems": list(s.problems),
        "npu_estimate": estimate_json(s.npu_estimate) if s.npu_estimate else None,
        "why": [
            {
                "instruction": r.instruction,
                "operator": r.operator,
                "backend": r.backend,
                "kind": r.kind,
                "reason": r.text,
                "by": r.by,
                "layer_operator": r.layer_operator or None,
            }
            for r in s.why
        ],
        "sources": [
            {
                "instruction": src.index,
                "modules": [m.text for m in src.modules],
                "source_line": src.source_line,
            }
            for src in s.sources
        ],
        "peak_live_bytes": s.peak_live_bytes,
        "live_at_peak": [
            {
                "value": t.value,
                "bytes": t.nbytes,
                "arena": t.arena,
                "offset": t.offset,
                "first": t.first,
                "last": t.last,
                "producer": t.producer,
                "kind": t.kind,
            }
            for t in s.live_at_peak
        ],
        "peak_scratch_bytes": s.peak_scratch_bytes,
    }
    return out


def _numerics(m: MethodAnalysis) -> dict[str, Any] | None:
    """The method's numeric gap (`render/numerics_json.py`, imported only when there is one)."""
    if m.numerics is None:
        return None
    from pte_adapter.render.numerics_json import method_numerics_json

    return method_numerics_json(m.numerics)


def summary_json(result: ProgramAnalysis) -> dict[str, Any]:
    """Per-method partition numbers as plain data (JSON-ready)."""
    program = result.program
    return {
        "file": program.path.name if program.path else None,
        "file_size": program.file_size,
        "etrecord": result.source.etrecord if result.source else None,
        "bundle": bundle_json(result.bundle),
        "methods": [
            {
                **method_json(m.summary),
                "what_if": what_if_json(m.what_if),
                "numerics": _numerics(m),
            }
            for m in result.methods
        ],
        "constant_methods": {k: constant_json(v) for k, v in result.constant_methods.items()},
        "problems": list(result.problems),
        "fit": fit_json(result.deployment)
        if result.deployment is not None
        else fit_skipped_json(result.deployment_skipped),
        "needs": needs_json(result.needs),
    }
