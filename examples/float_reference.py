"""The float reference of `mv2_lrn_ethosu85`: the same network exported without quantization for
ExecuTorch's portable CPU kernels, with its ETRecord, run once by ExecuTorch's pip runtime with a
debug buffer on the emulated run's fixed input (`build_emulated.py`).

The network is `mobilenet_v2(1.0, lrn_after=(3,))`, seeded as the INT8 example was (every weight
the same). One rewrite before lowering, because ExecuTorch has no kernel for `aten::avg_pool3d.out`
(the pip runtime stops at "Missing operator"): each `aten.avg_pool3d` whose window spans only the
first of its three pooled dimensions with stride 1 there and 1 in the others -- LocalResponseNorm's
`(size, 1, 1)` window over the channels -- becomes `aten.avg_pool2d` over a view that merges the
other two: the same windows, the same divisor, in the same layer (the decomposition keeps the
node's module stack and source line). Anything else raises.

Files (`STEM` in the output folder): the program, its ETRecord (representative inputs: the fixed
input; stack traces made portable and compacted like the other examples'), and the pip runtime's
own ETDump and debug buffer (`<stem>.debug_buffer.bin`: the runtime writes the whole buffer it was
given, sized here to what this program logs).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from examples.emulated_etdump import ALIGNMENT, logged_by
from examples.models import SEED
from examples.models.mobilenet import mobilenet_v2

STEM = "mv2_lrn_float"
INPUT_SEED = SEED + 1  # not one of the calibration inputs (those are drawn from SEED)


def fixed_input() -> torch.Tensor:
    """The input of the emulated run and of the float reference: held out from calibration."""
    return torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(INPUT_SEED))


def float_network() -> torch.nn.Module:
    """The float network of `mv2_lrn_ethosu85` (the same seed, so the same weights)."""
    return mobilenet_v2(1.0, (3,))


def avg_pool3d_as_avg_pool2d(
    x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor=None
):
    """`aten.avg_pool3d` with a `(k, 1, 1)` window as `aten.avg_pool2d` over `[N, C, D, H*W]`."""
    kernel = list(kernel_size) * (3 if len(kernel_size) == 1 else 1)
    steps = list(stride or kernel)
    pads = [padding] * 3 if isinstance(padding, int) else list(padding) * (3 // len(padding))
    if kernel[1:] != [1, 1] or steps[1:] != [1, 1] or pads[1:] != [0, 0] or ceil_mode:
        raise NotImplementedError(f"avg_pool3d {kernel} {steps} {pads} {ceil_mode}")
    if divisor is not None:
        raise NotImplementedError("avg_pool3d with divisor_override")
    n, c, d, h, w = x.shape
    y = torch.ops.aten.avg_pool2d.default(
        x.reshape(n, c, d, h * w),
        [kernel[0], 1],
        [steps[0], 1],
        [pads[0], 0],
        False,
        count_include_pad,
    )
    return y.reshape(n, c, y.shape[2], h, w)


def export_float(x: torch.Tensor):
    """The portable float program of the network, with its ETRecord (representative input `x`)."""
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge

    ep = torch.export.export(float_network(), (x,))
    ep = ep.run_decompositions({torch.ops.aten.avg_pool3d.default: avg_pool3d_as_avg_pool2d})
    edge = to_edge(ep, compile_config=EdgeCompileConfig(), generate_etrecord=True)
    return edge.to_executorch(ExecutorchBackendConfig())


def debug_buffer_bytes(program) -> int:
    """What the runtime logs for one run of the first method, each tensor 64-byte aligned, plus
    one alignment for where the buffer happens to start."""
    plan = program.execution_plan[0]
    logged = [*plan.outputs]
    for ins in plan.chains[0].instructions:
        logged += logged_by(plan, ins.instr_args)
    total = ALIGNMENT
    for vid in logged:
        t = plan.values[vid].val
        size = int(np.prod(t.sizes)) * torch.empty((), dtype=_dtype(t)).element_size()
        total += -(-size // ALIGNMENT) * ALIGNMENT
    return total


def _dtype(t) -> torch.dtype:
    from examples.emulated_kernels import TORCH_DTYPES

    return getattr(torch, TORCH_DTYPES[int(t.scalar_type)])


def build_float_reference(out: Path) -> list[str]:
    """The float reference in `out` (created): its files' names."""
    from executorch.extension.pybindings import portable_lib

    from examples.etrecords import compact_etrecord, stabilize_etrecord

    out.mkdir(parents=True, exist_ok=True)
    x = fixed_input()
    prog = export_float(x)
    cwd = os.getcwd()
    os.chdir(out)  # relative names only: nothing machine-specific is recorded
    try:
        with open(f"{STEM}.pte", "wb") as f:
            prog.write_to_file(f)
        etrecord = prog.get_etrecord()
        stabilize_etrecord(etrecord)
        etrecord.update_representative_inputs([(x,)])
        etrecord.save(f"{STEM}.etrecord")
        compact_etrecord(f"{STEM}.etrecord")
        size = debug_buffer_bytes(prog.executorch_program)
        module = portable_lib._load_for_executorch(
            f"{STEM}.pte", enable_etdump=True, debug_buffer_size=size
        )
        (logits,) = module.run_method("forward", (x,))
        module.write_etdump_result_to_file(f"{STEM}.etdp", f"{STEM}.debug_buffer.bin")
    finally:
        os.chdir(cwd)
    eager = float_network()(x)
    if not torch.allclose(logits, eager, rtol=1e-4, atol=1e-5):
        raise AssertionError("the float program does not compute what the network does")
    return [f"{STEM}.{s}" for s in ("pte", "etrecord", "etdp", "debug_buffer.bin")]
