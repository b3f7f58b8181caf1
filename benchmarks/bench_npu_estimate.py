"""The NPU estimate against Vela's over the whole sweep: one row per partition, then per target.

    python -m benchmarks.build_sweep                  # once: the corpus in bench_out/sweep
    python -m benchmarks.bench_npu_estimate           # the table
    python -m benchmarks.bench_npu_estimate --ops     # ... and the operations outside ±25 %
    python -m benchmarks.bench_npu_estimate --subset  # the committed subset the test checks
    python -m benchmarks.bench_npu_estimate --write-subset CASE [CASE ...]

Per partition: our cycles (the command stream Vela compiled for the case's configuration,
decoded and estimated by the adapter), Vela's `cycles_total` for the same compile, the
deviation, and our total with the operations we knowingly price differently (see the notes)
priced the way Vela prices them. Per target (accelerator): the median |deviation|, the worst
partition and the share of Vela's scheduled operations whose cycles we match within ±25 %.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from tests.support.npu_sweep import (
    CORPUS,
    SUBSET,
    compare_all,
    load_corpus,
    load_subset,
    per_target,
    read_vela_output,
    table,
)


def write_subset(case_ids: list[str], corpus: Path) -> None:
    manifest = json.loads((corpus / "manifest.json").read_text())
    out = {}
    for cid in case_ids:
        case = dict(manifest["cases"][cid])
        parts = []
        for p in case["partitions"]:
            if "error" not in p:
                record = read_vela_output(corpus / p["dir"])
                parts.append({**{k: v for k, v in p.items() if k != "dir"}, **record})
        case["partitions"] = parts
        out[cid] = case
    SUBSET.mkdir(parents=True, exist_ok=True)
    path = SUBSET / "cases.json.gz"
    raw = (json.dumps(out, indent=0, sort_keys=True) + "\n").encode()
    path.write_bytes(gzip.compress(raw, mtime=0))
    print(f"wrote {len(out)} cases to {path} ({path.stat().st_size:,} bytes)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--subset", action="store_true", help="the committed subset instead")
    ap.add_argument("--ops", action="store_true", help="also list operations outside ±25 %%")
    ap.add_argument("--only", default="", help="list only operations of partitions matching")
    ap.add_argument("--limit", type=int, default=60, help="operations listed at most")
    ap.add_argument("--json", type=Path, help="write per-partition results here")
    ap.add_argument(
        "--write-subset",
        nargs="+",
        metavar="CASE",
        help="write these cases (ids as in the table, or @file with one per line) to the "
        "committed subset",
    )
    args = ap.parse_args(argv)
    if args.write_subset:
        ids: list[str] = []
        for item in args.write_subset:
            if item.startswith("@"):
                ids += [line.strip() for line in Path(item[1:]).read_text().splitlines() if line]
            else:
                ids.append(item)
        write_subset(ids, args.corpus)
        return 0
    t0 = time.perf_counter()
    cases = load_subset() if args.subset else load_corpus(args.corpus)
    t1 = time.perf_counter()
    comparisons = compare_all(cases)
    t2 = time.perf_counter()
    print(table(comparisons, ops=args.ops, only=args.only, limit=args.limit))
    print(
        f"\n{len(cases)} cases read in {t1 - t0:.1f} s; "
        f"{len(comparisons)} partitions decoded and estimated in {t2 - t1:.1f} s"
    )
    if args.json:
        rows = [
            {
                "partition": c.name,
                "ours": c.ours,
                "vela": c.vela,
                "deviation": round(c.deviation, 4),
                "ours_as_vela": c.ours_as_vela,
                "notes": c.notes,
            }
            for c in comparisons
        ]
        summary = [
            {"target": s.target, "median": s.median, "worst": s.worst.name, "op_share": s.op_share}
            for s in per_target(comparisons)
        ]
        args.json.write_text(json.dumps({"partitions": rows, "targets": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
