#!/usr/bin/env python3
"""Run example programs with ExecuTorch's Python runtime and keep the ETDump of the runs.

For each example below, `examples/<stem>.etdp` is written beside `<stem>.pte`: the program is loaded
with event tracing on (`Runtime.get().load_program(pte, enable_etdump=True, ...)`), each of its
methods runs RUNS times on seeded random inputs, and `write_etdump_result_to_file` writes the file.
The ETDump holds one "Default" block per loaded method and one "Execute" block per run.

Timings are what this machine measured: a shared, loaded 2-core x86 box, so run-to-run noise is
large and real. Re-running this script changes every `.etdp` (new timings), which is expected.

Ethos-U, TOSA and VGF programs cannot run here: the pip runtime registers XNNPACK only and there is
no Corstone FVP, so their ETDumps must come from a board or an FVP (same schema, same reader).

`debug_buffer_size`: where > 0 the runtime also logs debug events (intermediate outputs) into the
ETDump; their values go to a side buffer file, which is deleted (only the events are kept, to keep
the examples small).

The measured pair (lrn_pow_xnnpack, lrn_rsqrt_xnnpack) runs RUNS_OF times instead, on one core
with XNNPACK's threadpool cut to one thread. Run this
script alone on the machine (in this repository: under /work/helpers/quiet): other work on the
same cores is noise in every figure.

Usage: python examples/profile_examples.py [--runs N] [stem ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = 12

# stem -> (external data file or "", debug buffer bytes)
EXAMPLES: dict[str, tuple[str, int]] = {
    "mv2_xnnpack_fp32": ("", 0),
    "mv2_xnnpack_int8": ("", 0),
    "xnnpack_ptd": ("xnnpack_weights.ptd", 0),
    "undelegated": ("", 0),
    "two_methods": ("", 1 << 20),
    "cond": ("", 0),
    # CPU islands between XNNPACK partitions: the what-if's CPU time removed is measured here.
    "tiny_gpt_xnnpack": ("", 0),
    # The measured pair (a CPU island and its fix): `diff` compares what the fix saved with what
    # the what-if predicted. More runs, so that each side's median is a steady one.
    "lrn_pow_xnnpack": ("", 0),
    "lrn_rsqrt_xnnpack": ("", 0),
}
RUNS_OF = {"lrn_pow_xnnpack": 40, "lrn_rsqrt_xnnpack": 40}
# The measured pair runs on one core with XNNPACK's threadpool cut to one thread (as the drift
# recordings of profile_drift.py do), so the two sides are compared, not what else the machine did.
PINNED_CPU = 1


def _inputs(method_meta: object, run: int) -> list[object]:
    import torch

    gen = torch.Generator().manual_seed(run)
    out: list[object] = []
    for i in range(method_meta.num_inputs()):  # type: ignore[attr-defined]
        info = method_meta.input_tensor_meta(i)  # type: ignore[attr-defined]
        sizes = tuple(info.sizes())
        # Alternate the sign so that data-dependent control flow (cond.pte) takes both branches.
        sign = 1.0 if run % 2 == 0 else -1.0
        if int(info.dtype()) in (3, 4):  # ScalarType Int, Long
            # Token ids (tiny_gpt_xnnpack): small ones, inside any vocabulary.
            out.append(torch.randint(0, 8, sizes, generator=gen))
            continue
        out.append(sign * torch.rand(sizes, generator=gen) + 0.01 * sign)
    return out


def profile(stem: str, runs: int) -> Path:
    from executorch.extension.pybindings import portable_lib

    pinned = stem in RUNS_OF
    runs = RUNS_OF.get(stem, runs)
    if pinned:
        # One thread left, in this (the calling) thread, pinned; restored after.
        cpus = os.sched_getaffinity(0)
        threads = portable_lib._threadpool_get_thread_count()
        os.sched_setaffinity(0, {PINNED_CPU})
        portable_lib._unsafe_reset_threadpool(1)
    try:
        return _record(stem, runs)
    finally:
        if pinned:
            portable_lib._unsafe_reset_threadpool(threads)
            os.sched_setaffinity(0, cpus)


def _record(stem: str, runs: int) -> Path:
    from executorch.runtime import Runtime

    data, debug_size = EXAMPLES[stem]
    pte = HERE / f"{stem}.pte"
    kwargs: dict[str, object] = {"data_path": HERE / data} if data else {}
    program = Runtime.get().load_program(
        pte, enable_etdump=True, debug_buffer_size=debug_size, **kwargs
    )
    for name in sorted(program.method_names):
        method = program.load_method(name)
        assert method is not None, f"{stem}: cannot load {name}"
        for run in range(runs):
            method.execute(_inputs(method.metadata, run))
    out = HERE / f"{stem}.etdp"
    with tempfile.TemporaryDirectory() as tmp:
        # Written to a relative name in a scratch directory: nothing machine-specific is recorded.
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            program.write_etdump_result_to_file("out.etdp", "out.bin")
            out.write_bytes(Path("out.etdp").read_bytes())
        finally:
            os.chdir(cwd)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("stems", nargs="*", default=list(EXAMPLES))
    args = ap.parse_args()
    for stem in args.stems:
        out = profile(stem, args.runs)
        runs = RUNS_OF.get(stem, args.runs)
        print(f"{out.name}: {out.stat().st_size} bytes, {runs} runs per method")
    return 0


if __name__ == "__main__":
    sys.exit(main())
