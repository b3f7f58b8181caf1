"""What `pte-adapter summary` prints for people: a per-method partition table (`text_report`); with
`--json`, `summary_json.py`'s numbers as JSON text (`json_report`). Also `pte-adapter vela`'s
table (`vela_text`).

The text leads with what a person reads first (the partitions, the islands, what a fix would buy,
then the estimate and memory), says a problem that several partitions share once per method, and
keeps the per-partition estimate detail for `--verbose`; the JSON keeps everything."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pte_adapter.analysis.npu_estimate import MethodEstimate
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.summary import MethodSummary, PartitionSummary
from pte_adapter.analysis.what_if import MethodWhatIf
from pte_adapter.backends import CPU
from pte_adapter.render.bundle_facts import bundle_method_lines, bundle_text
from pte_adapter.render.constant_facts import constant_text
from pte_adapter.render.facts import crossings_text, estimate_target_text, number_text
from pte_adapter.render.memory_facts import peak_text
from pte_adapter.render.needs_facts import needs_line
from pte_adapter.render.what_if_facts import outcome_text, scenario_lines, summarised_text
from pte_adapter.wording import bytes_text, counts_text, cycles_text, macs_text, us_text


def _stat_text(stats: dict[str, Any]) -> str:
    keys = ("npu_ops", "cmd_bytes", "weight_bytes", "scratch_bytes", "nodes", "constant_bytes")
    parts = []
    for k in keys:
        if k in stats:
            v = stats[k]
            parts.append(f"{k}={number_text(k, v)}")
    if "npu_est_us" in stats:
        parts.append(f"est {us_text(stats['npu_est_us'])}, busiest {stats.get('npu_est_busiest')}")
    return ", ".join(parts)


def _first(items: list[str], n: int = 6) -> str:
    return ", ".join(items[:n]) + (f" … (+{len(items) - n} more)" if len(items) > n else "")


def _source_lines(p: PartitionSummary, verbose: bool = False) -> list[str]:
    """The ETRecord's layers and the partitioner rules' reasons under a partition's row (with
    `verbose`, the estimate's notes too)."""
    lines = []
    if p.modules:
        lines.append(f"         modules  {_first(p.modules)}")
    if p.causes:
        lines.append(f"         cause    {_first(p.causes, 4)}")
    for reason in p.why:
        lines.append(f"         why      {reason}")
    notes = p.delegate_stats.get("estimate_notes")
    if notes and verbose:  # the estimate, where Vela's own prices the stream another way
        lines.append(f"         estimate {notes}")
    return lines


def _npu_estimate_lines(est: MethodEstimate) -> list[str]:
    lines = [
        f"  NPU estimate         {us_text(est.time_us)} ({cycles_text(est.cycles)}, {macs_text(est.macs)}) "
        f"over {est.partitions} partition(s), busiest {est.busiest}; "
        f"{estimate_target_text(est.target)}"
    ]
    frag = est.fragmentation
    share = frag.share_of_npu_time
    lines.append(
        f"  boundary cost (est.) {us_text(frag.time_us)}"
        + (f" ({share:.1%} of NPU time)" if share is not None else "")
        + f": {bytes_text(frag.boundary_bytes)} across boundaries via "
        f"{frag.boundary_memory}, {frag.invocations} invocation(s); CPU islands not timed"
    )
    if frag.transpose_cycles_in_partitions:
        lines.append(
            f"  layout transposes    {cycles_text(frag.transpose_cycles_in_partitions)} inside the "
            "partitions (NCHW/NHWC changes the Ethos-U55 runs as pooling; the estimate notes: "
            "--verbose)"
        )
    if est.not_covered_ops:
        lines.append(f"  not estimated        {est.not_covered_ops} NPU operation(s)")
    return lines


def _partition_line(p: PartitionSummary) -> str:
    first, last = ([*p.instructions, None, None])[:2]
    span = f"#{first}" if first == last else f"#{first}-{last}"
    if p.backend == CPU:
        detail = counts_text({**p.compute_ops, **p.glue_ops, **p.control})
    else:
        detail = f"{p.inner_ops} inner ops" if p.inner_ops is not None else "not decoded"
        stats = _stat_text(p.delegate_stats)
        if stats:
            detail += f"; {stats}"
    return (
        f"    {p.index:>3}  {p.name:<38} {span:<10} "
        f"in {bytes_text(p.bytes_in):<22} out {bytes_text(p.bytes_out):<22}"
        f" {detail}".rstrip()
    )


def _memory_lines(ma: MethodAnalysis) -> list[str]:
    """The memory picture: the peak of planned arena bytes and the largest NPU scratch."""
    m = ma.memory
    if not m.tensors:
        return []
    lines = [f"  memory peak          {peak_text(ma)}"]
    if m.scratch:
        lines.append(
            f"  NPU scratch          {bytes_text(m.peak_scratch_bytes)} at most "
            f"(largest of {len(m.scratch)} partition(s)), in the {m.scratch[0].home}, beside "
            "the arenas"
        )
    return lines


