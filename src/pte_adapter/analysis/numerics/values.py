"""A logged tensor's values as numbers, and an integer tensor's quantization parameters.

Values are decoded from the debug buffer's bytes (little-endian, as the runtime copied them) into
float64, in logical (row-major) order: a tensor whose recorded strides say it was stored in
another dimension order (channels last) is put back first. (ExecuTorch's Inspector reads the
bytes as row-major whatever the strides say; every tensor of the examples is row-major, where the
two agree.)

An integer tensor is compared as real numbers: dequantized, `(q - zero_point) * scale`, with its
own quantization parameters, found in the program: those the delegate payload records for the
output that wrote it (XNNPACK), else the arguments of the quantize kernel that wrote it, else of a
dequantize kernel that reads it (`quantized_decomposed::` and Arm's `cortex_m::` per-tensor and
per-channel kernels; per-channel scales are constant tensors of the program).
`QuantParams.source` says where they came from. An integer tensor with none of these beside it
(an Ethos-U partition's output read by another partition) has none known.

numpy is imported here only: it comes with Model Explorer (the adapter's one dependency), and is
never imported by a conversion that compares no values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pte_adapter.analysis.dataflow import Dataflow, tensor_values
from pte_adapter.container.debug_buffer import DebugBuffer
from pte_adapter.container.etdump import TensorRef
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import InstructionKind, Method, Program, Tensor, ValueKind

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float64]

# ScalarType value -> numpy dtype name of its elements (little-endian).
_NUMPY_DTYPES: Final = {
    0: "u1",  # BYTE
    1: "i1",  # CHAR
    2: "<i2",  # SHORT
    3: "<i4",  # INT
    4: "<i8",  # LONG
    5: "<f2",  # HALF
    6: "<f4",  # FLOAT
    7: "<f8",  # DOUBLE
    11: "?",  # BOOL
    12: "i1",  # QINT8
    13: "u1",  # QUINT8
    14: "<i4",  # QINT32
    15: "<u2",  # BFLOAT16: the high half of a float32, widened below
    22: "<u2",  # BITS16
    27: "<u2",  # UINT16
    28: "<u4",  # UINT32
    29: "<u8",  # UINT64
}
BFLOAT16: Final = 15
_FLOATS: Final = frozenset({5, 6, 7, 15})

# Quantize / dequantize kernels whose arguments hold (input, scale, zero point, ...): per tensor,
# the scale a Double and the zero point an Int; per channel, both tensors and the axis an Int.
_PER_TENSOR: Final = ("quantize_per_tensor", "dequantize_per_tensor")
_PER_CHANNEL: Final = ("quantize_per_channel", "dequantize_per_channel")
_NAMESPACES: Final = ("quantized_decomposed", "cortex_m")


@dataclass(frozen=True)
class QuantParams:
    scale: tuple[float, ...]  # one per tensor, or one per channel along `axis`
    zero_point: tuple[int, ...]
    axis: int | None  # None: per tensor
    source: str  # "the arguments of instruction 4 (quantized_decomposed::quantize_per_tensor.out)"

    @property
    def text(self) -> str:
        if self.axis is None:
            return f"scale {self.scale[0]:.6g}, zero point {self.zero_point[0]} ({self.source})"
        return f"{len(self.scale)} scales along axis {self.axis} ({self.source})"


def is_float(ref: TensorRef) -> bool:
    return ref.scalar_type in _FLOATS


def decode(buffer: DebugBuffer, ref: TensorRef) -> Array:
    """The tensor's values as float64 in row-major order. Raises `PteFormatError` for bytes outside
    the buffer or a dtype that is not decoded."""
    import numpy as np

    fmt = _NUMPY_DTYPES.get(ref.scalar_type)
    if fmt is None:
        raise PteFormatError(f"values of {ref.dtype} are not decoded", part=buffer.name)
    dtype = np.dtype(fmt)
    raw = np.frombuffer(buffer.tensor_bytes(ref, dtype.itemsize), dtype=dtype)
    with np.errstate(all="ignore"):  # a NaN's payload is kept, said by the row, not warned
        if ref.scalar_type == BFLOAT16:
            values = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            values = raw.astype(np.float64)
    return _logical(values, ref)


def _logical(values: Array, ref: TensorRef) -> Array:
    """Values put in row-major order when the strides record a dense permuted layout."""
    sizes, strides = list(ref.sizes), list(ref.strides)
    if len(strides) != len(sizes) or len(sizes) < 2:
        return values.reshape(sizes)
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], d))  # outermost first
    step, dense = 1, True
    for d in reversed(order):
        dense = dense and (strides[d] == step or sizes[d] == 1)
        step *= sizes[d]
    if not dense or order == list(range(len(sizes))):
        return values.reshape(sizes)
    stored = values.reshape([sizes[d] for d in order])
    inverse = [order.index(d) for d in range(len(sizes))]
    return stored.transpose(inverse).copy()


def dequantize(values: Array, q: QuantParams) -> Array:
    import numpy as np

    if q.axis is None:
        out = (values - q.zero_point[0]) * q.scale[0]
    else:
        shape = [1] * values.ndim
        shape[q.axis] = -1
        scale = np.asarray(q.scale, dtype=np.float64).reshape(shape)
        zero = np.asarray(q.zero_point, dtype=np.float64).reshape(shape)
        out = (values - zero) * scale
    return np.asarray(out, dtype=np.float64)


def _kernel_name(method: Method, index: int) -> str:
    ins = method.instructions[index]
    if ins.kind is not InstructionKind.KERNEL:
        return ""
    op = method.operator_of(ins.op_index)
    return op.full_name if op is not None else ""


def _scalar(method: Method, value: int, kind: ValueKind) -> float | None:
    if not 0 <= value < len(method.values) or method.values[value].kind is not kind:
        return None
    payload = method.values[value].payload
    return float(payload) if isinstance(payload, (int, float)) else None


def _constant(program: Program | None, t: Tensor | None, fmt: str) -> tuple[float, ...] | None:
    """All values of a small constant tensor (a per-channel scale or zero point)."""
    import numpy as np

    if program is None or t is None or t.constant is None or t.numel > 1 << 16:
        return None
    dtype = np.dtype(fmt)
    try:
        raw = program.tensor_bytes(t, t.numel * dtype.itemsize)
    except PteFormatError:
        return None
    if raw is None or len(raw) < t.numel * dtype.itemsize:
        return None
    return tuple(float(x) for x in np.frombuffer(raw, dtype=dtype, count=t.numel))


_SCALE_FORMATS: Final = {6: "<f4", 7: "<f8"}
_ZERO_FORMATS: Final = {3: "<i4", 4: "<i8", 1: "i1", 0: "u1"}


def _params_of(
    program: Program | None, method: Method, index: int, name: str, rank: int
) -> QuantParams | None:
    """The quantization parameters a quantize/dequantize kernel is called with."""
    args = method.instructions[index].args
    source = f"the arguments of instruction {index} ({name})"
    base = name.split("::")[-1].split(".")[0]
    if base in _PER_TENSOR and len(args) >= 3:
        scale = _scalar(method, args[1], ValueKind.DOUBLE)
        zero = _scalar(method, args[2], ValueKind.INT)
        if scale is None or zero is None:
            return None
        return QuantParams((scale,), (int(zero),), None, source)
    if base in _PER_CHANNEL and len(args) >= 4:
        st, zt = method.tensor(args[1]), method.tensor(args[2])
        axis = _scalar(method, args[3], ValueKind.INT)
        scales = _constant(program, st, _SCALE_FORMATS.get(st.scalar_type, "") if st else "")
        zeros = (
            _constant(program, zt, _ZERO_FORMATS.get(zt.scalar_type, "") if zt else "")
            if zt is not None
            else None
        )
        if scales is None or axis is None or not -rank <= int(axis) < rank:
            return None
        zeros = zeros if zeros is not None else (0.0,) * len(scales)
        if len(zeros) != len(scales):
            return None
        return QuantParams(scales, tuple(int(z) for z in zeros), int(axis) % rank, source)
    return None


def _is_qdq(name: str) -> bool:
    ns, _, rest = name.partition("::")
    base = rest.split(".")[0]
    return ns in _NAMESPACES and base in (*_PER_TENSOR, *_PER_CHANNEL)


class QuantParamsFinder:
    """Each integer tensor's quantization parameters in one method: the quantize kernel that
    wrote it, else the first dequantize kernel that reads it (indexed once: linear)."""

    def __init__(self, program: Program | None, method: Method, flow: Dataflow) -> None:
        self.program, self.method = program, method
        self._kernels: dict[int, list[int]] = {}  # value -> its q/dq kernels, writer first
        readers: dict[int, list[int]] = {}
        for index, io in enumerate(flow.io):
            if not _is_qdq(_kernel_name(method, index)):
                continue
            for v in io.output_tensors:
                self._kernels.setdefault(v, []).append(index)
            for v in tensor_values(method, io.inputs[:1]):
                readers.setdefault(v, []).append(index)
        for v, found in readers.items():
            self._kernels.setdefault(v, []).extend(found)
        # A delegate call's output its payload records the quantization of (XNNPACK).
        self._delegate: dict[int, QuantParams] = {}
        for index, io in enumerate(flow.io):
            ins = method.instructions[index]
            d = ins.delegate_index
            if ins.kind is not InstructionKind.DELEGATE or d is None:
                continue
            if not 0 <= d < len(method.delegates):
                continue
            delegate = method.delegates[d]
            quants = delegate.decoded.output_quant
            for k, (v, q) in enumerate(zip(io.output_tensors, quants, strict=False)):
                if q is not None:
                    source = f"the {delegate.id} payload's output {k} (instruction {index})"
                    self._delegate[v] = QuantParams((q[0],), (q[1],), None, source)

    def __call__(self, value: int, ref: TensorRef) -> QuantParams | None:
        rank = len(ref.sizes)
        if value in self._delegate:
            return self._delegate[value]
        for index in self._kernels.get(value, []):
            name = _kernel_name(self.method, index)
            found = _params_of(self.program, self.method, index, name, rank)
            if found is None:
                continue
            if found.axis is None or len(found.scale) == ref.sizes[found.axis]:
                return found
        return None
