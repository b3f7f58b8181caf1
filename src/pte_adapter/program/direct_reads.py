"""The program reader's direct reads (`program/reader.py`): the common EValues and calls read
straight from the buffer, from each table's vtable offsets and reach (`flatbuf.Fields`), without
a `Table` per value. Each gives what the reader's checked reads give, or None wherever one of
their checks would fail (or for a kind read seldom): the reader then reads it the checked way,
with the table and unpacking budgets as they were, and so raises what it always raised."""

from __future__ import annotations

import struct
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.flatbuf import SCALAR_SIZES, FlatBuffer
from pte_adapter.program.model import (
    BOOL,
    DELEGATE,
    DOUBLE,
    INT,
    KERNEL,
    NULL,
    SHAPE_DYNAMISM,
    TENSOR,
    VALUE_KIND_BY_TAG,
    Instruction,
    MemoryPlan,
    Tensor,
    Value,
)

if TYPE_CHECKING:
    from pte_adapter.program.reader import _ConstantIndex


# A row: how to read some fields of every table with one vtable in one `struct` call: the
# unpacking, the pick of the wanted fields from what it unpacked followed by the defaults, and
# the defaults (`compile_row`); None where the fields overlap (a corrupt vtable: read checked).
Row = tuple[
    Callable[[memoryview, int], tuple[Any, ...]], Callable[[tuple[Any, ...]], Any], tuple[Any, ...]
]
_UNSEEN: Final[Any] = object()


def compile_row(offsets: tuple[int, ...], wanted: tuple[tuple[int, str], ...]) -> Row | None:
    """The row of `wanted` fields (slot, struct format of at most 8 bytes, in the order they are
    wanted; a reference's format "I" gives its uoffset) of the tables whose field offsets are
    `offsets`: each field as `Table` reads it, an absent one its default (0, False for "?").
    Read only tables `FlatBuffer.direct_fields` passed: every field then lies inside the buffer."""
    present = sorted(
        (offsets[slot], i, fmt)
        for i, (slot, fmt) in enumerate(wanted)
        if slot < len(offsets) and offsets[slot]
    )
    layout, end = "<", 0
    pick = [len(present) + i for i in range(len(wanted))]  # absent: its default
    for k, (off, i, fmt) in enumerate(present):
        if off < end:
            return None
        layout += f"{off - end}x{fmt}"
        end = off + SCALAR_SIZES[fmt]
        pick[i] = k
    defaults = tuple(False if fmt == "?" else 0 for _, fmt in wanted)
    return struct.Struct(layout).unpack_from, itemgetter(*pick), defaults


class Rows:
    """The rows (`compile_row`) of one reading, per kind of table and its field offsets: a
    program's tables of one kind share a few vtables; and the constants its tensors name."""

    __slots__ = ("alloc", "constants", "tensor")

    def __init__(self, constants: _ConstantIndex) -> None:
        self.constants = constants
        self.tensor: dict[tuple[int, ...], Row | None] = {}
        self.alloc: dict[tuple[int, ...], Row | None] = {}


def direct_table(fb: FlatBuffer, pos: int, off: int) -> tuple[int, tuple[int, ...]] | None:
    """The table the reference field at `pos + off` points to, and its field offsets, read as
    `FlatBuffer.direct_fields` reads them; None where that, or the reference, would not pass."""
    ref = pos + off
    target = ref + _U32.unpack_from(fb.data, ref)[0]
    if target >= fb.size:
        return None
    fields = fb.direct_fields(target)
    return None if fields is None else (target, fields)


