"""Numeric-gap examples (issue 43): programs run by ExecuTorch's pip runtime with a debug buffer.

Each example is one small network (`models/numerics.py`) exported one way, with:

- `<name>.pte` and `<name>.etrecord`: the ETRecord records the representative input
  (`update_representative_inputs`, what `Inspector.calculate_numeric_gap` runs its graph on) and
  keeps its ATen graph (the names the Inspector gives its rows: `conv2d_1`);
- `<name>.etdp` and `<name>.debug_buffer.bin`: one run of the program on that same input by the pip
  runtime (`_load_for_executorch(pte, enable_etdump=True, debug_buffer_size=N)`, `run_method`,
  `write_etdump_result_to_file`): the ETDump's debug events point into the debug buffer, which
  holds every instruction's output (a delegate call's inputs and outputs).

The same network, weights and input on every side, so the float and INT8 exports of one network
are the pairs `pte-adapter numerics INT8.pte --reference FLOAT.pte` compares (and the portable
program is the CPU-only reference of both XNNPACK exports):

| network | portable | XNNPACK fp32 | XNNPACK INT8 (PT2E, XNNPACKQuantizer) |
|---|---|---|---|
| GapNet | `numerics_portable` (fp32), `numerics_portable_int8` | `numerics_xnnpack_fp32` | `numerics_xnnpack_int8` |
| GapIslandNet (a CPU island between two XNNPACK partitions) | | `numerics_island_fp32` | `numerics_island_int8` |
"""

from __future__ import annotations

import os

import torch

from examples.common import example, inputs, reset_outputs, write_pte
from examples.lowering import portable_lower, quantize_pt2e, xnnpack_lower
from examples.models import SEED, seeded
from examples.models.numerics import GapIslandNet, GapNet

SHAPE = (1, 3, 16, 16)
# The input every program runs on, and the ETRecords' representative input: one seeded draw,
# other than the calibration inputs of the INT8 exports (`inputs(SHAPE, 4)`, seed SEED).
INPUT_SEED = SEED + 43
# The runtime writes its whole debug buffer, used or not: a first run in a buffer this large
# measures what one run logs, the recorded run gets a buffer of that size (plus SLACK).
PROBE_BUFFER_BYTES = 1 << 20
SLACK = 64
DEBUG_BUFFER = "{name}.debug_buffer.bin"


def _run(pte: str, x: tuple[torch.Tensor, ...], size: int, etdump: str, buffer: str) -> None:
    import executorch.kernels.quantized  # noqa: F401  (registers the quantize kernels)
    from executorch.extension.pybindings.portable_lib import _load_for_executorch

    module = _load_for_executorch(pte, enable_etdump=True, debug_buffer_size=size)
    module.run_method("forward", x)
    module.write_etdump_result_to_file(etdump, buffer)


