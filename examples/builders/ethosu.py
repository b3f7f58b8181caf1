"""Ethos-U examples: MobileNetV2 lowered to Ethos-U55/U85 (whole, split by LocalResponseNorm,
external weights, residual adds kept on the CPU), and small nets for Vela's memory modes and
scratch."""

from __future__ import annotations

import torch

from examples.common import example, prune_artifacts, reset_outputs, write_pte
from examples.lowering import arm_lower, ethosu_partitioner_checks, ethosu_spec, not_add_check
from examples.models import seeded
from examples.models.mobilenet import mobilenet_v2
from examples.models.small import MemoryModeNet, WideNet


def ethosu_example(
    name,
    *,
    width,
    res,
    target,
    lrn_after=(),
    keep_artifacts,
    segments,
    ptd_tag=None,
    etrecord=False,
):
    """MobileNetV2 ``width``/``res`` (LocalResponseNorm after ``lrn_after``) lowered to Ethos-U
    ``target``: ``<name>.pte``, with ``keep_artifacts`` its TOSA in ``<name>_artifacts/``, with
    ``ptd_tag`` Vela's weight_data block in ``<ptd_tag>.ptd``, with ``etrecord`` its ETRecord."""
    from executorch.backends.arm.ethosu import VelaExternalBlockPlacements

    art = f"{name}_artifacts"
    reset_outputs(
        f"{name}.pte",
        art,
        f"{ptd_tag}.ptd" if ptd_tag else "",
        f"{name}.etrecord",
        f"{name}.rejections.json",
    )
    kw = {}
    if ptd_tag:
        kw["external_block_placements"] = VelaExternalBlockPlacements(weight_data=ptd_tag)
    spec = ethosu_spec(target, art if keep_artifacts else None, **kw)
    model = mobilenet_v2(width, lrn_after)
    prog = arm_lower(
        model,
        (torch.randn(1, 3, res, res),),
        spec,
        backend="ethosu",
        extract_delegate_segments=segments,
        etrecord=name if etrecord else None,
    )
    files = [write_pte(prog, name)]
    if etrecord:
        files += [f"{name}.etrecord", f"{name}.rejections.json"]
    if ptd_tag:
        prog.write_tensor_data_to_file(".")
        files.append(f"{ptd_tag}.ptd")
    if keep_artifacts:
        prune_artifacts(art)
    settings = {
        "model": "MobileNetV2",
        "width_mult": width,
        "input": [1, 3, res, res],
        "lrn_after_features": list(lrn_after),
        **_arm_settings(target, spec, "INT8 per-channel symmetric (EthosUQuantizer)"),
        "extract_delegate_segments": segments,
        "external_weight_tag": ptd_tag,
    }
    return {"files": files, "sidecars": [art] if keep_artifacts else [], "settings": settings}


def _arm_settings(target, spec, quantization: str) -> dict:
    return {
        "target": target,
        "compile_flags": spec.compiler_flags,
        "tosa_spec": str(spec.tosa_spec),
        "quantization": quantization,
    }


@example(
    "mv2_ethosu85_full",
    "ethos-u",
    "MobileNetV2 1.0/224 INT8 fully delegated to Ethos-U85-256 (one EthosUBackend call); "
    "intermediate TOSA in mv2_ethosu85_full_artifacts/; payload inline.",
)
def build_mv2_ethosu85_full():
    return ethosu_example(
        "mv2_ethosu85_full",
        width=1.0,
        res=224,
        target="ethos-u85-256",
        keep_artifacts=True,
        segments=False,
    )


@example(
    "mv2_lrn_ethosu85",
    "ethos-u",
    "MobileNetV2 1.0/224 with one LocalResponseNorm after features[3]: two Ethos-U85 "
    "partitions with aten::avg_pool3d (from the LRN decomposition, wrapped in "
    "dequantize/quantize) on the CPU between them; payloads in segments; per-partition "
    "TOSA in mv2_lrn_ethosu85_artifacts/ (output_tag0 is the LARGE second partition: "
    "tags are not delegate indices).",
)
def build_mv2_lrn_ethosu85():
    return ethosu_example(
        "mv2_lrn_ethosu85",
        width=1.0,
        res=224,
        target="ethos-u85-256",
        lrn_after=(3,),
        keep_artifacts=True,
        segments=True,
        etrecord=True,
    )


@example(
    "mv2_lrn2_ethosu85",
    "ethos-u",
    "MobileNetV2 0.5/160 with two LocalResponseNorm layers (after features[3] and [10]): "
    "three Ethos-U85 partitions, CPU ops between; payloads inline.",
)
def build_mv2_lrn2_ethosu85():
    return ethosu_example(
        "mv2_lrn2_ethosu85",
        width=0.5,
        res=160,
        target="ethos-u85-256",
        lrn_after=(3, 10),
        keep_artifacts=True,
        segments=False,
        etrecord=True,
    )


