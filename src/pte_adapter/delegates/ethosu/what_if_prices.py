"""What CPU kernels would cost on the Ethos-U NPU: the `price_operators` hook of the what-if.

A CPU island's kernels are priced as the NPU operations Vela emits for the TOSA operators the Arm
backend lowers them to, each built from the kernel's tensor shapes (int8, as the INT profile
runs them) and priced with the same per-operation model as the command-stream estimate
(`perf_compute.compute_bound`, `perf_memory.memory_traffic`): an elementwise add, a table
look-up for `pow` or `rsqrt`, a pooling. What the estimate reads from registers and an island
does not have is chosen the way Vela's block search tends to (an OFM block of at most 2,048
elements, feature maps in the arena in NHCWB16), and said in `ASSUMPTIONS`.

Views, copies and the quantize/dequantize glue cost nothing: on the NPU they are a reshape of
the same bytes or the rescale of the operation that writes them. A kernel the table does not
cover is returned unpriced, with the reason; it is never guessed.
"""

from __future__ import annotations

from dataclasses import replace

from pte_adapter.backends import is_glue
from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation, WeightStream
from pte_adapter.delegates.ethosu.perf_compute import compute_bound
from pte_adapter.delegates.ethosu.perf_memory import finish, memory_traffic
from pte_adapter.delegates.ethosu.perf_target import OpEstimate, Target, target_for
from pte_adapter.delegates.hooks import FUSED, OperatorPrice
from pte_adapter.operator_names import target_base
from pte_adapter.program.model import (
    Delegate,
    InstructionKind,
    Method,
    Tensor,
    ValueKind,
    saturating_numel,
)

ASSUMPTIONS = (
    "each CPU kernel becomes the NPU operations Vela emits for its TOSA lowering, in int8",
    "feature maps in the arena (region 1) as NHCWB16, an OFM block of at most 2,048 elements",
    "no chaining on the Ethos-U85 (Vela may chain an elementwise operation behind its producer, "
    "which costs less)",
)

_BINARY = {
    "aten.add": "ADD",
    "aten.sub": "SUB",
    "aten.rsub": "SUB",
    "aten.mul": "MUL",
    "aten.maximum": "MAX",
    "aten.minimum": "MIN",
}
# Lowered to a TOSA TABLE (an int8 look-up table) by the Arm backend's table passes.
_TABLES = {
    "aten.pow",
    "aten.rsqrt",
    "aten.sqrt",
    "aten.reciprocal",
    "aten.exp",
    "aten.log",
    "aten.sigmoid",
    "aten.tanh",
    "aten.erf",
    "aten.gelu",
    "aten.silu",
    "aten.hardswish",
    "aten.hardsigmoid",
}
_CLAMPS = {"aten.relu", "aten.clamp", "aten.hardtanh", "aten.relu6", "aten.leaky_relu"}
_POOLS = {"aten.avg_pool2d": "AVERAGE", "aten.max_pool2d": "MAX"}
_FREE = {
    "aten.view_copy",
    "aten.squeeze_copy",
    "aten.unsqueeze_copy",
    "aten.reshape",
    "aten.alias_copy",
    "aten.clone",
    "aten._to_copy",
    "aten.expand_copy",
}
_BLOCK_ELEMENTS = 2048
NPU_MAX_DIM = 65_536  # an NPU operation's feature-map height, width and depth each fit 16 bits


def _feature_map(t: Tensor) -> FeatureMap:
    sizes = [max(s, 1) for s in t.sizes] or [1]
    if len(sizes) == 4:  # N, C, H, W (logical order, whatever the dim order)
        h, w, c = sizes[0] * sizes[2], sizes[3], sizes[1]
    else:
        c = sizes[-1]
        w = sizes[-2] if len(sizes) >= 2 else 1
        h = saturating_numel(sizes[:-2])  # a corrupt shape must not build a huge integer
    return FeatureMap(h, w, c, "int8", "NHCWB16", 1, 0, 16, 16 * w, w * 16)


def _too_large(maps: list[FeatureMap]) -> str:
    """Why no one NPU operation takes these feature maps, or "": each of its height, width and
    depth registers holds at most 65,536 (Vela splits a larger tensor, or refuses it)."""
    for fm in maps:
        if max(fm.height, fm.width, fm.depth) > NPU_MAX_DIM:
            return (
                f"a feature map of {fm.height} x {fm.width} x {fm.depth}: one NPU operation "
                f"takes at most {NPU_MAX_DIM:,} in each dimension"
            )
    return ""


