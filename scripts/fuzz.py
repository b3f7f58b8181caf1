"""Long mutation-fuzz run over the example files (issue 7), in parallel, with figures at the end.

    python -m scripts.fuzz --iterations 100000 --seed 1 --jobs 2

Run from the repository's root (it imports `tests.support`). Input *i* is fully determined by the
seed, *i* and the example files (targets, mutators and the runner are in `tests/support/`:
`fuzz_targets.py`, `fuzz_recipes.py`, `fuzz.py`), so any input the run reports can be rebuilt from
its recipe. Each worker converts inside its own copy of a snapshot of `examples/`, under an
address-space limit (an unbounded allocation shows up as MemoryError instead of swapping the
machine).

Printed: inputs per example kind and per target, outcomes by type (anything other than "ok" and
"format" - `PteFormatError` - is a failure, as is a decoder exception that the delegate registry
swallowed), slowest inputs, and peak RSS per worker. `--save DIR` writes each failing input as a
minimised regression recipe (JSON) for `tests/support/fuzz_regressions/`. Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.support import fuzz as fs


def _folders(inputs: int, seed: int) -> int:
    """Run folder mutations; print each failure (its seed rebuilds it) and the edit kinds made."""
    import tempfile

    from tests.support.folder_fuzz import run_folders

    with tempfile.TemporaryDirectory(prefix="pte_fuzz_folders_") as tmp:
        bad, made = run_folders(inputs, seed, Path(tmp))
    for failure in bad:
        print("FAIL", json.dumps(failure, default=str))
    print(f"{inputs} folders, {len(bad)} failures; edits made: {', '.join(sorted(made))}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=mp.cpu_count())
    ap.add_argument(
        "--mem-limit-mib",
        type=int,
        default=2048,
        help="address space each worker may add after start-up (0: no limit)",
    )
    ap.add_argument("--save", type=Path, help="write minimised failing inputs here as JSON")
    ap.add_argument(
        "--folders",
        type=int,
        default=0,
        help="instead: this many folder mutations (tests/support/folder_fuzz.py), from --seed",
    )
    args = ap.parse_args(argv)
    if args.folders:
        return _folders(args.folders, args.seed)

    snapshot = fs.snapshot_examples()

    t0 = time.perf_counter()
    per_kind: Counter[str] = Counter()
    per_target: Counter[str] = Counter()
    per_mutator: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    status_by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    max_time: dict[str, float] = defaultdict(float)
    max_cpu: dict[str, float] = defaultdict(float)
    slowest: list[tuple[float, dict[str, Any]]] = []
    failures: list[dict[str, Any]] = []
    peak_rss = 0.0
    with mp.get_context("fork").Pool(
        args.jobs, fs.worker_init, (str(snapshot), args.seed, args.mem_limit_mib)
    ) as pool:
        for n, r in enumerate(
            pool.imap_unordered(fs.work, range(args.iterations), chunksize=20), 1
        ):
            per_kind[r["kind"]] += 1
            per_target[r["target"]] += 1
            per_mutator[r["mutator"]] += 1
            bad = r["status"] not in ("ok", "format") or bool(r.get("swallowed"))
            key = r["status"] + (" (decoder exception swallowed)" if r.get("swallowed") else "")
            statuses[key] += 1
            status_by_kind[r["kind"]][key] += 1
            max_time[r["kind"]] = max(max_time[r["kind"]], r["seconds"])
            max_cpu[r["kind"]] = max(max_cpu[r["kind"]], r["cpu"])
            peak_rss = max(peak_rss, r["rss"])
            if r["cpu"] > 1.0:
                slowest.append((r["cpu"], r))
            if bad:
                failures.append(r)
                print(
                    f"FAIL #{r['i']} {r['target']} {r['mutator']}: {key}: "
                    f"{r['message'][:200]} {r['swallowed']}",
                    flush=True,
                )
            if n % 5000 == 0:
                print(
                    f"... {n} inputs, {time.perf_counter() - t0:.0f} s, {len(failures)} failures",
                    flush=True,
                )
        if failures and args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            seen: set[tuple[str, str]] = set()
            for r in failures:
                sig = (r["status"], r["message"][:60])
                if sig in seen:
                    continue
                seen.add(sig)
                recipe = pool.apply(fs.minimise_item, (r,))
                entry = {
                    "convert": r["convert"],
                    "mutate": r["mutate"],
                    "recipe": recipe,
                    "found": f"{r['status']}: {r['message'][:200]}",
                    "seed": args.seed,
                    "input": r["i"],
                }
                out = args.save / f"fuzz_{args.seed}_{r['i']}.json"
                out.write_text(json.dumps([entry], indent=1) + "\n")
                print(f"saved {out}")
    wall = time.perf_counter() - t0
    shutil.rmtree(snapshot, ignore_errors=True)

    print(f"\n{args.iterations} inputs in {wall:.0f} s with {args.jobs} workers (seed {args.seed})")
    print("\ninputs per kind (outcomes; max conversion CPU time / wall time):")
    for kind, n in sorted(per_kind.items()):
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(status_by_kind[kind].items()))
        print(
            f"  {kind:14s} {n:7d}  {outcomes}; max {max_cpu[kind]:.3f} s CPU / "
            f"{max_time[kind]:.3f} s wall"
        )
    print("\ninputs per target:")
    for name, n in sorted(per_target.items()):
        print(f"  {n:7d}  {name}")
    print("\ninputs per mutator: " + ", ".join(f"{k} {v}" for k, v in sorted(per_mutator.items())))
    print("\noutcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    others = sum(v for k, v in statuses.items() if k not in ("ok", "format"))
    print(f"exceptions other than PteFormatError: {others}")
    print(
        f"max conversion time: {max(max_cpu.values(), default=0):.3f} s CPU, "
        f"{max(max_time.values(), default=0):.3f} s wall (other processes share the cores); "
        f"inputs over 2 s CPU: {sum(1 for s, _ in slowest if s > 2.0)}"
    )
    for s, r in sorted(slowest, key=lambda x: -x[0])[:5]:
        print(
            f"  {s:.3f} s CPU ({r['seconds']:.3f} s wall)  #{r['i']} {r['target']} "
            f"{r['mutator']} {r['status']}"
        )
    print(f"peak RSS of a worker: {peak_rss:.0f} MiB")
    return 1 if failures or any(s > 2.0 for s, _ in slowest) else 0


if __name__ == "__main__":
    sys.exit(main())
