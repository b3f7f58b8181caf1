"""Lowering with the real toolchain: PT2E quantization, the Arm (Ethos-U, TOSA), XNNPACK and
portable flows, and the partitioner checks some examples add to keep operators off the NPU."""

from __future__ import annotations

import contextlib

import torch

from examples.common import inputs
from examples.etrecords import captured_partition_rejections, save_etrecord


def quantize_pt2e(model, example_inputs, quantizer, calib):
    """export -> unlifted module (no guards) -> prepare_pt2e -> calibrate -> convert -> export."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    ep = torch.export.export(model, example_inputs)
    # check_guards=False: otherwise a `_guards_fn` submodule is inserted that the
    # Arm passes reject.
    gm = ep.module(check_guards=False)
    prepared = prepare_pt2e(gm, quantizer)
    with torch.no_grad():
        for args in calib:
            prepared(*args)
    converted = convert_pt2e(prepared)
    return torch.export.export(converted, example_inputs)


def arm_lower(
    model,
    example_inputs,
    spec,
    *,
    backend: str,
    extract_delegate_segments: bool,
    calib_n: int = 4,
    etrecord: str | None = None,
):
    """Quantize (INT8, per-channel symmetric) and lower to Ethos-U or TOSA.

    With ``etrecord`` (an example name) the ETRecord is written to ``<name>.etrecord`` and the
    partitioner's rejection reasons to ``<name>.rejections.json`` (see ``save_etrecord``).
    """
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        TOSAQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    if backend == "ethosu":
        from executorch.backends.arm.ethosu import EthosUPartitioner

        quantizer = EthosUQuantizer(spec)
        partitioner = EthosUPartitioner(spec)
    elif backend == "tosa":
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner

        quantizer = TOSAQuantizer(spec)
        partitioner = TOSAPartitioner(spec)
    else:
        raise ValueError(backend)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    shape = tuple(example_inputs[0].shape)
    qep = quantize_pt2e(model, example_inputs, quantizer, inputs(shape, calib_n))
    with captured_partition_rejections() as rejections:
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=etrecord is not None,
        )
    prog = edge.to_executorch(
        ExecutorchBackendConfig(extract_delegate_segments=extract_delegate_segments)
    )
    if etrecord is not None:
        save_etrecord(prog, etrecord, rejections)
    return prog


# --------------------------------------------------------------------------------------
# ETRecords and the partitioner's own rejection reasons
# --------------------------------------------------------------------------------------


def ethosu_spec(target: str, artifacts: str | None, **kw):
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    if target.startswith("ethos-u85"):
        kw.setdefault("system_config", "Ethos_U85_SYS_DRAM_Mid")
        kw.setdefault("memory_mode", "Shared_Sram")
    else:
        kw.setdefault("system_config", "Ethos_U55_High_End_Embedded")
        kw.setdefault("memory_mode", "Shared_Sram")
    spec = EthosUCompileSpec(target, **kw)
    if artifacts:
        # RELATIVE on purpose: it is recorded in the compile specs of the .pte.
        spec.dump_intermediate_artifacts_to(artifacts)
    return spec


def xnnpack_lower(
    model,
    example_inputs,
    *,
    quantize: bool,
    extract_delegate_segments: bool,
    external_tag: str | None = None,
    calib_n: int = 4,
    etrecord: str | None = None,
    representative_inputs=None,
):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    if quantize:
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )

        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
        shape = tuple(example_inputs[0].shape)
        ep = quantize_pt2e(model, example_inputs, q, inputs(shape, calib_n))
    else:
        ep = torch.export.export(model, example_inputs)
    if external_tag is not None:
        # Tag every constant the delegate will consume; XNNPACK then puts them
        # in named data with this external tag -> <tag>.ptd.
        from executorch.exir.passes.external_constants_pass import (
            delegate_external_constants_pass_unlifted,
        )

        gm = ep.module(check_guards=False)
        delegate_external_constants_pass_unlifted(gm, lambda node: external_tag)
        ep = torch.export.export(gm, example_inputs)
    with captured_partition_rejections() as rejections:
        edge = to_edge_transform_and_lower(
            ep, partitioner=[XnnpackPartitioner()], generate_etrecord=etrecord is not None
        )
    prog = edge.to_executorch(
        ExecutorchBackendConfig(
            extract_delegate_segments=extract_delegate_segments,
            external_constants=(lambda n: external_tag) if external_tag else False,
        )
    )
    if etrecord is not None:
        save_etrecord(prog, etrecord, rejections, representative_inputs)
    return prog


def portable_lower(
    programs, config_kwargs=None, edge_passes=None, etrecord=None, representative_inputs=None
):
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge

    edge = to_edge(
        programs, compile_config=EdgeCompileConfig(), generate_etrecord=etrecord is not None
    )
    prog = edge.to_executorch(ExecutorchBackendConfig(**(config_kwargs or {})))
    if etrecord is not None:
        save_etrecord(prog, etrecord, representative_inputs=representative_inputs)
    return prog


def not_linear_check():
    """An `additional_checks` entry for the Arm partitioner that keeps every Linear off the NPU."""
    from torch.fx.passes.operator_support import OperatorSupportBase

    class NotLinear(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            name = str(getattr(node.target, "__name__", node.target))
            return not any(k in name for k in ("linear", "addmm"))

    return NotLinear()


def not_add_check():
    """An `additional_checks` entry for the Arm partitioner that keeps every `aten.add` (the
    residual connections of MobileNetV2's inverted residual blocks) off the NPU."""
    from torch.fx.passes.operator_support import OperatorSupportBase

    class NotAdd(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            # Edge ops are named "aten.add.Tensor", ATen ones "add.Tensor".
            name = str(getattr(node.target, "__name__", node.target)).removeprefix("aten.")
            return name.split(".")[0] not in ("add", "add_")

    return NotAdd()


@contextlib.contextmanager
def ethosu_partitioner_checks(*checks):
    """Every EthosUPartitioner made inside also applies `checks` (`arm_lower` makes its own)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner

    orig = EthosUPartitioner.__init__

    def init(self, compile_spec, additional_checks=None, **kw):
        orig(self, compile_spec, additional_checks=[*(additional_checks or []), *checks], **kw)

    EthosUPartitioner.__init__ = init
    try:
        yield
    finally:
        EthosUPartitioner.__init__ = orig


@contextlib.contextmanager
def arm_partition_report():
    """Let the Arm partitioner write its own report, as `aot_arm_compiler.py --debug
    --intermediates DIR` does: at INFO level it logs every rejected node and the reason into
    `partition_report.txt` in the compile spec's intermediates folder (a FileHandler it opens
    itself, closed here so the file is complete)."""
    import logging

    log = logging.getLogger("executorch.backends.arm.tosa.partitioner")
    level, handlers = log.level, list(log.handlers)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        for h in [h for h in log.handlers if h not in handlers]:
            h.close()
            log.removeHandler(h)
        log.setLevel(level)
