"""The deployment memory map as text (`pte-adapter fit`) and as JSON (`fit --json`, and the `fit`
key of `summary --json`): every size an integer number of bytes."""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.boards import BOARD_REGION_NAMES, FitResult
from pte_adapter.analysis.deployment import REGION_NAMES, DeploymentMap
from pte_adapter.wording import bytes_text


def fit_skipped_json(why: str) -> dict[str, Any]:
    """`fit` of a program that gets no memory map of its own (a phone or desktop backend's)."""
    return {"skipped": why}


def fit_json(dmap: DeploymentMap, checked: FitResult | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "runner": dmap.runner.title,
        "method": dmap.method,
        "regions": dmap.region_bytes(),
        "regions_exact": dmap.region_bytes(exact_only=True),
        "items": [
            {
                "key": i.key,
                "what": i.what,
                "bytes": i.bytes,
                "region": i.region,
                "exact": i.exact,
                "source": i.source,
                "why_here": i.why_here,
                "pool": i.pool or None,
                "parts": [
                    {"key": p.key, "what": p.what, "bytes": p.bytes, "exact": p.exact}
                    for p in i.parts
                ],
            }
            for i in dmap.items
        ],
        "pools": [
            {
                "option": p.option,
                "what": p.what,
                "region": p.region,
                "exact_bytes": p.exact_bytes,
                "estimated_bytes": p.estimated_bytes,
                "suggested_bytes": p.suggested_bytes,
                "note": p.note,
            }
            for p in dmap.pools
        ],
        "npu_partitions": [
            {
                "method": p.method,
                "partition": p.partition,
                "delegate": p.delegate,
                "accelerator": p.memory.accelerator,
                "system_config": p.memory.system_config,
                "memory_mode": p.memory.memory_mode,
                "command_bytes": p.memory.command_bytes,
                "weight_bytes": p.memory.weight_bytes,
                "weights_in": p.memory.weights_source or None,
                "scratch_bytes": p.memory.scratch_bytes,
                "fast_scratch_bytes": p.memory.fast_scratch_bytes,
                "arena_cache_size": p.memory.arena_cache_size,
                "compiler": p.memory.compiler or None,
                "compiler_summary": dict(p.memory.compiler_summary),
                "assumed": list(p.memory.assumed),
            }
            for p in dmap.partitions
        ],
        "problems": list(dmap.problems),
    }
    if checked is not None:
        out["board"] = {
            "name": checked.board.name,
            "source": checked.board.source,
            "fits": checked.ok,
            "regions": [
                {
                    "region": r.region,
                    "capacity": r.capacity,
                    "used": r.used,
                    "estimated": r.estimated,
                    "overflow": r.overflow,
                    "items": [{"key": k, "bytes": n} for k, _, n in r.items],
                }
                for r in checked.regions
            ],
            "overflows": checked.overflows(),
        }
    return out


def fit_text(dmap: DeploymentMap, checked: FitResult | None = None) -> list[str]:
    runner = dmap.runner
    lines = [
        f"method {runner.name} loads (the first): {dmap.method or '(none)'}",
        "",
        "memory map:",
    ]
    for region, total in dmap.region_bytes().items():
        lines.append(f"  {REGION_NAMES[region]}: {bytes_text(total)}")
        for i in (i for i in dmap.items if i.region == region):
            how = "exact" if i.exact else "ESTIMATE"
            lines.append(f"    {i.what}: {i.bytes} bytes [{how}: {i.source}]")
            lines += [f"      of which {p.what}: {p.bytes} bytes" for p in i.parts if p.bytes]
    lines += ["", f"pool sizes for {runner.title} (cmake -D...):"]
    for p in dmap.pools:
        est = f" + {p.estimated_bytes} estimated" if p.estimated_bytes else ""
        lines.append(
            f"  {p.option}={p.suggested_bytes}  ({p.what}: {p.exact_bytes} exact{est}; {p.note})"
        )
    compilers = ", ".join(dict.fromkeys(q.memory.compiler for q in dmap.partitions))
    if dmap.partitions:
        lines += ["", f"per NPU partition (as {compilers or 'its compiler'}'s summary reports it):"]
    for q in dmap.partitions:
        figures = ", ".join(f"{k} {v}" for k, v in q.memory.compiler_summary.items() if v)
        lines.append(
            f"  {q.method} partition {q.partition} ({q.memory.accelerator} {q.memory.system_config}"
            f" {q.memory.memory_mode}): {figures or 'nothing'}"
            + (f" (assumed: {'; '.join(q.memory.assumed)})" if q.memory.assumed else "")
        )
    lines += [f"problem: {p}" for p in dmap.problems]
    if checked is not None:
        lines += ["", f"on {checked.board.name} ({checked.board.source}):"]
        for r in checked.regions:
            est = f" (+{r.estimated} estimated)" if r.estimated else ""
            lines.append(
                f"  {BOARD_REGION_NAMES[r.region]}: {r.used}{est} of {r.capacity} bytes"
                + (f"  OVERFLOW by {r.overflow}" if r.overflow else "")
            )
    return lines
