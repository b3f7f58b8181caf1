"""An independent computation, in numpy, of `mv2_lrn_ethosu85`'s SNR at each of its partition
boundaries in the emulated run, against the float network: the oracle the `numerics` views are
checked against.

Each row is one output of one instruction of the INT8 program (read with ExecuTorch's
deserializer), its value taken from the emulated debug buffer (ExecuTorch's ETDump reader, numpy
on the buffer), an INT8 value dequantized in float64 as `(q - zero_point) * scale` with the
program's own quantization parameters:

- those of the CPU kernel that made it (a quantize) or that reads it (a dequantize);
- for the tensor one Ethos-U partition hands the other (features.3's output), which no CPU kernel
  touches: the quantize node of that layer in the program's ETRecord. The committed ETRecord was
  rebuilt after the program and its float scales may differ from the program's in the last bit
  (examples/README.md): a relative 1e-7, far below what SNR can show.

The float value is the layer's output in the float network, by shape (every boundary of this
network has its own shape; checked): the input; `features[3]`'s output (a forward hook); the LRN's
squares padded with two zero channels each side and their five-channel window mean, in numpy from
that output (what `F.local_response_norm` computes before its division); the logits. With a float
reference folder (examples/build_emulated.py), the float export's own logged tensors are used
instead, each the one of the same shape that equals the network's within 1e-4.

SNR = 10 log10(mean(float²) / mean((float - emulated)²)), the Inspector's definition
(`SNRComparator`), here in float64.

    python -m tests.support.emulated_snr [--float-reference DIR]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from tests.support import emulated

LRN_SIZE = 5  # nn.LocalResponseNorm(size=5) in examples/models/mobilenet.py


@dataclass
class Row:
    instruction: int
    partition: str
    name: str
    value: int
    boundary: bool  # read by another partition or returned by the method
    layer: str
    qparams: tuple[float, int] | None
    qparams_from: str
    snr_db: float
    float_from: str
    reference: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    measured: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))  # dequantized


Layers = dict[tuple[int, ...], tuple[str, np.ndarray, str]]


@cache
def float_layers() -> Layers:
    """Shape -> (layer, float32 array, where from) of the float network on the emulated run's
    input."""
    import torch
    from examples.float_reference import fixed_input, float_network

    model, x = float_network(), fixed_input()
    seen: dict[str, torch.Tensor] = {}
    model.features[3].register_forward_hook(lambda m, i, o: seen.__setitem__("f3", o))
    with torch.no_grad():
        logits = model(x).numpy()
    f3 = seen["f3"].numpy()
    half = LRN_SIZE // 2
    squares = np.pad(f3 * f3, ((0, 0), (half, (LRN_SIZE - 1) // 2), (0, 0), (0, 0)))[:, None]
    windows = [squares[:, :, c : c + f3.shape[1]] for c in range(LRN_SIZE)]
    mean = (np.sum(np.stack(windows), axis=0, dtype=np.float64) / LRN_SIZE).astype(np.float32)
    layers = [
        ("input", x.numpy()),
        ("features.3 (output)", f3),
        ("features.4 LocalResponseNorm: squares, channel-padded", squares),
        ("features.4 LocalResponseNorm: 5-channel window mean", mean),
        ("logits", logits),
    ]
    by_shape = {tuple(a.shape): (name, a, "the float network (eager)") for name, a in layers}
    assert len(by_shape) == len(layers), "two layers share a shape: join them another way"
    return by_shape


def exported_layers(folder: Path) -> Layers:
    """`float_layers`, each replaced by the float export's own logged tensor of as many elements
    that equals it within 1e-4 (its first: a view of it may be logged in another shape, e.g. the
    window mean as avg_pool2d's [1, 1, 24, 3136]), where the export logs one (it never logs its
    input)."""
    stem = folder / emulated.FLOAT_STEM
    _, events = emulated.logged(stem.with_suffix(".etdp"), Path(f"{stem}.debug_buffer.bin"))
    out: Layers = {}
    for shape, (name, ref, where) in float_layers().items():
        atol = 1e-4 * float(np.abs(ref).max())
        match = next(
            (
                e
                for e in events
                if e.chain == 0
                and e.array.size == ref.size
                and np.allclose(e.array.reshape(shape), ref, rtol=1e-4, atol=atol)
            ),
            None,
        )
        if match is None:
            out[shape] = (name, ref, where)
        else:
            array = match.array.reshape(shape)
            out[shape] = (name, array, f"the float export, instruction {match.instruction}")
    return out


def snr_db(reference: np.ndarray, measured: np.ndarray) -> float:
    ref = reference.astype(np.float64)
    noise = np.mean((ref - measured.astype(np.float64)) ** 2)
    return math.inf if noise == 0 else 10 * math.log10(np.mean(ref**2) / noise)


@cache
def etrecord_qparams(module: str) -> tuple[float, int]:
    """The (scale, zero point) of the quantize node that follows the node of `module` itself in
    the program's ETRecord (ExecuTorch's own parser)."""
    import warnings

    from executorch.devtools.etrecord import parse_etrecord

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = parse_etrecord(str(emulated.PROGRAM.with_suffix(".etrecord")))
    found = set()
    for node in record.edge_dialect_program.graph.nodes:
        if "quantize_per_tensor" not in str(node.target) or "dequantize" in str(node.target):
            continue
        source = node.args[0]
        stack = source.meta.get("nn_module_stack") or {}
        if stack and list(stack.values())[-1][0] == module:
            found.add((float(node.args[1]), int(node.args[2])))
    assert len(found) == 1, f"{module}: quantization parameters {found}"
    return found.pop()


def _qparams(ins: list[emulated.Instruction], k: int, vid: int) -> tuple[tuple, str] | None:
    """Where the program says how `vid` (made by instruction k) is quantized."""
    me = ins[k]
    if "quantize_per_tensor" in me.name and "dequantize" not in me.name:
        a = emulated.scalar_args(k)
        return (a[1], a[2]), f"#{k} {me.name} (its own arguments)"
    for other in ins:
        if vid in other.inputs and "dequantize_per_tensor" in other.name:
            a = emulated.scalar_args(other.index)
            return (a[1], a[2]), f"#{other.index} {other.name} (the kernel that reads it)"
    return None


def rows(layers: Layers | None = None) -> list[Row]:
    """A row per output of every instruction of the emulated run."""
    layers = layers or float_layers()
    ins = emulated.instructions()
    _, events = emulated.logged()
    plan = emulated.program().execution_plan[0]
    out = []
    for i in ins:
        mine = [e.array for e in events if e.chain == 0 and e.instruction == i.index]
        values = dict(zip(i.args if i.kind == "DelegateCall" else i.outputs, mine, strict=True))
        for vid in i.outputs:
            readers = {o.partition for o in ins if vid in o.inputs}
            boundary = vid in plan.outputs or bool(readers - {i.partition})
            array = values[vid]
            layer, ref, source = layers[tuple(array.shape)]
            q, where = None, "float: no dequantization"
            if array.dtype == np.int8:
                found = _qparams(ins, i.index, vid)
                if found is None:
                    module = layer.split(" ")[0]
                    found = etrecord_qparams(module), f"the ETRecord's quantize node of {module}"
                q, where = found
                array = (array.astype(np.float64) - q[1]) * q[0]
            name = f"{i.name} output {i.outputs.index(vid)}"
            out.append(
                Row(
                    i.index,
                    i.partition,
                    name,
                    vid,
                    boundary,
                    layer,
                    q,
                    where,
                    snr_db(ref, array),
                    source,
                    ref,
                    array,
                )
            )
    return out


def table(found: list[Row]) -> str:
    lines = [
        "| # | partition | output | value | boundary | float layer (from) | SNR dB | qparams from |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in found:
        lines.append(
            f"| {r.instruction} | {r.partition} | {r.name} | {r.value} | "
            f"{'yes' if r.boundary else 'inside'} | {r.layer} ({r.float_from}) | "
            f"{r.snr_db:.2f} | {r.qparams_from} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--float-reference", type=Path, help="a float reference folder to use")
    args = ap.parse_args(argv)
    layers = exported_layers(args.float_reference) if args.float_reference else float_layers()
    print(table(rows(layers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
