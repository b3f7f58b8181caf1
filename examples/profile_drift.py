#!/usr/bin/env python3
"""Record ETDumps whose latency changes over the runs, on purpose: the truth for `profile`'s drift.

ExecuTorch's Python runtime runs one example program (`wide_xnnpack`: about 8 ms a run,
so that a process sharing the core takes a share of every run rather than preempting a few) many
times with event tracing on, pinned to one CPU core with XNNPACK's threadpool cut to one thread,
while this script controls what else runs on that core:

| recording | what competes for the core |
|---|---|
| `steady` | nothing this script starts: the latency stays where it is (after the warm-up) |
| `slowdown` | from run LOAD_FROM on, a CPU-bound process (a busy loop) pinned to the same core: the scheduler shares the core between the two, so each run takes about twice as long |
| `creep` | from run LOAD_FROM on, a process pinned to the same core that is busy for a growing share of every 2 ms (0 at run LOAD_FROM, RAMP_TOP at the last run) and sleeps the rest: the latency rises gradually |

Each recording is written to `examples/drift/<program>_<recording>.etdp` (one "Default" block for
the method's load, one "Execute" block per run), and `examples/drift/recordings.json` says how each
was made: the program, the runs, the core, and from which run (0-based) the load was started, so a
test can check that the onset `profile` finds is where the load began. Everything else on the
machine is noise this script did not cause: run it alone (in this repository, under
`/work/helpers/quiet`, which waits for the other heavy jobs).

Usage (from the repository root): python -m examples.profile_drift [--runs N] [recording ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "drift"
PROGRAM = "wide_xnnpack"
THREADS = 1  # XNNPACK's threadpool: one thread, on the one core the runs are pinned to
RUNS = 60
LOAD_FROM = {"steady": None, "slowdown": 30, "creep": 20}
RAMP_TOP = 0.5  # the competitor's busy share of each period at the last run of `creep`
PERIOD_S = 0.002
CPU = 1

# The competitors: Python one-liners, so nothing but the interpreter is needed. `busy` spins;
# `duty` spins for the share of each period written in its file, and sleeps the rest.
BUSY = "while True: pass"
DUTY = f"""
import time, sys
path = sys.argv[1]
while True:
    try:
        share = float(open(path).read() or 0)
    except (OSError, ValueError):
        share = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < share * {PERIOD_S}:
        pass
    time.sleep(max(0.0, {PERIOD_S} - (time.perf_counter() - start)))
"""


def _pinned(code: str, *args: str) -> subprocess.Popen[bytes]:
    """A competitor on the runner's core (taskset: its affinity is set before it runs)."""
    return subprocess.Popen(["taskset", "-c", str(CPU), sys.executable, "-c", code, *args])


def _input(method_meta: object) -> list[object]:
    import torch

    info = method_meta.input_tensor_meta(0)  # type: ignore[attr-defined]
    return [torch.rand(tuple(info.sizes()), generator=torch.Generator().manual_seed(0))]


def record(name: str, runs: int) -> dict[str, object]:
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    portable_lib._unsafe_reset_threadpool(THREADS)
    load_from = LOAD_FROM[name]
    program = Runtime.get().load_program(
        HERE / f"{PROGRAM}.pte", enable_etdump=True, debug_buffer_size=0
    )
    method = program.load_method("forward")
    assert method is not None
    inputs = _input(method.metadata)
    competitor: subprocess.Popen[bytes] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        share = Path(tmp) / "share"
        share.write_text("0")
        wall: list[float] = []
        try:
            for run in range(runs):
                if load_from is not None and run == load_from:
                    code, args = (BUSY, ()) if name == "slowdown" else (DUTY, (str(share),))
                    competitor = _pinned(code, *args)
                    time.sleep(0.2)  # let it start before the run it is meant to slow
                if name == "creep" and load_from is not None and run >= load_from:
                    share.write_text(f"{RAMP_TOP * (run - load_from) / (runs - 1 - load_from):.4f}")
                start = time.perf_counter()
                method.execute(inputs)
                wall.append(round((time.perf_counter() - start) * 1e3, 3))
        finally:
            if competitor is not None:
                competitor.kill()
                competitor.wait()
        out = OUT / f"{PROGRAM}_{name}.etdp"
        cwd = os.getcwd()
        os.chdir(tmp)  # a relative name: nothing machine-specific is recorded
        try:
            program.write_etdump_result_to_file("out.etdp", "out.bin")
            out.write_bytes(Path("out.etdp").read_bytes())
        finally:
            os.chdir(cwd)
    return {
        "etdump": out.name,
        "program": f"{PROGRAM}.pte",
        "method": "forward",
        "runs": runs,
        "cpu": CPU,
        "threads": THREADS,
        "load_from_run": load_from,
        "load": {
            "steady": "none started by the recorder",
            "slowdown": "a busy loop pinned to the same core, from load_from_run to the end",
            "creep": f"a process pinned to the same core, busy for a share of every "
            f"{PERIOD_S * 1e3:g} ms rising linearly from 0 at load_from_run to {RAMP_TOP:g} at "
            "the last run",
        }[name],
        # The recorder's own clock around each execute (ms): a second view of the same runs.
        "wall_ms": wall,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("recordings", nargs="*", default=list(LOAD_FROM))
    args = ap.parse_args()
    # Pinned before torch or ExecuTorch start a thread: every thread they start inherits it.
    os.sched_setaffinity(0, {CPU})
    OUT.mkdir(exist_ok=True)
    index = OUT / "recordings.json"
    doc = json.loads(index.read_text()) if index.exists() else {}
    doc["generator"] = "examples/profile_drift.py"
    doc.setdefault("recordings", {})
    for name in args.recordings:
        doc["recordings"][name] = record(name, args.runs)
        print(f"{doc['recordings'][name]['etdump']}: {args.runs} runs")
    doc["recordings"] = dict(sorted(doc["recordings"].items()))
    index.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
