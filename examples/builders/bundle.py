"""A BundledProgram (``.bpte``) as Arm's aot_arm_compiler.py --bundleio writes it."""

from __future__ import annotations

from examples.common import example, inputs, record_memory_plan, reset_outputs
from examples.etrecords import save_arm_etrecord
from examples.lowering import ethosu_spec, quantize_pt2e
from examples.models import seeded
from examples.models.small import BundleNet


@example(
    "bundle_ethosu55",
    "bundle",
    "BundledProgram (.bpte) as Arm's aot_arm_compiler.py --bundleio writes it for Corstone-300 "
    "(Cortex-M55 + Ethos-U55-128): a small INT8 conv net delegated to the Ethos-U55, the "
    "quantize/dequantize left on the CPU replaced by cortex_m:: kernels (ReplaceQuantNodesPass), "
    "one bundled test case per method (the example input, the quantized model's output); "
    "bundle_ethosu55_etrecord.bin is Arm's ETRecord name. bundle_ethosu55_as_pte.pte is the same "
    "bytes under a .pte name, as older examples saved bundles.",
)
def build_bundle_ethosu55():
    name = "bundle_ethosu55"
    bpte, as_pte, etrecord = f"{name}.bpte", f"{name}_as_pte.pte", f"{name}_etrecord.bin"
    reset_outputs(bpte, as_pte, etrecord)
    spec = ethosu_spec("ethos-u55-128", None)
    example_inputs = inputs((1, 3, 16, 16))[0]
    qep, edge, prog = _lower_for_corstone_300(spec, example_inputs)
    data = _bundle(prog, qep, example_inputs)
    for path in (bpte, as_pte):
        with open(path, "wb") as f:
            f.write(data)
    record_memory_plan(prog, f"{name}_as_pte")  # the bundle's program is `prog`'s, byte for byte
    save_arm_etrecord(edge, prog, etrecord)
    return {
        "files": [bpte, as_pte, etrecord],
        "sidecars": [],
        "settings": {
            "model": "BundleNet",
            "input": [1, 3, 16, 16],
            "target": "ethos-u55-128",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m quantize/dequantize (ReplaceQuantNodesPass)",
            "bundled_test_cases": 1,
            "extract_delegate_segments": False,
        },
    }


def _lower_for_corstone_300(spec, example_inputs):
    """BundleNet quantized (INT8 per channel), lowered to the Ethos-U55 with the CPU's
    quantize/dequantize replaced by cortex_m:: kernels: (quantized program, edge, program)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.cortex_m.passes.replace_quant_nodes_pass import (
        ReplaceQuantNodesPass,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    qep = quantize_pt2e(seeded(BundleNet), example_inputs, quantizer, [example_inputs])
    edge = to_edge_transform_and_lower(
        qep,
        partitioner=[EthosUPartitioner(spec)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    edge = edge.transform([ReplaceQuantNodesPass()])  # _apply_replace_quant_nodes
    prog = edge.to_executorch(config=ExecutorchBackendConfig(extract_delegate_segments=False))
    return qep, edge, prog


def _bundle(prog, qep, example_inputs) -> bytes:
    """_save_bpte_program: per method, one case of the example input and the reference output of
    the quantized model ("Realize the quantization impact on numerics")."""
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    reference = qep.module(check_guards=False)
    suites = [
        MethodTestSuite(
            method_name=plan.name,
            test_cases=[
                MethodTestCase(inputs=example_inputs, expected_outputs=reference(*example_inputs))
            ],
        )
        for plan in prog.executorch_program.execution_plan
    ]
    return serialize_from_bundled_program_to_flatbuffer(BundledProgram(prog, suites))
