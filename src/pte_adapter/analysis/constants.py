"""The values a method's inputs and outputs hold in the file, and what constant methods return.

LLM exports carry their configuration as methods without instructions (`get_max_seq_len`,
`get_eos_ids`, `use_kv_cache`, ...): each output is an Int/Double/Bool/String value of the method,
or a constant tensor, and the method's pytree spec (`program.pytree`) says how the outputs nest
(`get_eos_ids` returns the list `[2, 3]`: two Int outputs). A non-tensor method input is a constant
too: the runtime accepts only the value it was exported with.

A constant tensor's values are read, never more than `PREVIEW_ELEMENTS` of them, from where the
file keeps its data (zero-copy views); a tensor whose bytes cannot be read says why.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from pte_adapter.container._generated.program_schema import ScalarType
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import (
    INT,
    INT_LIST,
    NULL,
    STRING,
    Method,
    Program,
    Tensor,
    Value,
    ValueKind,
)
from pte_adapter.program.pytree import TreeSpec, parse_treespec

# The most elements of a tensor that are read and shown.
PREVIEW_ELEMENTS = 16

# Element formats (little-endian, as ExecuTorch stores them) of the dtypes whose values are shown.
_FORMATS: dict[int, str] = {
    ScalarType.BYTE: "B",
    ScalarType.CHAR: "b",
    ScalarType.SHORT: "h",
    ScalarType.INT: "i",
    ScalarType.LONG: "q",
    ScalarType.HALF: "e",
    ScalarType.FLOAT: "f",
    ScalarType.DOUBLE: "d",
    ScalarType.BOOL: "?",
    ScalarType.QINT8: "b",
    ScalarType.QUINT8: "B",
    ScalarType.QINT32: "i",
    ScalarType.BFLOAT16: "H",  # the high half of a float32: widened below
    ScalarType.UINT16: "H",
    ScalarType.UINT32: "I",
    ScalarType.UINT64: "Q",
}
# Data that is a constant of the program (a mutable buffer's initial value is not).
_CONSTANT_KINDS = ("constant_segment", "inline_buffer", "external")

Element = int | float | bool


@dataclass(frozen=True)
class TensorPreview:
    """A constant tensor: its type and its first values in logical (row-major) order."""

    dtype: str
    shape: tuple[int, ...]
    numel: int
    values: tuple[Element, ...] | None  # at most PREVIEW_ELEMENTS; None: not read (`note` says why)
    note: str = ""

    @property
    def complete(self) -> bool:
        return self.values is not None and len(self.values) == self.numel


@dataclass(frozen=True)
class NotConstant:
    """An output that is not a constant of the file (a method input, a computed tensor)."""

    what: str  # "input 0", "tensor"


Leaf = int | float | bool | str | None | TensorPreview | NotConstant
ConstantValue = (
    Leaf | list["ConstantValue"] | tuple["ConstantValue", ...] | dict[str, "ConstantValue"]
)


@dataclass
class MethodConstants:
    """The constant values on a method's inputs and outputs, by position."""

    inputs: dict[int, ConstantValue] = field(default_factory=dict)  # position -> value
    outputs: dict[int, ConstantValue] = field(default_factory=dict)  # constants only
    output_paths: dict[int, str] = field(default_factory=dict)  # position -> "[1]", '["b"][0]'
    # A method without instructions (a constant method): what it returns, structured as its
    # pytree spec says. None for other methods (and for a constant method that returns None).
    returns: ConstantValue = None
    problems: list[str] = field(default_factory=list)


def _elements(raw: memoryview, fmt: str, scalar_type: int) -> tuple[Element, ...]:
    n = len(raw) // struct.calcsize(fmt)
    items = struct.unpack_from(f"<{n}{fmt}", raw)
    if scalar_type == ScalarType.BFLOAT16:
        return tuple(struct.unpack("<f", struct.pack("<I", int(x) << 16))[0] for x in items)
    return tuple(items)


def _logical(
    values: tuple[Element, ...], sizes: list[int], dim_order: list[int]
) -> tuple[Element, ...]:
    """Values stored in `dim_order` (e.g. channels last) put back in row-major order."""
    strides = [0] * len(sizes)
    step = 1
    for d in reversed(dim_order):
        strides[d] = step
        step *= sizes[d]
    out = []
    for flat in range(len(values)):
        pos, rest = 0, flat
        for d in reversed(range(len(sizes))):
            rest, i = divmod(rest, sizes[d])
            pos += i * strides[d]
        out.append(values[pos])
    return tuple(out)


