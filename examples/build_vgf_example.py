#!/usr/bin/env python3
"""Build `vgf_small.pte`: a small CNN lowered to ExecuTorch's VGF backend (Arm ML SDK for Vulkan).

The VGF backend turns each partition into TOSA and hands it to Arm's `model-converter`, which writes
a `.vgf` container (SPIR-V graph module + model sequence + resource table + constants); the `.pte`
stores that container as the delegate payload (backend id `VgfBackend`).

`model-converter` is not a dependency of this project. ExecuTorch's `vgf` extra pins 0.10.0, whose
binary needs a newer glibc than Debian 12; 0.11.0 (manylinux_2_28) works. Point the backend at it:

    pip install --target /tmp/mc ai-ml-sdk-model-converter==0.11.0
    MODEL_CONVERTER_PATH=/tmp/mc/model_converter/binaries/bin/model-converter \\
        python examples/build_vgf_example.py [--out examples] [--fp]

Weights are random and seeded. Default is an INT8-quantized model (`TOSA-1.0+INT`); `--fp` builds
a float one (`TOSA-1.0+FP`) instead, written as `vgf_small_fp.pte`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch


class SmallNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y)) + y
        return self.fc(torch.flatten(self.pool(y), 1))


def build(out: Path, fp: bool) -> Path:
    from executorch.backends.arm.quantizer import VgfQuantizer, get_symmetric_quantization_config
    from executorch.backends.arm.vgf import VgfCompileSpec, VgfPartitioner
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    torch.manual_seed(0)
    model = SmallNet().eval()
    example = (torch.randn(1, 3, 16, 16),)
    spec = VgfCompileSpec("TOSA-1.0+FP" if fp else "TOSA-1.0+INT")
    if fp:
        ep = torch.export.export(model, example)
    else:
        graph = torch.export.export(model, example).module(check_guards=False)
        quantizer = VgfQuantizer(spec).set_global(
            get_symmetric_quantization_config(is_per_channel=True)
        )
        graph = prepare_pt2e(graph, quantizer)
        for _ in range(4):
            graph(torch.randn(1, 3, 16, 16))
        ep = torch.export.export(convert_pt2e(graph), example)
    memory_plan = _memory_plan()
    with memory_plan.recording():
        prog = to_edge_transform_and_lower(
            ep,
            partitioner=[VgfPartitioner(spec)],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
        ).to_executorch(ExecutorchBackendConfig(extract_delegate_segments=True))
        path = out / ("vgf_small_fp.pte" if fp else "vgf_small.pte")
        path.write_bytes(prog.buffer)
        # ExecuTorch's own memory plan beside it (the oracle of the memory picture).
        memory_plan.write(prog, str(path.with_suffix("")))
    return path


def _memory_plan():  # type: ignore[no-untyped-def]
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import memory_plan  # beside this script

    return memory_plan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--fp", action="store_true", help="float model instead of INT8")
    args = ap.parse_args()
    if not os.environ.get("MODEL_CONVERTER_PATH"):
        print("note: MODEL_CONVERTER_PATH is not set; relying on model-converter on PATH")
    print(build(args.out, args.fp))


if __name__ == "__main__":
    main()
