"""The headless report: a per-method partition table for people, stable JSON for tools."""

from __future__ import annotations

import json
from typing import Any

from pte_adapter.render.facts import counts_text, human_bytes


def _tensors(n: int) -> str:
    return f"{n} tensor" if n == 1 else f"{n} tensors"


def _stat_text(stats: dict[str, Any]) -> str:
    keys = ("npu_ops", "cmd_bytes", "weight_bytes", "scratch_bytes", "nodes", "constant_bytes")
    parts = []
    for k in keys:
        if k in stats:
            v = stats[k]
            parts.append(f"{k}={human_bytes(int(v)) if k.endswith('bytes') else v}")
    if "npu_est_us" in stats:
        parts.append(f"est {stats['npu_est_us']} us, busiest {stats.get('npu_est_busiest')}")
    return ", ".join(parts)


def _first(items: list[str], n: int = 6) -> str:
    return ", ".join(items[:n]) + (f" … (+{len(items) - n} more)" if len(items) > n else "")


def _source_lines(p: dict[str, Any]) -> list[str]:
    """The ETRecord's layers and the partitioner rules' reasons under a partition's row."""
    lines = []
    if p.get("modules"):
        lines.append(f"         modules  {_first(p['modules'])}")
    if p.get("causes"):
        lines.append(f"         cause    {_first(p['causes'], 4)}")
    for reason in p.get("why", []):
        lines.append(f"         why      {reason}")
    return lines


def _npu_estimate_lines(est: dict[str, Any]) -> list[str]:
    lines = [
        f"  NPU estimate         {est['time_us']} us ({est['cycles']} cycles, {est['macs']} MACs) "
        f"over {est['partitions']} partition(s), busiest {est['busiest']}; {est['target']}"
    ]
    frag = est.get("fragmentation")
    if frag:
        share = frag["share_of_npu_time"]
        lines.append(
            f"  boundary cost (est.) {frag['time_us']} us"
            + (f" ({share:.1%} of NPU time)" if share is not None else "")
            + f": {human_bytes(frag['boundary_bytes'])} across boundaries via "
            f"{frag['boundary_memory']}, {frag['invocations']} invocation(s); CPU islands not timed"
        )
        if frag.get("transpose_cycles_in_partitions"):
            lines.append(
                f"  layout transposes    {frag['transpose_cycles_in_partitions']} cycles inside the "
                "partitions (NCHW/NHWC changes the Ethos-U55 runs as pooling; see estimate notes)"
            )
    if est.get("not_covered_ops"):
        lines.append(f"  not estimated        {est['not_covered_ops']} NPU operation(s)")
    return lines


def text_report(summary: dict[str, Any]) -> str:
    lines: list[str] = []
    lines.append(
        f"{summary.get('file') or 'program'}: {human_bytes(summary.get('file_size'))}, "
        f"{len(summary['methods'])} method(s)"
    )
    if summary.get("etrecord"):
        lines.append(f"source layers from {summary['etrecord']}")
    for m in summary["methods"]:
        lines.append("")
        calls = counts_text(m["delegate_calls"]) or "none"
        lines.append(f"method {m['name']}: {m['instructions']} instructions")
        lines.append(f"  delegate partitions  {m['delegate_partitions']}  ({calls})")
        lines.append(f"  CPU islands          {m['cpu_islands']}")
        lines.append(
            f"  CPU kernel calls     {m['cpu_kernel_calls']}  "
            f"({m['cpu_compute_calls']} compute, {m['cpu_glue_calls']} glue)"
        )
        if m["cpu_compute_ops"]:
            lines.append(f"  CPU compute ops      {counts_text(m['cpu_compute_ops'])}")
        crossings = ", ".join(
            f"{d} {_tensors(n)} / {human_bytes(m['crossing_bytes'].get(d, 0))}"
            for d, n in m["crossings"].items()
        )
        lines.append(f"  boundary crossings   {crossings or 'none'}")
        handoffs = ", ".join(
            f"{d} {_tensors(n)} / {human_bytes(m['handoff_bytes'].get(d, 0))}"
            for d, n in m["handoffs"].items()
        )
        if handoffs:
            lines.append(f"  delegate handoffs    {handoffs}")
        share = m["delegated_share_by_inner_ops"]
        lines.append(
            f"  inside delegates     {m['delegated_share_by_instructions']:.1%} of calls"
            + (f", {share:.1%} of operations" if share is not None else "")
        )
        if m.get("npu_estimate"):
            lines += _npu_estimate_lines(m["npu_estimate"])
        lines.append("  partitions:")
        for p in m["partitions"]:
            first, last = (p["instructions"] + [None, None])[:2]
            span = f"#{first}" if first == last else f"#{first}-{last}"
            if p["backend"] == "CPU":
                detail = counts_text({**p["compute_ops"], **p["glue_ops"], **p["control"]})
            else:
                inner = p["inner_ops"]
                detail = f"{inner} inner ops" if inner is not None else "not decoded"
                stats = _stat_text(p["delegate_stats"])
                if stats:
                    detail += f"; {stats}"
            lines.append(
                f"    {p['index']:>3}  {p['name']:<38} {span:<10} "
                f"in {human_bytes(p['bytes_in']):<22} out {human_bytes(p['bytes_out']):<22}"
                f" {detail}".rstrip()
            )
            lines += _source_lines(p)
            notes = p.get("delegate_stats", {}).get("estimate_notes")
            if notes:  # the estimate where Vela's own prices the stream another way
                lines.append(f"         estimate {notes}")
            for problem in p["problems"]:
                lines.append(f"         problem: {problem}")
        for problem in m["problems"]:
            lines.append(f"  problem: {problem}")
    for problem in summary.get("problems", []):
        lines.append(f"problem: {problem}")
    return "\n".join(lines)


def json_report(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False, sort_keys=False)


def vela_text(rows: list[dict[str, Any]]) -> str:
    """`pte-adapter vela`: one line per Ethos-U partition, our estimate next to Vela's."""
    lines = [
        f"{'method':<10} {'delegate':>8} {'ours cycles':>12} {'Vela cycles':>12} "
        f"{'deviation':>9}  sidecar"
    ]
    for r in rows:
        dev = r.get("deviation")
        lines.append(
            f"{r['method']:<10} {r['delegate']:>8} {r.get('ours_cycles') or '-':>12} "
            f"{r.get('vela_cycles') or '-':>12} {f'{dev:+.1%}' if dev is not None else '-':>9}  "
            f"{r.get('sidecar', '')}"
            + ("" if r.get("identical_stream") in (True, None) else " (Vela's stream differs)")
            + (f"  {r['error']}" if r.get("error") else "")
        )
    return "\n".join(lines)
