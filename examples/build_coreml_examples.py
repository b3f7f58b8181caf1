#!/usr/bin/env python3
"""Build the Core ML example: a model lowered with ExecuTorch's own `CoreMLPartitioner`.

ExecuTorch's Core ML backend converts each partition with coremltools (here 9.0, the `test`
extra) into an ML Program package (`model.mlpackage`: `Manifest.json`, the `model.mlmodel`
specification, a `weight.bin`) and stores that folder flattened into the payload beside a
`metadata.json` (`executorchcoreml.flatten_directory_contents`). Converting and flattening run on
Linux; compiling the package (`model_type=COMPILED_MODEL`) needs macOS and is not done.

    python -m examples.build_coreml_examples [--out examples]

- `coreml_small`  a small CNN (conv, ReLU, a mean over H and W, a linear layer), float32, one
                  Core ML partition

The weights are random and seeded, and the build runs in a fresh process with PYTHONHASHSEED=0;
the bytes still differ from build to build: the backend names each model with a random
`uuid4` (its `identifier`), coremltools records the conversion date, and the package's manifest
names its items by random UUIDs. Every path handed to the toolchain is relative; the script checks
that no machine path is stored. The memory plan is recorded beside the program
(`<name>.memory.json`, examples/memory_plan.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from examples import memory_plan
from examples.common import ABS_PATH_RE, HERE, REPO
from examples.models import SEED


def _small():  # type: ignore[no-untyped-def]
    import torch

    from examples.models.gpu import Small

    torch.manual_seed(SEED)
    return Small().eval(), (torch.randn(1, 3, 16, 16),)


MODELS = {"coreml_small": _small}


def build(name: str) -> list[str]:
    import torch
    from executorch.backends.apple.coreml.partition import CoreMLPartitioner
    from executorch.exir import to_edge_transform_and_lower

    model, example = MODELS[name]()
    ep = torch.export.export(model, example)
    with memory_plan.recording():
        prog = to_edge_transform_and_lower(ep, partitioner=[CoreMLPartitioner()]).to_executorch()
        with open(f"{name}.pte", "wb") as f:
            prog.write_to_file(f)
        memory_plan.write(prog, name)
    return [f"{name}.pte", f"{name}.memory.json"]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(HERE))
    ap.add_argument("--one", choices=sorted(MODELS), help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.chdir(args.out)
    if args.one:
        for f in build(args.one):
            if ABS_PATH_RE.search(Path(f).read_bytes()):
                sys.exit(f"{f} contains an absolute machine path")
            print(f"{f}\t{Path(f).stat().st_size} bytes")
        return
    for name in MODELS:
        env = dict(os.environ, PYTHONHASHSEED="0")
        cmd = [sys.executable, "-m", "examples.build_coreml_examples", "--one", name]
        cmd += ["--out", str(Path.cwd())]
        if subprocess.run(cmd, env=env, cwd=REPO).returncode != 0:
            sys.exit(f"{name}: the build failed")


if __name__ == "__main__":
    main()
