"""Build the example ExecuTorch ``.pte`` programs shown by the pte_adapter.

Every example is produced with the real toolchain (ExecuTorch 1.5.1, torch 2.13 CPU,
ethos-u-vela 5.2.0, tosa-tools; the VGF examples need Arm's ``model-converter``, the Core ML
one coremltools: both in the ``test`` extra) from randomly initialised, seeded models: no
weights are downloaded, and the same environment gives the same bytes (but for the Core ML
payload, which names its model by random UUIDs and records the date: builders/coreml.py).

Usage (from the repository root)::

    python -m examples.build_examples                       # all examples -> examples/
    python -m examples.build_examples --only cond two_methods
    python -m examples.build_examples --only vulkan_mv2 vgf_small coreml_small
    python -m examples.build_examples --out /some/dir       # build elsewhere
    python -m examples.build_examples --list                # names + descriptions
    python -m examples.build_examples --verify-only         # re-inspect existing files

Large benchmark programs (NOT built by default, NEVER committed; ~5 min on 2 cores,
~4 GB peak RAM, 1.3 GB of output)::

    python -m examples.build_examples --large --out /tmp/pte_bench

This writes ``gpt_xnnpack_fp32.pte`` (a 12-layer, hidden-768, vocab-50257, 128-token
decoder-only transformer with an untied LM head, 163M fp32 parameters, ~650 MB;
XNNPACK delegated: LayerNorm, embedding and mask ops stay on the CPU, which gives
62 XnnpackBackend partitions and ~316 KernelCalls) and ``gpt_portable_fp32.pte``
(the same model undelegated, ~596 KernelCalls, ~650 MB in the constant segment).
Add ``--only gpt_xnnpack_fp32`` to build one of them. ``--large`` refuses to write
into this folder.

Where things are: the networks in ``models/`` (one module per family), one builder module per
backend family in ``builders/`` (each example one function decorated with ``@example``), the
shared lowering in ``lowering.py``, ETRecords and the partitioners' reasons in ``etrecords.py``,
the re-reading in ``verify.py``, and ``manifest.json``/``README.md`` in ``manifest.py`` and
``readme.py``. This script is the driver.

The build runs with the current directory set to the output folder, and every path handed to
the toolchain is relative, so no absolute machine path (``/tmp``, ``/root``, ``/work``,
``/home``) ends up in the committed files; ``--check-paths`` (on by default) greps the outputs
and fails if one does.

After building, each ``.pte`` is re-read with
``executorch.exir._serialize._program.deserialize_pte_binary`` and the facts
(methods, instruction kinds, delegates per backend, operators, segments, named
data) are written to ``manifest.json`` and ``README.md`` in the output folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback

import torch

from examples.builders import (
    bundle,
    coreml,
    cortex_m,
    ethosu,
    large,
    numerics,
    portable,
    tosa,
    vgf,
    vulkan,
    xnnpack,
)
from examples.builders import sync as sync_builders
from examples.common import (
    EXAMPLES,
    HERE,
    build_in_subprocess,
    build_recording,
    check_paths,
    run_worker,
)
from examples.manifest import write_manifest
from examples.models import SEED
from examples.readme import write_readme
from examples.verify import print_facts, verify_example

# each registers its own
BUILDERS = (ethosu, tosa, xnnpack, portable, cortex_m, bundle, large, numerics)
BUILDERS += (sync_builders,)  # the examples of the ETRecord's graphs and the sync mapping
BUILDERS += (vulkan, vgf, coreml)  # the GPU backends and Apple's


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="build only these examples")
    ap.add_argument("--out", default=HERE, help="output folder (default: this folder)")
    ap.add_argument(
        "--large",
        action="store_true",
        help="build the large benchmark programs instead (never commit them)",
    )
    ap.add_argument("--list", action="store_true", help="list examples and exit")
    ap.add_argument(
        "--verify-only",
        action="store_true",
        help="do not build; re-inspect existing outputs listed in manifest.json",
    )
    ap.add_argument(
        "--no-check-paths", action="store_true", help="skip the absolute-path grep of the outputs"
    )
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="build in this process instead of one fresh process per example "
        "(faster to debug; bytes may then depend on what was built before)",
    )
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    return ap


def _recorded(name: str) -> tuple[dict, float | None]:
    """--verify-only: the example's files as manifest.json lists them (in the current folder)."""
    prev = {}
    if os.path.exists("manifest.json"):
        with open("manifest.json") as f:
            prev = {e["name"]: e for e in json.load(f)["examples"]}
    if name in prev:
        return {k: prev[name][k] for k in ("files", "sidecars", "settings")}, prev[name][
            "build_seconds"
        ]
    sidecars = [d for d in (f"{name}_artifacts",) if os.path.isdir(d)]
    return {"files": [f"{name}.pte"], "settings": {}, "sidecars": sidecars}, None  # the usual names


def _build(name: str, out: str, args: argparse.Namespace) -> tuple[dict, float | None]:
    cwd = os.getcwd()
    os.chdir(out)  # every toolchain path below is relative to the output folder
    t0 = time.time()
    try:
        if args.verify_only:
            return _recorded(name)
        if args.in_process:
            torch.manual_seed(SEED)
            result = build_recording(EXAMPLES[name])
            return result, round(time.time() - t0, 1)
        result = build_in_subprocess(__spec__.name if __spec__ else __name__, name, out)
        return result, result.pop("build_seconds")
    finally:
        os.chdir(cwd)


def build_and_verify(names: list[str], out: str, args: argparse.Namespace) -> tuple[dict, dict]:
    """Build (or re-read) each example, verify its files; the manifest entries and the failures."""
    entries, failures = {}, {}
    for name in names:
        ex = EXAMPLES[name]
        print(f"=== {name}: {ex.description}", flush=True)
        try:
            result, build_s = _build(name, out, args)
            facts = verify_example(name, result, out)
        except Exception as exc:
            traceback.print_exc()
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        print(f"  built in {build_s} s")
        print_facts(name, facts)
        if not args.no_check_paths:
            hits = check_paths(out, result["files"] + result["sidecars"])
            if hits:
                failures[name] = f"absolute machine path found in {hits}"
                print(f"  !! absolute path in {hits}")
        entries[name] = {
            **result,
            "kind": ex.kind,
            "description": ex.description,
            "build_seconds": build_s,
            "facts": facts,
        }
    return entries, failures


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args._worker:
        return run_worker(EXAMPLES[args._worker], args.out, args._result)
    if args.list:
        for e in EXAMPLES.values():
            print(f"{e.name:22s} {'[large] ' if e.large else ''}{e.description}")
        return 0
    names = args.only or [n for n, e in EXAMPLES.items() if e.large == args.large]
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        ap.error(f"unknown example(s): {unknown}; see --list")
    out = os.path.abspath(args.out)
    if any(EXAMPLES[n].large for n in names) and out == os.path.abspath(HERE):
        ap.error("large benchmark programs must not go into the committed examples folder; --out")
    os.makedirs(out, exist_ok=True)
    logging.basicConfig(level=logging.WARNING)
    t_all = time.time()
    entries, failures = build_and_verify(names, out, args)
    if entries and not args.large:
        write_readme(out, write_manifest(out, entries))
    print(f"total time {time.time() - t_all:.1f} s")
    for n, msg in failures.items():
        print(f"FAILED {n}: {msg}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