@example(
    "mv2_ethosu55",
    "ethos-u",
    "MobileNetV2 0.35/160 INT8 fully delegated to Ethos-U55-128 "
    "(Ethos_U55_High_End_Embedded, Shared_Sram); payload in a segment.",
)
def build_mv2_ethosu55():
    return ethosu_example(
        "mv2_ethosu55",
        width=0.35,
        res=160,
        target="ethos-u55-128",
        keep_artifacts=True,
        segments=True,
    )


@example(
    "mv2_ethosu85_ptd",
    "ethos-u",
    "MobileNetV2 0.35/160 on Ethos-U85-256 with the Vela weight_data block stored "
    "externally (named data tagged 'mv2_u85_weights' -> mv2_u85_weights.ptd); "
    "the payload's weight_data block holds a sha256 key.",
)
def build_mv2_ethosu85_ptd():
    return ethosu_example(
        "mv2_ethosu85_ptd",
        width=0.35,
        res=160,
        target="ethos-u85-256",
        keep_artifacts=True,
        segments=False,
        ptd_tag="mv2_u85_weights",
    )


def small_net_example(name: str, model, res: int, target: str, **memory: str):
    """A small net (``model``, from ``models/small.py``) on a ``res``x``res`` image, fully
    delegated to Ethos-U ``target`` (``memory``: the compile spec's ``system_config`` and
    ``memory_mode``, the target's usual ones by default); payload in a segment, TOSA kept."""
    art = f"{name}_artifacts"
    reset_outputs(f"{name}.pte", art)
    spec = ethosu_spec(target, art, **memory)
    shape = [1, 3, res, res]
    prog = arm_lower(
        seeded(model),
        (torch.randn(*shape),),
        spec,
        backend="ethosu",
        extract_delegate_segments=True,
    )
    files = [write_pte(prog, name)]
    prune_artifacts(art)
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": model.__name__,
            "input": shape,
            **_arm_settings(target, spec, "INT8 per-channel symmetric (EthosUQuantizer)"),
            "extract_delegate_segments": True,
        },
    }


@example(
    "convnet_dedicated_sram_ethosu85",
    "ethos-u",
    "Small conv net fully delegated to Ethos-U85-256 in the Dedicated_Sram_384KB memory mode "
    "(Ethos_U85_SYS_DRAM_Mid): weights and the scratch arena in DRAM, a 384 KiB fast scratch "
    "cache in SRAM; TOSA in convnet_dedicated_sram_ethosu85_artifacts/.",
)
def build_convnet_dedicated_sram_ethosu85():
    return small_net_example(
        "convnet_dedicated_sram_ethosu85",
        MemoryModeNet,
        32,
        "ethos-u85-256",
        system_config="Ethos_U85_SYS_DRAM_Mid",
        memory_mode="Dedicated_Sram_384KB",
    )


@example(
    "convnet_sram_only_ethosu55",
    "ethos-u",
    "Small conv net fully delegated to Ethos-U55-128 in the Sram_Only memory mode "
    "(Ethos_U55_High_End_Embedded): weights and scratch both in SRAM; TOSA in "
    "convnet_sram_only_ethosu55_artifacts/.",
)
def build_convnet_sram_only_ethosu55():
    return small_net_example(
        "convnet_sram_only_ethosu55",
        MemoryModeNet,
        32,
        "ethos-u55-128",
        system_config="Ethos_U55_High_End_Embedded",
        memory_mode="Sram_Only",
    )


@example(
    "wide_scratch_ethosu55",
    "ethos-u",
    "Two convolutions on a 256x256 image, fully delegated to Ethos-U55-128 "
    "(Ethos_U55_High_End_Embedded, Shared_Sram): a small file whose NPU scratch (more than "
    "2 MiB) does not fit the Corstone-300's SRAM; TOSA in wide_scratch_ethosu55_artifacts/.",
)
def build_wide_scratch_ethosu55():
    return small_net_example("wide_scratch_ethosu55", WideNet, 256, "ethos-u55-128")


@example(
    "mv2_residual_cpu_ethosu85",
    "ethos-u",
    "MobileNetV2 0.35/96 on Ethos-U85-256 with every residual aten::add kept on the CPU "
    "(partitioner additional_checks): the ten adds split the network into 11 Ethos-U "
    "partitions and 12 CPU islands (10 of them one aten::add between dequantize/quantize "
    "glue); payloads inline; no TOSA kept.",
)
def build_mv2_residual_cpu_ethosu85():
    with ethosu_partitioner_checks(not_add_check()):
        out = ethosu_example(
            "mv2_residual_cpu_ethosu85",
            width=0.35,
            res=96,
            target="ethos-u85-256",
            keep_artifacts=False,
            segments=False,
        )
    out["settings"]["kept_off_npu"] = "aten.add (partitioner additional_checks)"
    return out