def tensor_preview(program: Program | None, t: Tensor) -> tuple[TensorPreview, str]:
    """The tensor's first values, and a problem of the file when its bytes lie outside it."""
    shape, numel = tuple(t.sizes), t.numel
    fmt = _FORMATS.get(t.scalar_type)
    if fmt is None:
        return TensorPreview(
            t.dtype, shape, numel, None, f"values of {t.dtype} are not decoded"
        ), ""
    identity = not t.dim_order or t.dim_order == list(range(len(t.sizes)))
    if not identity and sorted(t.dim_order) != list(range(len(t.sizes))):
        note = f"dim_order {t.dim_order} does not fit its shape"
        return TensorPreview(t.dtype, shape, numel, None, note), ""
    if not identity and numel > PREVIEW_ELEMENTS:
        note = f"stored in dim_order {t.dim_order}: too large to reorder for a preview"
        return TensorPreview(t.dtype, shape, numel, None, note), ""
    count = min(numel, PREVIEW_ELEMENTS)
    try:
        raw = program.tensor_bytes(t, count * struct.calcsize(fmt)) if program else None
    except PteFormatError as e:
        return TensorPreview(t.dtype, shape, numel, None, "its data is outside the file"), str(e)
    if raw is None:
        where = "its data is not in the files at hand"
        return TensorPreview(t.dtype, shape, numel, None, where), ""
    values = _elements(raw, fmt, t.scalar_type)
    if len(values) < count:
        return TensorPreview(t.dtype, shape, numel, values, "fewer bytes stored than its shape"), ""
    if not identity:
        values = _logical(values, t.sizes, t.dim_order)
    return TensorPreview(t.dtype, shape, numel, values), ""


_SCALARS = (INT, ValueKind.BOOL, ValueKind.DOUBLE, STRING)
_SCALAR_LISTS = (ValueKind.DOUBLE_LIST, ValueKind.BOOL_LIST)


def _scalar(val: Value) -> ConstantValue:
    if val.kind in _SCALARS:
        return val.payload if not isinstance(val.payload, (list, Tensor)) else None
    if val.kind in _SCALAR_LISTS and isinstance(val.payload, list):
        return list(val.payload)
    return None


def _int_list(method: Method, items: list[int]) -> ConstantValue:
    """An IntList's items are indices of Int values."""
    ints: list[ConstantValue] = []
    for i in items:
        payload = method.values[i].payload if 0 <= i < len(method.values) else None
        if not isinstance(payload, int) or method.values[i].kind is not INT:
            return NotConstant("int list")
        ints.append(payload)
    return ints


def value_constant(
    program: Program | None, method: Method, index: int
) -> tuple[ConstantValue, str]:
    """What value `index` holds when it is a constant of the file (else NotConstant), and a
    problem of the file found reading it ("" when none)."""
    if not 0 <= index < len(method.values):
        return NotConstant(f"missing value {index}"), ""
    val = method.values[index]
    if val.kind is NULL:
        return None, ""
    scalar = _scalar(val)
    if scalar is not None:
        return scalar, ""
    if val.kind is INT_LIST and isinstance(val.payload, list):
        return _int_list(method, [int(i) for i in val.payload]), ""
    t = val.payload if isinstance(val.payload, Tensor) else None
    if t is not None and t.constant is not None and t.constant.kind in _CONSTANT_KINDS:
        return tensor_preview(program, t)
    return NotConstant(val.kind.value), ""


def _unflatten(
    spec: TreeSpec, leaves: list[ConstantValue], paths: list[str], path: str
) -> ConstantValue:
    """The leaves (consumed from the front) nested as `spec` says; `paths` gets each leaf's path."""
    if spec.is_leaf:
        paths.append(path)
        return leaves.pop(0)
    if spec.keys:
        return {
            k: _unflatten(c, leaves, paths, f"{path}[{json.dumps(k)}]")
            for k, c in zip(spec.keys, spec.children, strict=True)
        }
    items = [_unflatten(c, leaves, paths, f"{path}[{i}]") for i, c in enumerate(spec.children)]
    return items if spec.type == "builtins.list" else tuple(items)


def _returns(method: Method, outputs: list[ConstantValue], paths: dict[int, str]) -> ConstantValue:
    """What a method without instructions returns: its outputs nested by its pytree spec, else the
    one output, else the outputs as a tuple."""
    spec = parse_treespec(method.output_structure)
    if spec is not None and spec.leaves == len(outputs) and not spec.is_leaf:
        found: list[str] = []
        value = _unflatten(spec, list(outputs), found, "")
        paths.update(enumerate(found))
        return value
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def method_constants(program: Program | None, method: Method) -> MethodConstants:
    """The constants on the method's inputs and outputs; for a method without instructions, what
    it returns (a method input it hands back reads as NotConstant("input N"))."""
    out = MethodConstants()
    inputs = {v: pos for pos, v in enumerate(method.inputs)}
    for pos, v in enumerate(method.inputs):
        value, problem = value_constant(program, method, v)
        if not isinstance(value, NotConstant):
            out.inputs[pos] = value
        if problem:
            out.problems.append(f"input {pos}: {problem}")
    returned: list[ConstantValue] = []
    for pos, v in enumerate(method.outputs):
        value, problem = value_constant(program, method, v)
        if v in inputs:
            value = NotConstant(f"input {inputs[v]}")
        if not isinstance(value, NotConstant):
            out.outputs[pos] = value
        if problem:
            out.problems.append(f"output {pos}: {problem}")
        returned.append(value)
    if not method.instructions:
        out.returns = _returns(method, returned, out.output_paths)
    return out