def value_at(fb: FlatBuffer, index: int, pos: int, rows: Rows) -> Value | None:
    """The EValue at `pos` as `reader._read_value` reads it, or None when any of its checks would fail or
    the value is of a kind read here seldom (a string, a list of doubles or bools, a tensor with
    extra info, an unknown tag). Every offset, length and budget is checked as `Table` checks it
    (a table's fields at once, by its reach); no `Table` is made."""
    ev = fb.direct_fields(pos)
    data = fb.data
    if ev is None or len(ev) < 2 or not ev[0] or not ev[1]:
        return None
    tag = data[pos + ev[0]]
    got = direct_table(fb, pos, ev[1])
    if got is None:
        return None
    at, val = got
    off = val[0] if val else 0
    if tag == _TAG_INT:
        return Value(index, INT, _I64.unpack_from(data, at + off)[0] if off else 0)
    if tag == _TAG_TENSOR:
        tensor = _tensor_at(fb, at, val, rows)
        return None if tensor is None else Value(index, TENSOR, tensor)
    if tag == _TAG_BOOL:
        return Value(index, BOOL, off != 0 and data[at + off] != 0)
    if tag == _TAG_DOUBLE:
        return Value(index, DOUBLE, _F64.unpack_from(data, at + off)[0] if off else 0.0)
    if tag == _TAG_NULL:
        return Value(index, NULL, None)
    if tag in (_TAG_INT_LIST, _TAG_TENSOR_LIST):
        items = direct_ints(fb, at, off, "q" if tag == _TAG_INT_LIST else "i")
        return None if items is None else Value(index, VALUE_KIND_BY_TAG[tag], items)
    return None


_TAG_NULL = S.KernelTypes.Null.value
_TAG_INT = S.KernelTypes.Int.value
_TAG_BOOL = S.KernelTypes.Bool.value
_TAG_DOUBLE = S.KernelTypes.Double.value
_TAG_TENSOR = S.KernelTypes.Tensor.value
_TAG_INT_LIST = S.KernelTypes.IntList.value
_TAG_TENSOR_LIST = S.KernelTypes.TensorList.value
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


def direct_ints(
    fb: FlatBuffer, at: int, off: int, fmt: str, most: int | None = None
) -> list[int] | None:
    """`Table.ints(slot, fmt)` of the table at `at` whose field `slot` is at offset `off` (0:
    absent; its uoffset inside the buffer), or None where `Table.ints` would raise, or where the
    vector holds more than `most` items (nothing counted against the budget then)."""
    if off == 0:
        return []
    ref = at + off
    return direct_vector(fb, ref + _U32.unpack_from(fb.data, ref)[0], fmt, most)


def direct_vector(fb: FlatBuffer, vec: int, fmt: str, most: int | None = None) -> list[int] | None:
    """`direct_ints` of the vector at `vec` (where a present field's uoffset points)."""
    data, size = fb.data, fb.size
    if vec >= size or vec % 4 or vec + 4 > size:
        return None
    n = _U32.unpack_from(data, vec)[0]
    if most is not None and n > most:
        return None
    nbytes = n * SCALAR_SIZES[fmt]
    if nbytes > size - vec - 4 or fb.unpack_left - nbytes < 0:
        return None
    fb.unpack_left -= nbytes
    if n < _SHORT:  # most: a shape, a dim order, a call's arguments
        return list(_SHORT_VECTORS[fmt][n].unpack_from(data, vec + 4))
    return list(struct.unpack_from(f"<{n}{fmt}", data, vec + 4))


# The element formats vectors are read of here: ints of a table (q, i, I) and dim orders (B).
_VECTOR_FORMATS: Final = "qiIB"
# Vectors this short are unpacked by a struct made at import (made per call, its format string
# would cost as much as the unpacking).
_SHORT: Final = 17
_SHORT_VECTORS: Final = {
    fmt: tuple(struct.Struct(f"<{n}{fmt}") for n in range(_SHORT)) for fmt in _VECTOR_FORMATS
}


