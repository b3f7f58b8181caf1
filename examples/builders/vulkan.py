"""Vulkan examples: models lowered with ExecuTorch's own `VulkanPartitioner`.

The Vulkan backend (how ExecuTorch runs on Arm Mali and other mobile GPUs) serialises each partition
as a `VH00` header, a `VK00` FlatBuffer (`VkGraph`: an operator chain over a value table) and a
block of constant bytes. Lowering needs no GPU: the partitioner and `vulkan_preprocess` run on any
machine, so these are the real payloads a phone would load. Beside each program, the nodes the
partitioner refused with the reason it logged (`<name>.vulkan_skips.json`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import torch

from examples.common import example, reset_outputs, write_pte
from examples.models import SEED
from examples.models.gpu import Block, CnnIsland, ConvMlp
from examples.models.mobilenet import mobilenet_v2_classes


def vulkan_example(name: str, ep, settings: dict, options: dict | None = None) -> dict:
    """The exported program ``ep`` lowered with ``VulkanPartitioner(options)``: ``<name>.pte``
    and the partitioner's refusals in ``<name>.vulkan_skips.json``."""
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    reset_outputs(f"{name}.pte", f"{name}.vulkan_skips.json")
    with captured_skips(name):
        prog = to_edge_transform_and_lower(
            ep, partitioner=[VulkanPartitioner(options or {})]
        ).to_executorch()
    return {
        "files": [write_pte(prog, name), f"{name}.vulkan_skips.json"],
        "sidecars": [],
        "settings": {**settings, "compile_options": options or {}},
    }


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
        "generator": "examples/builders/vulkan.py (VulkanSupportedOperators.log_skip)",
        "executorch": metadata.version("executorch"),
        "skips": skips,
    }
    with open(f"{name}.vulkan_skips.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


@example(
    "vulkan_cnn_island",
    "vulkan",
    "Small CNN, float32, on Vulkan: three Vulkan partitions with two CPU islands between them, "
    "aten.log1p (not in the Vulkan operator registry) and the mean over H and W (refused by the "
    "registry's argument check); an upsampling by scale factors (a list of doubles); the "
    "partitioner's refusals in vulkan_cnn_island.vulkan_skips.json.",
)
def build_vulkan_cnn_island():
    torch.manual_seed(SEED)
    model, x = CnnIsland().eval(), torch.randn(1, 3, 16, 16)
    settings = {"model": "CnnIsland", "input": [1, 3, 16, 16], "dtype": "fp32"}
    return vulkan_example("vulkan_cnn_island", torch.export.export(model, (x,)), settings)


@example(
    "vulkan_mv2",
    "vulkan",
    "MobileNetV2 0.35/96 (10 classes) on Vulkan with force_fp16: float32 tensors held as "
    "float16 on the GPU (their staging dtype stays float32).",
)
def build_vulkan_mv2():
    model = mobilenet_v2_classes(0.35, 10)
    ep = torch.export.export(model, (torch.randn(1, 3, 96, 96),))
    settings = {"model": "MobileNetV2", "width_mult": 0.35, "classes": 10, "input": [1, 3, 96, 96]}
    return vulkan_example("vulkan_mv2", ep, settings, {"force_fp16": True})


@example(
    "vulkan_transformer",
    "vulkan",
    "One pre-norm transformer block (layer norm, 4-head self-attention, GELU MLP) over 2 to 16 "
    "tokens (a dynamic dimension: sizes become symbolic ints in the payload) of width 32, "
    "float32, on Vulkan.",
)
def build_vulkan_transformer():
    torch.manual_seed(SEED)
    model, x = Block().eval(), torch.randn(1, 16, 32)
    tokens = torch.export.Dim("tokens", min=2, max=16)
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {1: tokens}})
    settings = {"model": "Block", "input": [1, 16, 32], "dynamic": "dim 1 (tokens) 2..16"}
    return vulkan_example("vulkan_transformer", ep, settings)


@example(
    "vulkan_int8_weights",
    "vulkan",
    "A conv and a two-layer MLP quantized by ExecuTorch's VulkanQuantizer (weight-only int8): "
    "int8 weights prepacked for aten._weight_int8pack_mm; the mean on the CPU between two "
    "Vulkan partitions.",
)
def build_vulkan_int8_weights():
    from executorch.backends.vulkan.quantizer.vulkan_quantizer import (
        VulkanQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    torch.manual_seed(SEED)
    x = torch.randn(1, 3, 16, 16)
    graph = torch.export.export(ConvMlp().eval(), (x,)).module()
    # Weight-only int8 (the quantizer's static configuration): the linear layers' weights.
    quantizer = VulkanQuantizer().set_global(get_symmetric_quantization_config(is_dynamic=False))
    graph = prepare_pt2e(graph, quantizer)
    calibration = torch.Generator().manual_seed(SEED)
    for _ in range(4):
        graph(torch.randn(1, 3, 16, 16, generator=calibration))
    ep = torch.export.export(convert_pt2e(graph), (x,))
    settings = {
        "model": "ConvMlp",
        "input": [1, 3, 16, 16],
        "quantization": "weight-only INT8 (VulkanQuantizer, static symmetric)",
    }
    return vulkan_example("vulkan_int8_weights", ep, settings)
