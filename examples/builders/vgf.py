"""VGF examples: models lowered to ExecuTorch's VGF backend (Arm ML SDK for Vulkan).

The VGF backend turns each partition into TOSA and hands it to Arm's `model-converter`, which writes
a `.vgf` container (SPIR-V modules + model sequence + resource table + constants); the `.pte`
stores that container as the delegate payload (backend id `VgfBackend`). Each example also keeps
the TOSA file the converter was given (`<name>_artifacts/output_<tag>.tosa`): the tests compare
the operators decoded from the SPIR-V with it, operator for operator.

`model-converter` is a test dependency of this project (`ai-ml-sdk-model-converter`, pinned in
pyproject's test extra; ExecuTorch's `vgf` extra pins 0.10.0, whose binary needs a newer glibc than
Debian 12, 0.11.0 works). The backend finds it on PATH or through MODEL_CONVERTER_PATH.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import torch

from examples.common import example, reset_outputs, write_pte
from examples.models import SEED
from examples.models.mobilenet import mobilenet_v2_classes
from examples.models.vgf import GridSampleNet, SmallNet

Make = Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]


def vgf_example(
    name: str,
    make: Make,
    settings: dict,
    *,
    fp: bool,
    segments: bool,
    record_artifact_path: bool = True,
) -> dict:
    """The model ``make()`` gives lowered to ``<name>.pte`` (``fp``: TOSA-1.0+FP, else INT8 by
    the VgfQuantizer), keeping the TOSA the converter read in ``<name>_artifacts/``.

    With ``record_artifact_path=False`` the program is lowered a second time without the artifact
    folder, whose name the compile specs would otherwise store in the ``.pte``; the delegate
    payload must come out byte-identical (checked), so the kept ``.tosa`` is still its converter
    input.
    """
    if not os.environ.get("MODEL_CONVERTER_PATH") and not shutil.which("model-converter"):
        raise RuntimeError("no model-converter: pip install ai-ml-sdk-model-converter==0.11.0")
    art = f"{name}_artifacts"
    reset_outputs(f"{name}.pte", art)
    spec = _lower(name, *make(), fp=fp, segments=segments, artifacts=art)
    # Keep the converter's input (.tosa); its output (.tosa.vgf) is the payload itself.
    for f in sorted(Path(art).glob("*")):
        if f.suffix != ".tosa":
            f.unlink()
    if not record_artifact_path:
        with_path = _payloads(f"{name}.pte")
        _lower(name, *make(), fp=fp, segments=segments, artifacts=None)
        if _payloads(f"{name}.pte") != with_path:
            raise RuntimeError(f"{name}: the payload changes with the artifact folder")
    return {
        "files": [f"{name}.pte"],
        "sidecars": [art],
        "settings": {
            **settings,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": None if fp else "INT8 per-channel symmetric (VgfQuantizer)",
            "extract_delegate_segments": segments,
            "artifact_path_recorded": record_artifact_path,
        },
    }


def _payloads(path: str) -> list[bytes]:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(Path(path).read_bytes()).program
    return [bytes(d.data) for d in program.backend_delegate_data]


def _lower(
    name: str,
    model: torch.nn.Module,
    example_inputs: tuple[torch.Tensor, ...],
    *,
    fp: bool,
    segments: bool,
    artifacts: str | None,
):
    """``<name>.pte`` (and its memory plan); the compile spec it was lowered with."""
    from executorch.backends.arm.quantizer import VgfQuantizer, get_symmetric_quantization_config
    from executorch.backends.arm.vgf import VgfCompileSpec, VgfPartitioner
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = VgfCompileSpec("TOSA-1.0+FP" if fp else "TOSA-1.0+INT")
    if artifacts:
        spec.dump_intermediate_artifacts_to(artifacts)  # relative: stored in the .pte
    if fp:
        ep = torch.export.export(model, example_inputs)
    else:
        graph = torch.export.export(model, example_inputs).module(check_guards=False)
        quantizer = VgfQuantizer(spec).set_global(
            get_symmetric_quantization_config(is_per_channel=True)
        )
        graph = prepare_pt2e(graph, quantizer)
        # vgf_small (the first example, whose bytes the fuzz regressions point into) calibrates
        # from the global generator, seeded with its model; the others from their own.
        gen = None if name == "vgf_small" else torch.Generator().manual_seed(SEED)
        for _ in range(4):
            graph(*(torch.randn(t.shape, generator=gen) for t in example_inputs))
        ep = torch.export.export(convert_pt2e(graph), example_inputs)
    prog = to_edge_transform_and_lower(
        ep,
        partitioner=[VgfPartitioner(spec)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    ).to_executorch(ExecutorchBackendConfig(extract_delegate_segments=segments))
    write_pte(prog, name)
    return spec


def _small() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return SmallNet().eval(), (torch.randn(1, 3, 16, 16),)


def _mv2(width: float) -> Make:
    return lambda: (mobilenet_v2_classes(width, 10), (torch.randn(1, 3, 96, 96),))


def _grid_sample() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(SEED)
    model = GridSampleNet().eval()
    grid = torch.rand(1, 12, 12, 2, generator=torch.Generator().manual_seed(SEED)) * 2 - 1
    return model, (torch.randn(1, 3, 16, 16), grid)


SMALL = {"model": "SmallNet", "input": [1, 3, 16, 16]}


@example(
    "vgf_small",
    "vgf",
    "Small CNN, INT8 (TOSA-1.0+INT), on the VGF backend; payload (a .vgf container: SPIR-V "
    "modules, model sequence, resources, constants) in a delegate segment. The first VGF "
    "example: its program does not name the artifact folder (the fuzz regressions point into "
    "its bytes); the converter's TOSA in vgf_small_artifacts/.",
)
def build_vgf_small():
    return vgf_example(
        "vgf_small", _small, SMALL, fp=False, segments=True, record_artifact_path=False
    )


@example(
    "vgf_small_fp",
    "vgf",
    "The same small CNN in float (TOSA-1.0+FP) on the VGF backend; payload inline in the "
    "program; the converter's TOSA in vgf_small_fp_artifacts/.",
)
def build_vgf_small_fp():
    return vgf_example("vgf_small_fp", _small, SMALL, fp=True, segments=False)


@example(
    "vgf_mv2_int",
    "vgf",
    "MobileNetV2 0.35/96 (10 classes), INT8, on the VGF backend; payload inline; the "
    "converter's TOSA in vgf_mv2_int_artifacts/.",
)
def build_vgf_mv2_int():
    settings = {"model": "MobileNetV2", "width_mult": 0.35, "classes": 10, "input": [1, 3, 96, 96]}
    return vgf_example("vgf_mv2_int", _mv2(0.35), settings, fp=False, segments=False)


@example(
    "vgf_mv2_fp",
    "vgf",
    "MobileNetV2 0.25/96 (10 classes), float, on the VGF backend; payload in a segment; the "
    "converter's TOSA in vgf_mv2_fp_artifacts/.",
)
def build_vgf_mv2_fp():
    settings = {"model": "MobileNetV2", "width_mult": 0.25, "classes": 10, "input": [1, 3, 96, 96]}
    return vgf_example("vgf_mv2_fp", _mv2(0.25), settings, fp=True, segments=True)


@example(
    "vgf_grid_sample",
    "vgf",
    "conv -> grid_sample -> conv in float on the VGF backend, which lowers grid_sample to a "
    "Vulkan compute shader: the payload has graph, compute, graph segments; the converter's "
    "TOSA in vgf_grid_sample_artifacts/.",
)
def build_vgf_grid_sample():
    settings = {"model": "GridSampleNet", "input": [[1, 3, 16, 16], [1, 12, 12, 2]]}
    return vgf_example("vgf_grid_sample", _grid_sample, settings, fp=True, segments=True)