def _block(fm: FeatureMap) -> tuple[int, int, int]:
    depth = min(fm.depth, 32)
    width = min(fm.width, 16)
    height = min(fm.height, max(_BLOCK_ELEMENTS // max(depth * width, 1), 1))
    return height, width, depth


def _tensor_args(method: Method, args: list[int]) -> list[Tensor]:
    return [t for a in args if (t := method.tensor(a)) is not None]


def _ints(method: Method, index: int) -> list[int]:
    if not 0 <= index < len(method.values):
        return []
    value = method.values[index]
    if value.kind is not ValueKind.INT_LIST or not isinstance(value.payload, list):
        return []
    out = []
    for i in value.payload:
        if not isinstance(i, int) or not 0 <= i < len(method.values):
            continue
        item = method.values[i].payload
        if isinstance(item, int):
            out.append(item)
    return out


def _label(op: NpuOperation) -> str:
    if op.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE") and op.kernel is not None:
        kw, kh = op.kernel
        stride = f"/{op.stride[0]}x{op.stride[1]}" if op.stride not in (None, (1, 1)) else ""
        channels = f"{op.ifm.depth if op.ifm else 0}->{op.ofm.depth if op.ofm else 0}"
        return f"{op.kind} {kw}x{kh}{stride} {channels}"
    return f"{op.kind} {op.mode}".strip() + (" with a table" if op.activation == "TABLE" else "")


def _price(op: NpuOperation, target: Target) -> int:
    est = OpEstimate(op.index, op.label)
    compute_bound(op, target, est)
    memory_traffic(op, target, est)
    finish(est, target)
    return round(est.cycles)


def _operations(method: Method, index: int, base: str) -> tuple[list[NpuOperation], str]:
    """The NPU operations for one kernel, or (no operations, why not)."""
    ins = method.instructions[index]
    tensors = _tensor_args(method, ins.args)
    if not tensors:
        return [], "no tensor shapes recorded"
    out = _feature_map(tensors[-1])
    inputs = [_feature_map(t) for t in tensors[:-1]]
    too_large = _too_large([out, *inputs])
    if too_large:
        return [], too_large
    block = _block(out)
    first = inputs[0] if inputs else out

    def ew(mode: str, second: FeatureMap | None, activation: str = "") -> NpuOperation:
        op = NpuOperation(0, 0, "NPU_OP_ELEMENTWISE", 0, mode, first, second, out)
        op.block, op.activation = block, activation
        op.ifm2_scalar = second is None and mode in _BINARY.values()
        if second is not None and second.shape != out.shape:
            op.ifm2_broadcast = "".join(
                axis for axis, a, b in zip("HWC", second.shape, out.shape, strict=True) if a != b
            )
        return op

    if base in _BINARY:
        second = inputs[1] if len(inputs) > 1 else None
        return [ew(_BINARY[base], second)], ""
    if base == "aten.div":
        second = inputs[1] if len(inputs) > 1 else None
        if second is None:
            return [ew("MUL", None)], ""
        recip = NpuOperation(0, 0, "NPU_OP_ELEMENTWISE", 0, "ADD", second, None, second)
        recip.block, recip.activation, recip.ifm2_scalar = _block(second), "TABLE", True
        return [recip, ew("MUL", second)], ""
    if base in _TABLES:
        return [ew("ADD", None, "TABLE")], ""
    if base in _CLAMPS:
        return [ew("MAX", None)], ""
    if base in _POOLS:
        args = ins.args
        kernel = _ints(method, args[1]) if len(args) > 1 else []
        stride = (_ints(method, args[2]) if len(args) > 2 else []) or kernel
        if len(kernel) != 2 or len(stride) != 2:
            return [], "its kernel size is not recorded as two integers"
        op = NpuOperation(0, 0, "NPU_OP_POOL", 0, _POOLS[base], first, None, out)
        op.kernel, op.stride, op.block = (kernel[1], kernel[0]), (stride[1], stride[0]), block
        return [op], ""
    if base == "aten.convolution":
        return _convolution(method, tensors, ins.args)
    if base == "aten.avg_pool3d":
        return _channel_window(method, tensors, ins.args)
    if base == "aten.mean" and first.height * first.width > 1 and out.height * out.width == 1:
        op = NpuOperation(0, 0, "NPU_OP_POOL", 0, "AVERAGE", first, None, out)
        op.kernel, op.stride, op.block = (first.width, first.height), (1, 1), block
        return [op], ""
    return [], "no NPU lowering in the what-if's table"


def _int(method: Method, index: int) -> int | None:
    if not 0 <= index < len(method.values):
        return None
    payload = method.values[index].payload
    return payload if isinstance(payload, int) and not isinstance(payload, bool) else None


def _convolution(
    method: Method, tensors: list[Tensor], args: list[int]
) -> tuple[list[NpuOperation], str]:
    """A 2-D convolution (`aten.convolution`: input, weight, bias, stride, padding, dilation,
    transposed, output_padding, groups) as Vela's CONV, or DEPTHWISE when each group has one
    input channel; its weights in the constant memory at one byte each (Vela compresses them)."""
    if len(args) < 9 or len(tensors) < 3:
        return [], "its arguments are not recorded"
    weight = method.tensor(args[1])
    stride, dilation = _ints(method, args[3]), _ints(method, args[5])
    groups = _int(method, args[8])
    if (
        weight is None
        or len(weight.sizes) != 4
        or len(stride) != 2
        or groups is None
        or _int(method, args[6]) not in (0, None)
    ):
        return [], "only a 2-D, not transposed convolution is priced"
    ifm, ofm = _feature_map(tensors[0]), _feature_map(tensors[-1])
    depthwise = groups > 1 and groups == ifm.depth
    if groups > 1 and not depthwise:
        return [], "a grouped convolution is not priced"
    op = NpuOperation(
        0, 0, "NPU_OP_DEPTHWISE" if depthwise else "NPU_OP_CONV", 0, "", ifm, None, ofm
    )
    kh, kw = weight.sizes[2], weight.sizes[3]
    op.kernel, op.stride = (kw, kh), (stride[1], stride[0])
    op.dilation = (dilation[1], dilation[0]) if len(dilation) == 2 else (1, 1)
    op.block, op.traversal, op.acc_format = _block(ofm), "DEPTH_FIRST", "I32"
    op.weights = [
        WeightStream("weights", 0, 0, weight.numel),
        WeightStream("scales", 0, 0, 10 * ofm.depth),
    ]
    return [op], ""


def _channel_window(
    method: Method, tensors: list[Tensor], args: list[int]
) -> tuple[list[NpuOperation], str]:
    """An average over a window of channels (LocalResponseNorm's `avg_pool3d` with a kernel of
    (k, 1, 1) on N x 1 x C x H x W): the layer written as a 1x1 convolution with a fixed banded
    C x C weight, which the Arm backend lowers."""
    kernel = _ints(method, args[1]) if len(args) > 1 else []
    sizes = tensors[0].sizes if tensors else []
    if len(sizes) != 5 or len(kernel) != 3 or kernel[1:] != [1, 1]:
        return [], "only a window over channels (kernel k x 1 x 1) is priced"
    c, h, w = sizes[2], sizes[0] * sizes[3], sizes[4]
    out_sizes = tensors[-1].sizes
    c_out = out_sizes[2] if len(out_sizes) == 5 else c
    fm = FeatureMap(h, w, c, "int8", "NHCWB16", 1, 0, 16, 16 * w, w * 16)
    too_large = _too_large([fm, replace(fm, depth=c_out)])
    if too_large:
        return [], too_large
    op = NpuOperation(0, 0, "NPU_OP_CONV", 0, "", fm, None, replace(fm, depth=c_out))
    op.kernel, op.stride, op.block = (1, 1), (1, 1), _block(fm)
    op.traversal, op.acc_format = "DEPTH_FIRST", "I32"
    op.weights = [
        WeightStream("weights", 0, 0, c * c_out),
        WeightStream("scales", 0, 0, 10 * c_out),
    ]
    return [op], ""


def price_operators(
    method: Method, instructions: list[int], delegate: Delegate
) -> list[OperatorPrice]:
    """The `price_operators` hook: each kernel among `instructions` priced on the NPU the delegate
    was compiled for (its estimate's target). No estimate: nothing is priced."""
    est = delegate.decoded.estimate
    target: Target | None = None
    if est is not None:
        try:
            t = est.target
            target = target_for(t.accelerator, t.system_config, t.memory_mode)
        except ValueError:
            target = None
    out: list[OperatorPrice] = []
    computed: set[int] = set()  # values a priced convolution, pooling or elementwise wrote
    for i in instructions:
        if not 0 <= i < len(method.instructions):
            continue
        ins = method.instructions[i]
        if ins.kind is not InstructionKind.KERNEL:
            continue
        op = method.operator_of(ins.op_index)
        name = op.full_name if op is not None else "unknown op"
        base = target_base(name)
        if is_glue(name) or base in _FREE:
            out.append(OperatorPrice(i, base, (), 0))
            continue
        if target is None:
            out.append(OperatorPrice(i, base, (), None, "the partition has no NPU estimate"))
            continue
        if base in _CLAMPS and ins.args and ins.args[0] in computed:
            # Vela fuses a clamp into the operation that produces its input.
            out.append(OperatorPrice(i, base, (FUSED,), 0))
            continue
        ops, why = _operations(method, i, base)
        if not ops:
            out.append(OperatorPrice(i, base, (), None, why))
            continue
        try:
            cycles = sum(_price(op, target) for op in ops)
        except (ValueError, ArithmeticError, IndexError, KeyError, AssertionError) as e:
            out.append(OperatorPrice(i, base, (), None, f"not priced: {e}"))
            continue
        labels = tuple(_label(op) for op in ops)
        out.append(OperatorPrice(i, base, labels, cycles))
        if ins.args:
            computed.add(ins.args[-1])
    return out
