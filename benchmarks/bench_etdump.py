"""Read, join and summarise a large real ETDump: time and peak memory per event.

    python -m benchmarks.bench_etdump                 # records bench_out/undelegated_<N>.etdp once
    python -m benchmarks.bench_etdump --runs 5000     # a bigger one
    python -m benchmarks.bench_etdump --etdp f.etdp --pte f.pte   # measure any pair

The ETDump is recorded by ExecuTorch's Python runtime running `examples/undelegated.pte` (25 kernel
calls, so 52 events per run) N times; it needs the export extra and is never committed. The
measurement runs in a fresh process without torch: what `pte-adapter profile` costs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RECORD = r"""
import sys, torch
from executorch.runtime import Runtime
pte, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
program = Runtime.get().load_program(pte, enable_etdump=True)
method = program.load_method("forward")
x = [torch.rand(tuple(method.metadata.input_tensor_meta(0).sizes()))]
for _ in range(runs):
    method.execute(x)
program.write_etdump_result_to_file(out, out + ".bin")
"""

MEASURE = r"""
import json, sys, time

def peak_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0

from pte_adapter.api import load
from pte_adapter.container.etdump import load_etdump
from pte_adapter.analysis.profile.join import join_profile
from pte_adapter.analysis.profile.summary import profile_summary
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = peak_kib()
program = load(sys.argv[1])
# CPU time: what the work costs even on a shared, loaded machine.
t0 = time.process_time()
etdump = load_etdump(sys.argv[2])
t1 = time.process_time()
profile = join_profile(program, etdump)
t2 = time.process_time()
summary = profile_summary(profile)
t3 = time.process_time()
events = sum(len(r.profile_events) for r in etdump.runs)
print(json.dumps({"events": events, "runs": len(etdump.runs), "read_s": t1 - t0,
                  "join_s": t2 - t1, "summary_s": t3 - t2,
                  "peak_extra_mib": (peak_kib() - base) / 1024}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--pte", type=Path, default=ROOT / "examples" / "undelegated.pte")
    ap.add_argument("--etdp", type=Path)
    args = ap.parse_args()
    etdp = args.etdp
    if etdp is None:
        out = ROOT / "bench_out"
        out.mkdir(exist_ok=True)
        etdp = out / f"{args.pte.stem}_{args.runs}.etdp"
        if not etdp.exists():
            subprocess.run(
                [sys.executable, "-c", RECORD, str(args.pte), str(etdp), str(args.runs)],
                check=True,
                capture_output=True,
            )
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, str(args.pte), str(etdp)],
        check=True,
        capture_output=True,
        text=True,
    )
    m = json.loads(r.stdout.strip().splitlines()[-1])
    size = etdp.stat().st_size
    per_event_us = 1e6 * (m["read_s"] + m["join_s"]) / max(1, m["events"])
    print(f"{etdp.name}: {size / 1e6:.1f} MB, {m['runs']} blocks, {m['events']} profile events")
    print(
        f"  CPU: read {m['read_s']:.2f} s, join {m['join_s']:.2f} s, summary {m['summary_s']:.2f} s"
        f" ({per_event_us:.0f} us per event read+join)"
    )
    print(
        f"  peak memory above the loaded program: {m['peak_extra_mib']:.0f} MiB "
        f"({m['peak_extra_mib'] * 2**20 / max(1, size):.1f} x the file)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