def _tensor_at(fb: FlatBuffer, at: int, t: tuple[int, ...], rows: Rows) -> Tensor | None:
    """`reader._read_tensor` of the Tensor table at `at` (field offsets `t`, each field inside the
    buffer), or None where a check would fail or the tensor has extra info (its external data,
    a mutable buffer's segment, its name: read the checked way)."""
    if len(t) > _EXTRA and t[_EXTRA]:
        return None
    row = rows.tensor.get(t, _UNSEEN)
    if row is _UNSEEN:
        row = rows.tensor[t] = compile_row(t, _TENSOR_ROW)
    if row is None:
        return None
    data = fb.data
    scalar_type, storage, sizes, dim_order, grad, buffer_idx, alloc, layout, dynamism = row[1](
        row[0](data, at) + row[2]
    )
    memory: MemoryPlan | None = None
    if alloc:
        alloc += at + t[_ALLOC]
        a = fb.direct_fields(alloc) if alloc < fb.size else None
        if a is None:
            return None
        got = rows.alloc.get(a, _UNSEEN)
        if got is _UNSEEN:
            got = rows.alloc[a] = compile_row(a, _ALLOC_ROW)
        if got is None:
            return None
        arena, low, high = got[1](got[0](data, alloc) + got[2])
        memory = MemoryPlan(arena, low | high << 32)
    sizes = direct_vector(fb, at + t[_SIZES] + sizes, "i") if sizes else []
    dim_order = direct_vector(fb, at + t[_DIM_ORDER] + dim_order, "B") if dim_order else []
    if sizes is None or dim_order is None:
        return None
    tensor = Tensor(
        scalar_type,
        sizes,
        dim_order,
        SHAPE_DYNAMISM.get(dynamism, "unknown"),
        storage,
        grad,
        layout,
        memory,
    )
    if buffer_idx > 0:
        if memory is None:
            tensor.constant = rows.constants.constant(buffer_idx, tensor.nbytes)
        else:
            tensor.constant = rows.constants.mutable_initial(0, buffer_idx, tensor.nbytes)
    return tensor


# The fields of `table Tensor` a plain tensor's row reads (`compile_row`), in this order, and of
# its `table AllocationDetails`; a reference's is its uoffset (0: absent).
_TENSOR_ROW: Final = (
    (S.Tensor.scalar_type, "b"),
    (S.Tensor.storage_offset, "i"),
    (S.Tensor.sizes, "I"),
    (S.Tensor.dim_order, "I"),
    (S.Tensor.requires_grad, "?"),
    (S.Tensor.data_buffer_idx, "I"),
    (S.Tensor.allocation_info, "I"),
    (S.Tensor.layout, "b"),
    (S.Tensor.shape_dynamism, "b"),
)
_ALLOC_ROW: Final = (
    (S.AllocationDetails.memory_id, "I"),
    (S.AllocationDetails.memory_offset_low, "I"),
    (S.AllocationDetails.memory_offset_high, "I"),
)
_EXTRA: Final = S.Tensor.extra_tensor_info
_ALLOC: Final = S.Tensor.allocation_info
_SIZES: Final = S.Tensor.sizes
_DIM_ORDER: Final = S.Tensor.dim_order


def instruction_at(
    fb: FlatBuffer, at: int, index: int, chain: int, position: int, owner: int
) -> Instruction | None:
    """The kernel or delegate call at `at` as `reader._read_instruction` reads it, its table claimed, or
    None where a check would fail or for another kind of instruction (as `value_at`)."""
    ins = fb.direct_fields(at)
    data = fb.data
    if ins is None:
        return None
    fb.claim("instructions", at, owner, position)
    if len(ins) < 2 or not ins[0] or not ins[1]:
        return None
    tag = data[at + ins[0]]
    got = direct_table(fb, at, ins[1])
    if got is None or tag not in (_TAG_KERNEL, _TAG_DELEGATE):
        return None
    call = got[0]
    fields = got[1] + (0, 0)  # KernelCall and DelegateCall: an index (int), then args ([int])
    number = _I32.unpack_from(data, call + fields[0])[0] if fields[0] else 0
    args = direct_ints(fb, call, fields[1], "i")
    if args is None:
        return None
    if tag == _TAG_KERNEL:
        return Instruction(index, chain, position, KERNEL, number, args=args)
    return Instruction(index, chain, position, DELEGATE, None, number, args)


_TAG_KERNEL = S.InstructionArguments.KernelCall.value
_TAG_DELEGATE = S.InstructionArguments.DelegateCall.value
