"""Programs whose ETRecords keep every graph the export made: the exported program (ATen), the edge
program and a graph-map entry (`edge_after_transform`, recorded because the export ran a transform
pass), with representative inputs. They are the examples of the ETRecord's graphs in Model Explorer
and of the sync mapping (`pte-adapter sync`), and they run in ExecuTorch's Python runtime, so the
Inspector's own pairing of runtime and AOT outputs is their oracle."""

from __future__ import annotations

import torch

from examples.common import example, inputs, reset_outputs, write_pte
from examples.etrecords import (
    captured_partition_rejections,
    sanitized_tosa_debug_info,
    save_etrecord,
)
from examples.lowering import arm_lower, quantize_pt2e
from examples.models import seeded
from examples.models.small import CumsumNet, SmallNet

SHAPE = (1, 3, 32, 32)


def _identity_pass():
    """A transform pass that changes nothing: running one makes the export record the edge
    program after the transform passes in the ETRecord's graph map (`edge_after_transform`)."""
    from executorch.exir.pass_base import ExportPass

    class KeepGraph(ExportPass):
        pass

    return KeepGraph()


def _build(name: str, *, quantize: bool) -> dict:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    model = seeded(CumsumNet)
    example_inputs = inputs(SHAPE)[0]
    if quantize:
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )

        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
        ep = quantize_pt2e(model, example_inputs, q, inputs(SHAPE, 4))
    else:
        ep = torch.export.export(model, example_inputs)
    with captured_partition_rejections() as rejections:
        edge = to_edge_transform_and_lower(
            ep,
            transform_passes=[_identity_pass()],
            partitioner=[XnnpackPartitioner()],
            generate_etrecord=True,
        )
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=True))
    save_etrecord(
        prog, name, rejections, keep_exported=True, representative_inputs=[example_inputs]
    )
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"],
        "sidecars": [],
        "settings": {
            "model": "CumsumNet",
            "input": list(SHAPE),
            "dtype": "int8" if quantize else "fp32",
            "etrecord": "exported program, edge program, graph map (edge_after_transform), "
            "representative inputs",
        },
    }


@example(
    "sync_xnnpack",
    "xnnpack",
    "Small nested CNN fp32 on XNNPACK with a running sum (cumsum, mix) and the final mean the CPU "
    "runs between three partitions; runs in the pip runtime. Its ETRecord keeps the exported program (ATen), the "
    "edge program and a graph-map entry (edge_after_transform) with representative inputs: the "
    "example of the ETRecord's graphs in Model Explorer and of `pte-adapter sync`.",
)
def build_sync_xnnpack():
    return _build("sync_xnnpack", quantize=False)


@example(
    "sync_xnnpack_int8",
    "xnnpack",
    "sync_xnnpack quantized INT8 (PT2E, XNNPACKQuantizer): a quantize/dequantize pair the last "
    "partition absorbs shares a debug handle with the CPU mean before it, so the Inspector pairs "
    "that kernel and that partition as one runtime step; the same full ETRecord.",
)
def build_sync_xnnpack_int8():
    return _build("sync_xnnpack_int8", quantize=True)


@example(
    "sync_tosa_debug",
    "tosa",
    "Small nested CNN lowered with the TOSA backend and DebugMode.TOSA (each TOSA operator's "
    "location names the FX node it came from), with an ETRecord keeping the exported program: "
    "the sync mapping links the decoded TOSA operators to their nodes through that debug info.",
)
def build_sync_tosa_debug():
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    name, art = "sync_tosa_debug", "sync_tosa_debug_artifacts"
    reset_outputs(f"{name}.pte", art, f"{name}.etrecord", f"{name}.rejections.json")
    spec = TosaCompileSpec("TOSA-1.0+INT")
    spec.dump_intermediate_artifacts_to(art)
    spec.dump_debug_info(ArmCompileSpec.DebugMode.TOSA)
    with sanitized_tosa_debug_info():
        prog = arm_lower(
            seeded(SmallNet),
            inputs(SHAPE)[0],
            spec,
            backend="tosa",
            extract_delegate_segments=False,
            etrecord=name,
            keep_exported=True,
        )
    # Everything is on the TOSA backend but its (de)quantize glue: no reason to keep.
    reset_outputs(f"{name}.rejections.json")
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord"],
        "sidecars": [art],
        "settings": {
            "model": "SmallNet",
            "input": list(SHAPE),
            "tosa_spec": "TOSA-1.0+INT",
            "debug_mode": "TOSA",
            "etrecord": "exported program, edge program",
        },
    }
