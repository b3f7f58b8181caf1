#!/usr/bin/env python3
"""Build the VGF examples: models lowered to ExecuTorch's VGF backend (Arm ML SDK for Vulkan).

The VGF backend turns each partition into TOSA and hands it to Arm's `model-converter`, which writes
a `.vgf` container (SPIR-V modules + model sequence + resource table + constants); the `.pte`
stores that container as the delegate payload (backend id `VgfBackend`). Each example also keeps
the TOSA file the converter was given (`<name>_artifacts/output_<tag>.tosa`): the tests compare
the operators decoded from the SPIR-V with it, operator for operator.

`model-converter` is a test dependency of this project (`ai-ml-sdk-model-converter`, pinned in
pyproject's test extra; ExecuTorch's `vgf` extra pins 0.10.0, whose binary needs a newer glibc than
Debian 12, 0.11.0 works). The backend finds it on PATH or through MODEL_CONVERTER_PATH:

    python -m examples.build_vgf_example [--out examples] [--only vgf_mv2_int ...]

The examples (random, seeded weights; models in plain torch.nn):

- `vgf_small`        small CNN, INT8 (`TOSA-1.0+INT`), payload in a delegate segment
- `vgf_small_fp`     the same CNN in float (`TOSA-1.0+FP`), payload inline in the program
- `vgf_mv2_int`      MobileNetV2 (width 0.35, 10 classes), INT8, payload inline
- `vgf_mv2_fp`       MobileNetV2 (width 0.25, 10 classes), float, payload in a segment
- `vgf_grid_sample`  conv -> grid_sample -> conv in float: the VGF backend lowers grid_sample to a
                     Vulkan compute shader, so the payload has graph, compute, graph segments

Every path handed to the toolchain is relative (the build runs inside the output folder), so no
machine path ends up in the files; the script checks that.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from examples import memory_plan
from examples.common import ABS_PATH_RE, HERE
from examples.models import SEED
from examples.models.mobilenet import mobilenet_v2_classes
from examples.models.vgf import GridSampleNet, SmallNet


def _mv2(width: float) -> torch.nn.Module:
    return mobilenet_v2_classes(width, 10)


def _small() -> torch.nn.Module:
    torch.manual_seed(0)
    return SmallNet().eval()


def _grid_sample() -> torch.nn.Module:
    torch.manual_seed(SEED)
    return GridSampleNet().eval()


Make = Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]


def _lower(
    name: str,
    make: Make,
    *,
    fp: bool,
    segments: bool,
    record_artifact_path: bool = True,
) -> list[str]:
    """Lower `model` to `<name>.pte`, keeping the TOSA the converter read in `<name>_artifacts/`.

    With `record_artifact_path=False` the program is lowered a second time without the artifact
    folder, whose name the compile specs would otherwise store in the `.pte`; the delegate payload
    must come out byte-identical (checked), so the kept `.tosa` is still its converter input.
    """
    files = _lower_once(name, *make(), fp=fp, segments=segments, artifacts=True)
    if record_artifact_path:
        return files
    with_path = _payloads(files[0])
    _lower_once(name, *make(), fp=fp, segments=segments, artifacts=False)
    if _payloads(files[0]) != with_path:
        sys.exit(f"{name}: the payload changes with the artifact folder; keep the path")
    return files


def _payloads(path: str) -> list[bytes]:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(Path(path).read_bytes()).program
    return [bytes(d.data) for d in program.backend_delegate_data]


def _lower_once(
    name: str,
    model: torch.nn.Module,
    example: tuple[torch.Tensor, ...],
    *,
    fp: bool,
    segments: bool,
    artifacts: bool,
) -> list[str]:
    from executorch.backends.arm.quantizer import VgfQuantizer, get_symmetric_quantization_config
    from executorch.backends.arm.vgf import VgfCompileSpec, VgfPartitioner
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    art = f"{name}_artifacts"
    for p in (f"{name}.pte", art) if artifacts else (f"{name}.pte",):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    spec = VgfCompileSpec("TOSA-1.0+FP" if fp else "TOSA-1.0+INT")
    if artifacts:
        spec.dump_intermediate_artifacts_to(art)
    if fp:
        ep = torch.export.export(model, example)
    else:
        graph = torch.export.export(model, example).module(check_guards=False)
        quantizer = VgfQuantizer(spec).set_global(
            get_symmetric_quantization_config(is_per_channel=True)
        )
        graph = prepare_pt2e(graph, quantizer)
        # vgf_small (the first example, whose bytes the fuzz regressions point into) calibrates
        # from the global generator, seeded with its model; the others from their own.
        gen = None if name == "vgf_small" else torch.Generator().manual_seed(SEED)
        for _ in range(4):
            graph(*(torch.randn(t.shape, generator=gen) for t in example))
        ep = torch.export.export(convert_pt2e(graph), example)
    with memory_plan.recording():
        prog = to_edge_transform_and_lower(
            ep,
            partitioner=[VgfPartitioner(spec)],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
        ).to_executorch(ExecutorchBackendConfig(extract_delegate_segments=segments))
        path = f"{name}.pte"
        with open(path, "wb") as f:
            prog.write_to_file(f)
        # ExecuTorch's own memory plan beside it (the oracle of the memory picture).
        memory_plan.write(prog, name)
    if not artifacts:
        return [path]
    # Keep the converter's input (.tosa); its output (.tosa.vgf) is the payload itself.
    for f in sorted(Path(art).glob("*")):
        if f.suffix != ".tosa":
            f.unlink()
    return [path, *sorted(str(f) for f in Path(art).glob("*.tosa"))]


def _grid(n: int, h: int, w: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(SEED)
    return torch.rand(n, h, w, 2, generator=g) * 2 - 1


EXAMPLES: dict[str, Callable[[], list[str]]] = {
    # The first VGF example, committed before the .tosa was kept (the fuzz regressions point into
    # its bytes): its program does not name the artifact folder.
    "vgf_small": lambda: _lower(
        "vgf_small",
        lambda: (_small(), (torch.randn(1, 3, 16, 16),)),
        fp=False,
        segments=True,
        record_artifact_path=False,
    ),
    "vgf_small_fp": lambda: _lower(
        "vgf_small_fp",
        lambda: (_small(), (torch.randn(1, 3, 16, 16),)),
        fp=True,
        segments=False,
    ),
    "vgf_mv2_int": lambda: _lower(
        "vgf_mv2_int",
        lambda: (_mv2(0.35), (torch.randn(1, 3, 96, 96),)),
        fp=False,
        segments=False,
    ),
    "vgf_mv2_fp": lambda: _lower(
        "vgf_mv2_fp",
        lambda: (_mv2(0.25), (torch.randn(1, 3, 96, 96),)),
        fp=True,
        segments=True,
    ),
    "vgf_grid_sample": lambda: _lower(
        "vgf_grid_sample",
        lambda: (_grid_sample(), (torch.randn(1, 3, 16, 16), _grid(1, 12, 12))),
        fp=True,
        segments=True,
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(HERE))
    ap.add_argument("--only", nargs="*", choices=sorted(EXAMPLES), default=None)
    args = ap.parse_args()
    if not os.environ.get("MODEL_CONVERTER_PATH") and not shutil.which("model-converter"):
        sys.exit("model-converter not found: pip install ai-ml-sdk-model-converter==0.11.0")
    args.out.mkdir(parents=True, exist_ok=True)
    os.chdir(args.out)
    for name in args.only or list(EXAMPLES):
        files = EXAMPLES[name]()
        for f in files:
            if ABS_PATH_RE.search(Path(f).read_bytes()):
                sys.exit(f"{f} contains an absolute machine path")
            print(f"{f}\t{Path(f).stat().st_size} bytes")


if __name__ == "__main__":
    main()