def _logged_end(etdump: str) -> int:
    """The end of the last tensor an ETDump's debug events point at in its debug buffer."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    sizes = {6: 4, 1: 1, 0: 1, 3: 4, 4: 8, 7: 8, 11: 1, 2: 2, 5: 2}  # ScalarType -> bytes
    end = 0
    with open(etdump, "rb") as f:
        dump = deserialize_from_etdump_flatcc(f.read())
    for run in dump.run_data:
        for event in run.events or []:
            entry = event.debug_event.debug_entry if event.debug_event else None
            tensors = [entry.tensor] if entry is not None and entry.tensor else []
            tensors += entry.tensor_list.tensors if entry is not None and entry.tensor_list else []
            for t in tensors:
                n = 1
                for s in t.sizes:
                    n *= s
                end = max(end, t.offset + n * sizes[t.scalar_type.value])
    return end


def run_with_debug_buffer(name: str, x: tuple[torch.Tensor, ...]) -> list[str]:
    """Run `<name>.pte` once on `x` with ExecuTorch's pip runtime, tracing events and intermediate
    outputs: `<name>.etdp` and `<name>.debug_buffer.bin` (relative paths: nothing of this machine
    is recorded), the buffer as large as what the run logs."""
    pte, etdump, buffer = f"{name}.pte", f"{name}.etdp", DEBUG_BUFFER.format(name=name)
    _run(pte, x, PROBE_BUFFER_BYTES, etdump, buffer)
    size = _logged_end(etdump) + SLACK
    _run(pte, x, size, etdump, buffer)
    if os.path.getsize(buffer) != size or _logged_end(etdump) > size:
        raise RuntimeError(f"{name}: the debug buffer is not the {size} bytes asked for")
    return [etdump, buffer]


def _input() -> tuple[torch.Tensor, ...]:
    return inputs(SHAPE, 1, seed=INPUT_SEED)[0]


def _xnnpack(name: str, net: type[torch.nn.Module], quantize: bool) -> dict:
    reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    x = _input()
    prog = xnnpack_lower(
        seeded(net),
        x,
        quantize=quantize,
        extract_delegate_segments=True,
        etrecord=name,
        representative_inputs=[x],
    )
    files = [write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"]
    return {
        "files": files + run_with_debug_buffer(name, x),
        "sidecars": [],
        "settings": {
            "model": net.__name__,
            "input": list(SHAPE),
            "input_seed": INPUT_SEED,
            "dtype": "int8" if quantize else "fp32",
        },
    }


@example(
    "numerics_portable",
    "portable",
    "GapNet (three convolutions, a residual add, pooling, Linear) fp32 on the portable kernels, "
    "run once by the pip runtime with a debug buffer (numerics_portable.etdp, "
    "numerics_portable.debug_buffer.bin); ETRecord with its representative input: the CPU-only "
    "reference of numerics_xnnpack_fp32 and numerics_xnnpack_int8.",
)
def build_numerics_portable():
    name = "numerics_portable"
    reset_outputs(f"{name}.pte", f"{name}.etrecord")
    x = _input()
    ep = torch.export.export(seeded(GapNet), x)
    prog = portable_lower(ep, etrecord=name, representative_inputs=[x])
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord", *run_with_debug_buffer(name, x)],
        "sidecars": [],
        "settings": {
            "model": "GapNet",
            "input": list(SHAPE),
            "input_seed": INPUT_SEED,
        },
    }


@example(
    "numerics_portable_int8",
    "portable",
    "GapNet INT8 (PT2E with the XNNPACKQuantizer's annotations, per-channel symmetric) on the "
    "portable and quantized kernels, no delegate: every quantize kernel logs an int8 tensor, "
    "dequantized with that kernel's own scale and zero point; run once with a debug buffer; "
    "ETRecord with its representative input.",
)
def build_numerics_portable_int8():
    import executorch.kernels.quantized  # noqa: F401  (the quantize kernels' out variants)
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    name = "numerics_portable_int8"
    reset_outputs(f"{name}.pte", f"{name}.etrecord")
    x = _input()
    q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    ep = quantize_pt2e(seeded(GapNet), x, q, inputs(SHAPE, 4))
    prog = portable_lower(ep, etrecord=name, representative_inputs=[x])
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord", *run_with_debug_buffer(name, x)],
        "sidecars": [],
        "settings": {"model": "GapNet", "input": list(SHAPE), "input_seed": INPUT_SEED},
    }


@example(
    "numerics_xnnpack_fp32",
    "xnnpack",
    "GapNet fp32 whole on XNNPACK, run once with a debug buffer; ETRecord with its "
    "representative input (the float side of the INT8-vs-float pair).",
)
def build_numerics_xnnpack_fp32():
    return _xnnpack("numerics_xnnpack_fp32", GapNet, quantize=False)


@example(
    "numerics_xnnpack_int8",
    "xnnpack",
    "GapNet INT8 (PT2E, XNNPACKQuantizer per-channel symmetric) whole on XNNPACK, run once with "
    "a debug buffer on the same input as numerics_xnnpack_fp32; ETRecord with its "
    "representative input.",
)
def build_numerics_xnnpack_int8():
    return _xnnpack("numerics_xnnpack_int8", GapNet, quantize=True)


@example(
    "numerics_island_fp32",
    "xnnpack",
    "GapIslandNet fp32 on XNNPACK: a fractional power (aten.pow.Tensor_Scalar) stays on the "
    "CPU between two XNNPACK partitions; run once with a debug buffer; ETRecord with its "
    "representative input.",
)
def build_numerics_island_fp32():
    return _xnnpack("numerics_island_fp32", GapIslandNet, quantize=False)


@example(
    "numerics_island_int8",
    "xnnpack",
    "GapIslandNet INT8 (PT2E, XNNPACKQuantizer) on XNNPACK with its CPU island, run once with a "
    "debug buffer on the same input as numerics_island_fp32; ETRecord with its representative "
    "input.",
)
def build_numerics_island_int8():
    return _xnnpack("numerics_island_int8", GapIslandNet, quantize=True)
