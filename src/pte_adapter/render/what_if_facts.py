"""The what-if (analysis/what_if.py) in words and as JSON: one wording for every view."""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.what_if import MAX_ISLAND_SCENARIOS, MethodWhatIf, WhatIf
from pte_adapter.wording import plural, signed_bytes, us_text


def _signed(n: int) -> str:
    return "0" if n == 0 else f"−{n}" if n > 0 else f"+{-n}"


def outcome_text(s: WhatIf) -> str:
    """`→ 1 NPU partition (−10 calls), −25 crossings / −38.7 KiB, −30 glue kernels; NPU ≈ 1.01
    ms (1,012,176 cycles, 1,100,476 as Vela prices it; ...)`."""
    if not s.groups:
        return "nothing to merge with: " + "; ".join(s.notes)
    n = s.npu_partitions_after
    parts = [
        f"→ {plural(n, 'delegate partition')} ({_signed(s.delegate_calls_removed)} "
        f"call{'s' if abs(s.delegate_calls_removed) != 1 else ''})",
        f"{_signed(s.crossings_removed)} crossings / {signed_bytes(-s.boundary_bytes_removed, minus='−')}",
        f"{_signed(s.glue_kernels_removed)} glue kernels",
    ]
    text = ", ".join(parts)
    text += "; " + npu_text(s)
    if s.cpu_time_removed_us is not None:
        text += f"; CPU −{us_text(s.cpu_time_removed_us)} measured"
    return text


def npu_text(s: WhatIf) -> str:
    if s.npu_cycles_after is None or s.npu_time_after_us is None:
        return next(
            (n for n in s.notes if n.startswith(("no cost model", "NPU time"))),
            "NPU time not estimated",
        )
    bound = "≥ " if s.lower_bound else "≈ "
    text = (
        f"NPU {bound}{us_text(s.npu_time_after_us)} ({s.npu_cycles_after:,} cycles, "
        f"{s.npu_cycles_after_as_compiler:,} as {s.compiler or 'its compiler'} prices it; was "
        f"{s.npu_cycles_before:,}; "
        f"boundary layout work −{s.boundary_cycles_removed or 0:,}, the island +"
        f"{s.island_cycles or 0:,})"
    )
    if s.priced_as:
        text += f"; priced as {', '.join(dict.fromkeys(s.priced_as))}"
    if s.not_priced:
        text += f"; not priced: {', '.join(dict.fromkeys(s.not_priced))}"
    return text


def scenario_lines(s: WhatIf) -> list[str]:
    """Two lines: the fix, then what it would buy."""
    return [s.text, outcome_text(s)]


def summarised_text(w: MethodWhatIf) -> str:
    """Why the islands have no scenario each, and their fixes counted."""
    fixes = ", ".join(f"{fix} x{n}" for fix, n in w.summarised_fixes.items())
    return (
        f"not predicted per island: {len(w.summarised)} islands (more than "
        f"{MAX_ISLAND_SCENARIOS:,}); their fixes: {fixes}"
    )


def what_if_json(w: MethodWhatIf | None) -> dict[str, Any] | None:
    if w is None:
        return None
    out: dict[str, Any] = {
        "islands": [scenario_json(s) for s in w.islands],
        "all": scenario_json(w.all) if w.all is not None else None,
    }
    if w.summarised:  # only past MAX_ISLAND_SCENARIOS islands
        out["summarised"] = {
            "limit": MAX_ISLAND_SCENARIOS,
            "islands": [
                {"partition": f.partition, "fix": f.fix, "text": f.text} for f in w.summarised
            ],
        }
    return out


def scenario_json(s: WhatIf) -> dict[str, Any]:
    return {
        "partition": s.partition,
        "islands": list(s.islands),
        "fix": s.fix,
        "text": s.text,
        "merges": s.merges,
        "groups": [list(g) for g in s.groups],
        "npu_partitions_after": s.npu_partitions_after,
        "delegate_calls_removed": s.delegate_calls_removed,
        "crossings_removed": s.crossings_removed,
        "boundary_bytes_removed": s.boundary_bytes_removed,
        "glue_kernels_removed": s.glue_kernels_removed,
        "npu_cycles_before": s.npu_cycles_before,
        "npu_cycles_after": s.npu_cycles_after,
        "npu_cycles_after_as_compiler": s.npu_cycles_after_as_compiler,
        "compiler": s.compiler or None,
        "npu_time_after_us": s.npu_time_after_us,
        "island_cycles": s.island_cycles,
        "boundary_cycles_removed": s.boundary_cycles_removed,
        "priced_as": list(s.priced_as),
        "not_priced": list(s.not_priced),
        "lower_bound": s.lower_bound,
        "cpu_time_removed_us": s.cpu_time_removed_us,
        "notes": list(s.notes),
    }


def headline(s: WhatIf) -> str:
    """What fits where Model Explorer's panel cuts a value: `1 partition, −10 calls, NPU 1.01
    ms` (the time before is in the detail)."""
    if not s.groups:
        return "nothing to merge with"
    n, calls = s.npu_partitions_after, s.delegate_calls_removed
    text = f"{plural(n, 'partition')}, {_signed(calls)} call{'s' if abs(calls) != 1 else ''}"
    if s.npu_time_after_us is None:
        other = any(n.startswith("NPU time on the other target") for n in s.notes)
        return text + (", NPU: another target's" if other else ", NPU: no cost model")
    return f"{text}, NPU {'≥ ' if s.lower_bound else ''}{us_text(s.npu_time_after_us)}"


def what_if_method_facts(w: MethodWhatIf | None) -> dict[str, str]:
    """Graph info, near the top: what fixing every fixable island would buy (the headline
    first: the panel shows a value's first line up to its width)."""
    if w is None or w.all is None:
        return {}
    return {
        "what_if_all_fixed": headline(w.all),
        "what_if_all_fixed_detail": f"{w.all.text}: {outcome_text(w.all)}",
    }


def what_if_island_facts(w: MethodWhatIf | None, partition: int) -> dict[str, str]:
    """An island group's attributes, first in its panel: what fixing it would buy, its fix, the
    detail."""
    s = w.by_partition.get(partition) if w else None
    if s is None:
        f = w.summarised_by_partition.get(partition) if w else None
        if w is None or f is None:
            return {}
        return {"what_if": summarised_text(w), "what_if_fix": f"{f.fix}: {f.text}"}
    return {
        "what_if": headline(s),
        "what_if_fix": f"{s.fix}: {s.text}",
        "what_if_detail": outcome_text(s),
    }
