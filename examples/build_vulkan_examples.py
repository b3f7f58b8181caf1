#!/usr/bin/env python3
"""Build the Vulkan examples: models lowered with ExecuTorch's own `VulkanPartitioner`.

The Vulkan backend (how ExecuTorch runs on Arm Mali and other mobile GPUs) serialises each partition
as a `VH00` header, a `VK00` FlatBuffer (`VkGraph`: an operator chain over a value table) and a
block of constant bytes. Lowering needs no GPU: the partitioner and `vulkan_preprocess` run on any
machine, so these are the real payloads a phone would load.

    python -m examples.build_vulkan_examples [--out examples] [--only vulkan_cnn_island ...]

The examples (random, seeded weights; models in plain torch.nn; each built in a fresh process with
PYTHONHASHSEED=0, the way build_examples.py builds its own, so the bytes repeat):

- `vulkan_cnn_island`  small CNN, float32: two conv blocks with a `log1p` between them, which the
                       Vulkan operator registry does not have, so it stays on the CPU as an island
                       between two Vulkan partitions; its mean over H and W is refused by the
                       registry's argument check, a second island; an upsampling by scale
                       factors
- `vulkan_mv2`         MobileNetV2 (width 0.35, 10 classes, 96x96 input), `force_fp16`: float32
                       tensors held as float16 on the GPU (their staging dtype stays float32)
- `vulkan_transformer` one pre-norm transformer block (layer norm, 4-head self-attention, GELU
                       MLP) over 2 to 16 tokens (a dynamic dimension) of width 32, float32
- `vulkan_int8_weights` a conv and a two-layer MLP quantized by ExecuTorch's VulkanQuantizer
                       (weight-only int8): int8 weights prepacked for `_weight_int8pack_mm`

Every path handed to the toolchain is relative (the build runs inside the output folder), so no
machine path ends up in the files; the script checks that. Each program's memory plan, as
ExecuTorch planned it, is recorded beside it (`<name>.memory.json`, examples/memory_plan.py), and
so are the nodes the partitioner refused with the reason it logged (`<name>.vulkan_skips.json`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from examples import memory_plan
from examples.common import ABS_PATH_RE, HERE, REPO
from examples.models import SEED


def _cnn_island():  # type: ignore[no-untyped-def]
    import torch

    from examples.models.gpu import CnnIsland

    torch.manual_seed(SEED)
    return CnnIsland().eval(), (torch.randn(1, 3, 16, 16),), {}, None


def _mv2():  # type: ignore[no-untyped-def]
    import torch

    from examples.models.mobilenet import mobilenet_v2_classes

    model = mobilenet_v2_classes(0.35, 10)
    return model, (torch.randn(1, 3, 96, 96),), {"force_fp16": True}, None


def _transformer():  # type: ignore[no-untyped-def]
    import torch

    from examples.models.gpu import Block

    torch.manual_seed(SEED)
    # The token count is dynamic (2 to 16): sizes become symbolic ints in the payload.
    tokens = torch.export.Dim("tokens", min=2, max=16)
    return Block().eval(), (torch.randn(1, 16, 32),), {}, {"x": {1: tokens}}


def _int8_weights():  # type: ignore[no-untyped-def]
    import torch
    from executorch.backends.vulkan.quantizer.vulkan_quantizer import (
        VulkanQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from examples.models.gpu import ConvMlp

    torch.manual_seed(SEED)
    example = (torch.randn(1, 3, 16, 16),)
    graph = torch.export.export(ConvMlp().eval(), example).module()
    # Weight-only int8 (the quantizer's static configuration): the linear layers' weights.
    quantizer = VulkanQuantizer().set_global(get_symmetric_quantization_config(is_dynamic=False))
    graph = prepare_pt2e(graph, quantizer)
    calibration = torch.Generator().manual_seed(SEED)
    for _ in range(4):
        graph(torch.randn(1, 3, 16, 16, generator=calibration))
    return convert_pt2e(graph), example, {}, None


MODELS: dict[str, Callable] = {  # type: ignore[type-arg]
    "vulkan_cnn_island": _cnn_island,
    "vulkan_mv2": _mv2,
    "vulkan_transformer": _transformer,
    "vulkan_int8_weights": _int8_weights,
}


def build(name: str) -> list[str]:
    """Lower one example into the current folder (this process builds only this one)."""
    import torch
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    model, example, options, dynamic = MODELS[name]()
    path = f"{name}.pte"
    if os.path.exists(path):
        os.remove(path)
    ep = torch.export.export(model, example, dynamic_shapes=dynamic)
    with memory_plan.recording(), captured_skips(name):
        prog = to_edge_transform_and_lower(
            ep, partitioner=[VulkanPartitioner(options)]
        ).to_executorch()
        with open(path, "wb") as f:
            prog.write_to_file(f)
        memory_plan.write(prog, name)
    return [path, f"{name}.memory.json", f"{name}.vulkan_skips.json"]


@contextlib.contextmanager
def captured_skips(name: str) -> Iterator[None]:
    """Record every node the Vulkan partitioner refused, with the reason it logs
    (`VulkanSupportedOperators.log_skip`), into `<name>.vulkan_skips.json`: the partitioner's own
    words, which the adapter's reasons (from the `.pte` alone) are tested against."""
    from importlib import metadata

    from executorch.backends.vulkan.partitioner import vulkan_partitioner as vp

    skips: list[dict[str, str]] = []
    original = vp.VulkanSupportedOperators.log_skip

    def log_skip(self: Any, node: Any, reason: str) -> None:
        if node.op == "call_function":
            target = getattr(node.target, "__name__", str(node.target))
            skips.append({"node": node.name, "target": target, "reason": reason})
        original(self, node, reason)

    vp.VulkanSupportedOperators.log_skip = log_skip  # type: ignore[method-assign]
    try:
        yield
    finally:
        vp.VulkanSupportedOperators.log_skip = original  # type: ignore[method-assign]
    doc = {
        "generator": "examples/build_vulkan_examples.py (VulkanSupportedOperators.log_skip)",
        "executorch": metadata.version("executorch"),
        "skips": skips,
    }
    with open(f"{name}.vulkan_skips.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(HERE))
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), default=None)
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
    for name in args.only or list(MODELS):
        # One fresh process per example, hash seed fixed: the same environment, the same bytes.
        env = dict(os.environ, PYTHONHASHSEED="0")
        cmd = [sys.executable, "-m", "examples.build_vulkan_examples", "--one", name]
        cmd += ["--out", str(Path.cwd())]
        if subprocess.run(cmd, env=env, cwd=REPO).returncode != 0:
            sys.exit(f"{name}: the build failed")


if __name__ == "__main__":
    main()
