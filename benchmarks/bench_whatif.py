"""The what-if pairs' truth table: per pair, what the real re-export with the fix gives.

    python -m examples.build_whatif_pairs     # once: the pairs in examples/ (committed)
    python -m benchmarks.bench_whatif         # the table (runs Vela on each fixed side's TOSA)
    python -m benchmarks.bench_whatif --json  # the same as JSON

Per pair (examples/whatif_pairs.json): the fragmented side's NPU partitions, delegate calls,
boundary bytes and glue kernels, the fixed side's, and Vela's own cycles of each side
(`cycles_total` of its summary, per partition and in total: Vela run on each `.tosa` sidecar with
the delegate's compile flags; the fragmented side of residual_add_u85 keeps no TOSA). Partitions, calls and glue are ExecuTorch's deserializer's;
boundary bytes are pte_adapter's crossings (tests/support/whatif_pairs.py BOUNDARY_DEFINITION).
The predicted columns (what the what-if says from the fragmented `.pte` alone) go beside these.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tests.support.whatif_pairs import (
    BOUNDARY_DEFINITION,
    Truth,
    WhatIfPair,
    truth,
    whatif_pairs,
)

import pte_adapter


def predicted(pair: WhatIfPair) -> dict[str, object]:
    """What the what-if says from the fragmented `.pte` alone (every fixable island fixed)."""
    ma = pte_adapter.open_analysis(pair.fragmented.pte, profile=False).method("forward")
    s = ma.what_if.all if ma is not None and ma.what_if is not None else None
    if s is None:
        return {"fix": None}
    return {
        "fix": s.fix,
        "npu_partitions_after": s.npu_partitions_after,
        "delegate_calls_removed": s.delegate_calls_removed,
        "boundary_bytes_removed": s.boundary_bytes_removed,
        "glue_kernels_removed": s.glue_kernels_removed,
        "npu_cycles_after": s.npu_cycles_after,
        "npu_cycles_after_as_compiler": s.npu_cycles_after_as_compiler,
        "boundary_cycles_removed": s.boundary_cycles_removed,
        "island_cycles": s.island_cycles,
    }


def row(pair: WhatIfPair, before: Truth, after: Truth) -> dict[str, object]:
    return {
        "predicted": predicted(pair),
        "pair": pair.name,
        "kind": pair.kind,
        "fragmented": before.program,
        "fixed": after.program,
        "accelerator": pair.fixed.accelerator,
        "memory_mode": pair.fixed.memory_mode,
        "npu_partitions": [before.facts.npu_partitions, after.facts.npu_partitions],
        "delegate_calls_removed": before.facts.delegate_calls - after.facts.delegate_calls,
        "boundary_bytes": [before.boundary_bytes, after.boundary_bytes],
        "boundary_bytes_removed": before.boundary_bytes - after.boundary_bytes,
        "glue_kernels_removed": before.glue_kernels - after.glue_kernels,
        "vela_cycles_after": after.vela_cycles,
        "vela_cycles_after_per_partition": [p.vela_cycles for p in after.partitions],
        "vela_npu_cycles_after": after.vela_npu_cycles,
        "vela_time_after_us": round(after.vela_time_us, 1),
        # The fragmented side's own, where it keeps its TOSA (None: it does not).
        "vela_cycles_before": before.vela_cycles if before.partitions else None,
        "vela_cycles_before_per_partition": [p.vela_cycles for p in before.partitions],
    }


def table(rows: list[dict[str, object]]) -> str:
    head = (
        f"{'pair':<18} {'kind':<16} {'accelerator':<14} {'memory mode':<21} {'NPU parts':>9} "
        f"{'calls -':>7} {'boundary B':>16} {'B -':>7} {'glue -':>6} {'Vela before':>11} "
        f"{'Vela after':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        parts, bounds = r["npu_partitions"], r["boundary_bytes"]
        assert isinstance(parts, list) and isinstance(bounds, list)
        lines.append(
            f"{r['pair']:<18} {r['kind']:<16} {r['accelerator']:<14} {r['memory_mode']:<21} "
            f"{parts[0]:>4}->{parts[1]:<3} {r['delegate_calls_removed']:>7} "
            f"{bounds[0]:>7}->{bounds[1]:<7} {r['boundary_bytes_removed']:>7} "
            f"{r['glue_kernels_removed']:>6} {r['vela_cycles_before'] or '-'!s:>11} "
            f"{r['vela_cycles_after']:>10}"
        )
    lines += ["", f"boundary bytes: {BOUNDARY_DEFINITION}", "", prediction_table(rows)]
    return "\n".join(lines)


def prediction_table(rows: list[dict[str, object]]) -> str:
    """The what-if's prediction from the fragmented `.pte` beside the re-export's truth."""
    head = (
        f"{'pair':<18} {'fix predicted':<26} {'parts':>9} {'calls -':>9} {'B -':>15} "
        f"{'glue -':>7} {'NPU cycles as Vela':>19} {'Vela after':>10} {'error':>7}"
    )
    lines = ["predicted (from the fragmented .pte) / true (the re-export)", head, "-" * len(head)]
    for r in rows:
        p = r["predicted"]
        assert isinstance(p, dict)
        parts = r["npu_partitions"]
        assert isinstance(parts, list)
        cycles = p.get("npu_cycles_after_as_compiler")
        vela = r["vela_cycles_after"]
        assert isinstance(vela, int)
        error = f"{cycles / vela - 1:+.1%}" if isinstance(cycles, int) else "-"
        lines.append(
            f"{r['pair']:<18} {p.get('fix')!s:<26} "
            f"{p.get('npu_partitions_after')!s:>4}/{parts[1]:<4} "
            f"{p.get('delegate_calls_removed')!s:>4}/{r['delegate_calls_removed']!s:<4} "
            f"{p.get('boundary_bytes_removed')!s:>7}/{r['boundary_bytes_removed']!s:<7} "
            f"{p.get('glue_kernels_removed')!s:>3}/{r['glue_kernels_removed']!s:<3} "
            f"{cycles if cycles is not None else '-'!s:>19} {vela:>10} {error:>7}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for pair in whatif_pairs():
            keeps_tosa = pair.fragmented.artifacts is not None
            before = truth(
                pair.fragmented, Path(td) / f"{pair.name}_before" if keeps_tosa else None
            )
            after = truth(pair.fixed, Path(td) / pair.name)
            rows.append(row(pair, before, after))
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
