"""TOSA backend examples: MobileNetV2 as a TOSA flatbuffer payload, and a small nested CNN with
DebugMode.TOSA locations (whose stack traces point into examples/models/)."""

from __future__ import annotations

import torch

from examples.common import example, reset_outputs, write_pte
from examples.etrecords import sanitized_tosa_debug_info
from examples.lowering import arm_lower
from examples.models import seeded
from examples.models.mobilenet import mobilenet_v2
from examples.models.small import SmallNet


@example(
    "mv2_tosa",
    "tosa",
    "MobileNetV2 0.35/128 INT8 lowered with the TOSA backend (TOSA-1.0+INT): the "
    "TOSABackend payload is a TOSA flatbuffer; the sidecar in mv2_tosa_artifacts/ is "
    "byte-identical to it.",
)
def build_mv2_tosa():
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    name, art = "mv2_tosa", "mv2_tosa_artifacts"
    reset_outputs(f"{name}.pte", art)
    spec = TosaCompileSpec("TOSA-1.0+INT")
    spec.dump_intermediate_artifacts_to(art)
    prog = arm_lower(
        mobilenet_v2(0.35),
        (torch.randn(1, 3, 128, 128),),
        spec,
        backend="tosa",
        extract_delegate_segments=True,
    )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [art],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.35,
            "input": [1, 3, 128, 128],
            "tosa_spec": "TOSA-1.0+INT",
            "extract_delegate_segments": True,
        },
    }


@example(
    "tosa_debug",
    "tosa",
    "Small nested CNN (features/0..2, head, skip, out) lowered with the TOSA backend and "
    "DebugMode.TOSA: every TOSA operator carries a JSON location (aten node, nn_module_stack, "
    "stack trace with <site-packages>/ relative paths); sidecar in tosa_debug_artifacts/.",
)
def build_tosa_debug():
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    name, art = "tosa_debug", "tosa_debug_artifacts"
    reset_outputs(f"{name}.pte", art)
    spec = TosaCompileSpec("TOSA-1.0+INT")
    spec.dump_intermediate_artifacts_to(art)
    spec.dump_debug_info(ArmCompileSpec.DebugMode.TOSA)
    with sanitized_tosa_debug_info():
        prog = arm_lower(
            seeded(SmallNet),
            (torch.randn(1, 3, 32, 32),),
            spec,
            backend="tosa",
            extract_delegate_segments=False,
        )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [art],
        "settings": {
            "model": "SmallNet",
            "input": [1, 3, 32, 32],
            "tosa_spec": "TOSA-1.0+INT",
            "debug_mode": "TOSA",
            "extract_delegate_segments": False,
            "note": "stack traces rewritten: site-packages -> <site-packages>/, "
            "repo root -> relative, stdlib -> <python>/; node_trace "
            "graph_id values (memory addresses) renumbered 0, 1, 2...",
        },
    }
