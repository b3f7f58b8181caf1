"""Opening an ETRecord in Model Explorer against opening its program: the ETRecord must cost no more.

    python -m benchmarks.bench_etrecord                       # the MobileNetV2 LRN example
    python -m benchmarks.bench_etrecord --pte a.pte --etrecord a.etrecord --repeat 9
    python -m benchmarks.bench_etrecord --cachegrind          # + instructions (valgrind)

What is timed is what Model Explorer's server does for one file: the adapter's `convert` (through
its cache, cleared each time, as for a file opened for the first time) and the server's JSON of the
graphs (`convert_adapter_response`, `json.dumps`). The ETRecord's conversion reads all its graphs
and the program beside it (without decoding its delegates: only its instructions and partitions
are needed) to colour each node where it ran. In a fresh process per file: one warm-up, then
`--repeat` runs; the median CPU time (user + system: the machine is shared, wall time says
little) and the graphs' nodes and JSON bytes. With `--cachegrind`, the instructions one conversion
executes (valgrind's cachegrind on a process that converts once, less one that only imports), the
figure that is the same every run.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "examples" / "mv2_lrn_ethosu85"

MEASURE = r"""
import json, sys, time
import model_explorer  # noqa: F401
from model_explorer.utils import convert_adapter_response
from pte_adapter.explorer.adapter import CACHE, PteAdapter

path, repeat = sys.argv[1], int(sys.argv[2])
adapter = PteAdapter()
times, nodes, size = [], 0, 0
for i in range(repeat + 1):
    CACHE.clear()
    t0 = time.process_time()
    graphs = adapter.convert(path, {})
    text = json.dumps(convert_adapter_response(graphs))
    dt = time.process_time() - t0
    if i:
        times.append(dt)
    nodes, size = sum(len(g.nodes) for g in graphs["graphs"]), len(text)
print(json.dumps({"times": times, "nodes": nodes, "bytes": size}))
"""

ONCE = r"""
import json, sys
import model_explorer  # noqa: F401
from model_explorer.utils import convert_adapter_response
from pte_adapter.explorer.adapter import PteAdapter
import pte_adapter.explorer.convert, pte_adapter.api.etrecord_view  # noqa: F401
if sys.argv[1] != "-":
    json.dumps(convert_adapter_response(PteAdapter().convert(sys.argv[1], {})))
"""


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def cpu(path: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    return {"median_ms": 1000 * statistics.median(doc["times"]), **doc}


def instructions(path: str) -> int:
    """Instructions a process executes (cachegrind's I refs)."""
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={d}/cg.out",
                sys.executable,
                "-c",
                ONCE,
                path,
            ],
            capture_output=True,
            text=True,
            check=True,
            env=_env(),
        )
    m = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if m is None:
        raise RuntimeError(out.stderr[-2000:])
    return int(m.group(1).replace(",", ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pte", type=Path, default=DEFAULT.with_suffix(".pte"))
    ap.add_argument("--etrecord", type=Path, default=DEFAULT.with_suffix(".etrecord"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cachegrind", action="store_true")
    args = ap.parse_args()
    rows = [("program", args.pte), ("ETRecord", args.etrecord)]
    print(f"{'file':<34} {'nodes':>6} {'JSON bytes':>11} {'CPU ms (median)':>16}")
    results = {}
    for what, path in rows:
        r = cpu(path, args.repeat)
        results[what] = r
        print(f"{path.name:<34} {int(r['nodes']):>6} {int(r['bytes']):>11} {r['median_ms']:>16.1f}")
    ratio = results["ETRecord"]["median_ms"] / results["program"]["median_ms"]
    print(f"ETRecord / program, CPU time: {ratio:.2f}")
    if args.cachegrind:
        base = instructions("-")
        counts = {what: instructions(str(path)) - base for what, path in rows}
        for what, path in rows:
            print(f"{path.name:<34} {counts[what] / 1e6:>10.0f} M instructions")
        print(f"ETRecord / program, instructions: {counts['ETRecord'] / counts['program']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
