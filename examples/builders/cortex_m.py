"""Ethos-U examples with Arm's Cortex-M CPU fallback: the operators kept off the NPU lowered to
cortex_m:: kernels (CortexMPassManager, ReplaceQuantNodesPass), with ETRecords and the
partitioner's own report."""

from __future__ import annotations

import torch

from examples.common import example, inputs, prune_artifacts, reset_outputs, write_pte
from examples.etrecords import captured_partition_rejections, save_etrecord
from examples.lowering import arm_partition_report, ethosu_spec, not_linear_check, quantize_pt2e
from examples.models import seeded
from examples.models.small import Classifier, ConvHead, ConvLrn


@example(
    "convnet_cortex_m_ethosu85",
    "ethos-u",
    "Small conv net, INT8 with weights quantized per tensor, on Ethos-U85-256; its Linear "
    "head kept off the NPU (partitioner additional_checks) and lowered for Arm's Cortex-M "
    "CPU fallback (CortexMPassManager, Cortex-M55): "
    "cortex_m::quantized_linear and cortex_m:: quantize/dequantize kernels on the CPU; "
    "TOSA in convnet_cortex_m_ethosu85_artifacts/.",
)
def build_convnet_cortex_m_ethosu85():
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.cortex_m.passes import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    name, art = "convnet_cortex_m_ethosu85", "convnet_cortex_m_ethosu85_artifacts"
    reset_outputs(f"{name}.pte", art)
    spec = ethosu_spec("ethos-u85-256", art)
    quantizer = EthosUQuantizer(spec)
    # Per tensor: the Cortex-M linear rewrite rejects per-channel weights.
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=False))
    example_inputs = (torch.randn(1, 3, 16, 16),)
    qep = quantize_pt2e(seeded(ConvHead), example_inputs, quantizer, inputs((1, 3, 16, 16), 4))
    partitioner = EthosUPartitioner(spec, additional_checks=[not_linear_check()])
    edge = to_edge_transform_and_lower(
        qep, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    # The pass manager first folds the CPU-side dq -> linear -> q into qparams on the linear, then
    # replaces the remaining quantize/dequantize with cortex_m:: kernels (its own
    # ReplaceQuantNodesPass) and the linear with cortex_m::quantized_linear. Running
    # ReplaceQuantNodesPass on its own first (edge.transform) would turn those q/dq into
    # cortex_m:: kernels before the fold, and the linear would stay aten::linear.
    target = CortexMTargetConfig(cpu=CortexM.M55)
    edge._edge_programs["forward"] = CortexMPassManager(
        edge.exported_program(), target_config=target
    ).transform()
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [write_pte(prog, name)]
    prune_artifacts(art)
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "ConvHead",
            "input": [1, 3, 16, 16],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (CortexMPassManager, Cortex-M55)",
            "kept_off_npu": "aten.linear (partitioner additional_checks)",
            "extract_delegate_segments": False,
        },
    }


def _cortex_m_example(name, model, shape, *, checks, passes):
    """INT8 per tensor for Ethos-U85-256 with the ETRecord recorded before lowering (the edge
    program the Inspector joins), then Arm's CPU fallback: `passes` (callable on the edge
    manager) after lowering, `delegation_info.txt` written by Arm's compiler script."""
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.arm.scripts.aot_arm_compiler import dump_delegation_info
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    art = f"{name}_artifacts"
    reset_outputs(f"{name}.pte", art, f"{name}.etrecord", f"{name}.rejections.json")
    spec = ethosu_spec("ethos-u85-256", art)
    quantizer = EthosUQuantizer(spec)
    # Per tensor: the Cortex-M linear rewrite rejects per-channel weights.
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=False))
    example_inputs = (torch.randn(*shape),)
    qep = quantize_pt2e(seeded(model), example_inputs, quantizer, inputs(shape, 4))
    partitioner = EthosUPartitioner(spec, additional_checks=checks)
    with captured_partition_rejections() as rejections, arm_partition_report():
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=True,
        )
    edge = passes(edge)
    dump_delegation_info(edge, art)
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [write_pte(prog, name)]
    save_etrecord(prog, name, rejections)
    prune_artifacts(art)
    return [*files, f"{name}.etrecord", f"{name}.rejections.json"], art, spec


@example(
    "classifier_cortex_m_ethosu85",
    "ethos-u",
    "Small conv classifier, INT8 per tensor, on Ethos-U85-256; its two Linear layers kept off "
    "the NPU by a partitioner check (additional_checks) and lowered by CortexMPassManager "
    "(Cortex-M55) to cortex_m::quantized_linear; with its ETRecord (recorded before those "
    "passes) and the partitioner's partition_report.txt in classifier_cortex_m_ethosu85_artifacts/.",
)
def build_classifier_cortex_m_ethosu85():
    from executorch.backends.cortex_m.passes import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig

    def cortex_m_passes(edge):
        target = CortexMTargetConfig(cpu=CortexM.M55)
        edge._edge_programs["forward"] = CortexMPassManager(
            edge.exported_program(), target_config=target
        ).transform()
        return edge

    name = "classifier_cortex_m_ethosu85"
    files, art, spec = _cortex_m_example(
        name, Classifier, (1, 3, 8, 8), checks=[not_linear_check()], passes=cortex_m_passes
    )
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "Classifier",
            "input": [1, 3, 8, 8],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (CortexMPassManager, Cortex-M55)",
            "kept_off_npu": "aten.linear (partitioner additional_checks: NotLinear)",
            "etrecord": "generate_etrecord=True (edge program before partitioning and passes)",
            "extract_delegate_segments": False,
        },
    }


@example(
    "lrn_cortex_m_qdq_ethosu85",
    "ethos-u",
    "Conv, LocalResponseNorm, conv, INT8 per tensor, on Ethos-U85-256, lowered as "
    "aot_arm_compiler.py lowers for Ethos-U: ReplaceQuantNodesPass turns the CPU's "
    "quantize/dequantize into cortex_m:: kernels, the LRN's decomposition stays aten:: on the "
    "CPU; with its ETRecord and the partitioner's partition_report.txt.",
)
def build_lrn_cortex_m_qdq_ethosu85():
    from executorch.backends.cortex_m.passes import ReplaceQuantNodesPass

    name = "lrn_cortex_m_qdq_ethosu85"
    files, art, spec = _cortex_m_example(
        name,
        ConvLrn,
        (1, 3, 8, 8),
        checks=[],
        passes=lambda edge: edge.transform([ReplaceQuantNodesPass()]),
    )
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "ConvLrn",
            "input": [1, 3, 8, 8],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (ReplaceQuantNodesPass, as aot_arm_compiler.py)",
            "etrecord": "generate_etrecord=True (edge program before partitioning and passes)",
            "extract_delegate_segments": False,
        },
    }