def _shared_problems(m: MethodSummary) -> dict[str, list[int]]:
    """Each problem two or more partitions have word for word -> those partitions' rows."""
    counts = Counter(problem for p in m.partitions for problem in dict.fromkeys(p.problems))
    shared: dict[str, list[int]] = {}
    for p in m.partitions:
        for problem in dict.fromkeys(p.problems):
            if counts[problem] > 1:
                shared.setdefault(problem, []).append(p.index)
    return shared


def _shared_problem_line(m: MethodSummary, problem: str, rows: list[int]) -> str:
    where = (
        f"all {len(rows)} delegate partitions"
        if len(rows) == m.delegate_partitions
        else f"partitions {', '.join(str(r) for r in rows)}"
    )
    return f"  problem ({where}): {problem}"


def _method_lines(
    m: MethodSummary,
    memory: list[str] | None = None,
    what_if: MethodWhatIf | None = None,
    verbose: bool = False,
) -> list[str]:
    calls = counts_text(m.delegate_calls) or "none"
    lines = [
        f"method {m.name}: {m.instructions} instructions",
        f"  delegate partitions  {m.delegate_partitions}  ({calls})",
        f"  CPU islands          {m.cpu_islands}",
        f"  CPU kernel calls     {m.cpu_kernel_calls}  "
        f"({m.cpu_compute_calls} compute, {m.cpu_glue_calls} glue)",
    ]
    if m.cpu_compute_ops:
        lines.append(f"  CPU compute ops      {counts_text(m.cpu_compute_ops)}")
    crossings = crossings_text(m.crossings, m.crossing_bytes)
    lines.append(f"  boundary crossings   {crossings}")
    handoffs = crossings_text(m.handoffs, m.handoff_bytes)
    if m.handoffs:
        lines.append(f"  delegate handoffs    {handoffs}")
    share = m.delegated_share_by_inner_ops
    lines.append(
        f"  inside delegates     {m.delegated_share_by_instructions:.1%} of calls"
        + (f", {share:.1%} of operations" if share is not None else "")
    )
    if what_if is not None and what_if.all is not None:
        lines.append(f"  what if (all)        {what_if.all.text}: {outcome_text(what_if.all)}")
    if what_if is not None and what_if.summarised:
        lines.append(f"  what if (each)       {summarised_text(what_if)}")
    if m.npu_estimate:
        lines += _npu_estimate_lines(m.npu_estimate)
    lines += memory or []
    scenarios = what_if.by_partition if what_if is not None else {}
    shared = _shared_problems(m)
    lines.append("  partitions:")
    for p in m.partitions:
        lines.append(_partition_line(p))
        lines += _source_lines(p, verbose)
        if p.index in scenarios:
            fix, outcome = scenario_lines(scenarios[p.index])
            lines.append(f"         what if  {fix}")
            lines.append(f"                  {outcome}")
        lines += [
            f"         problem: {problem}"
            for problem in dict.fromkeys(p.problems)
            if problem not in shared
        ]
    lines += [_shared_problem_line(m, problem, rows) for problem, rows in shared.items()]
    lines += [f"  problem: {problem}" for problem in m.problems]
    return lines


def _constant_method_lines(result: ProgramAnalysis) -> list[str]:
    """Methods without instructions, a line each in the program's order: `get_max_seq_len = 128`."""
    constant = [m for m in result.methods if m.is_constant]
    if not constant:
        return []
    width = min(max(len(m.name) for m in constant), 32)
    lines = [
        "",
        f"constant methods ({len(constant)}; no instructions, each returns what the file stores):",
    ]
    for m in constant:
        lines.append(f"  {m.name:<{width}} = {constant_text(m.constants.returns)}")
        lines += [f"    problem: {problem}" for problem in m.summary.problems]
    return lines


def text_report(result: ProgramAnalysis, verbose: bool = False) -> str:
    """`summary`'s text; `verbose` adds each partition's estimate detail."""
    program = result.program
    lines = [
        f"{program.path.name if program.path else 'program'}: {bytes_text(program.file_size)}, "
        f"{len(result.methods)} method(s)"
    ]
    if result.bundle:
        lines.append(f"bundle: {bundle_text(result.bundle)}")
    lines.append(f"{needs_line(result.needs)} (pte-adapter ops lists them)")
    if result.source:
        lines.append(f"source layers from {result.source.etrecord}")
    for m in result.methods:
        if not m.is_constant:
            lines.append("")
            lines += _method_lines(m.summary, _memory_lines(m), m.what_if, verbose)
            lines += bundle_method_lines(m)
            if m.numerics is not None:
                from pte_adapter.render.numerics_facts import accuracy_line

                lines.append(f"  {accuracy_line(m.numerics)}")
    lines += _constant_method_lines(result)
    lines += [f"problem: {problem}" for problem in result.problems]
    if result.numerics_error is not None:
        lines.append(f"problem: numerics: {result.numerics_error}")
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
