"""The program reader's direct reads (`program/reader.py`): the common EValues and calls read
straight from the buffer, from each table's vtable offsets and reach (`flatbuf.Fields`), without
a `Table` per value. Each gives what the reader's checked reads give, or None wherever one of
their checks would fail (or for a kind read seldom): the reader then reads it the checked way,
with the table and unpacking budgets as they were, and so raises what it always raised."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.program.model import (
    SHAPE_DYNAMISM,
    VALUE_KIND_BY_TAG,
    Instruction,
    InstructionKind,
    MemoryPlan,
    Tensor,
    Value,
    ValueKind,
)

if TYPE_CHECKING:
    from pte_adapter.program.reader import _ConstantIndex


def direct_fields(fb: FlatBuffer, pos: int) -> tuple[int, ...] | None:
    """The field offsets of the table at `pos` when any field of up to 8 bytes may be read
    straight from the buffer (`FlatBuffer.checked_fields`, and the table's reach inside the
    buffer); None otherwise, for the caller to read it the checked way."""
    got = fb.checked_fields(pos)
    if got is None or pos + got[1] + 8 > fb.size:
        return None
    return got[0]


def direct_table(fb: FlatBuffer, pos: int, off: int) -> tuple[int, tuple[int, ...]] | None:
    """The table the reference field at `pos + off` points to, and its field offsets, read as
    `direct_fields` reads them; None where that, or the reference, would not pass."""
    ref = pos + off
    target = ref + _U32.unpack_from(fb.data, ref)[0]
    if target >= fb.size:
        return None
    fields = direct_fields(fb, target)
    return None if fields is None else (target, fields)


def value_at(fb: FlatBuffer, index: int, pos: int, constants: _ConstantIndex) -> Value | None:
    """The EValue at `pos` as `reader._read_value` reads it, or None when any of its checks would fail or
    the value is of a kind read here seldom (a string, a list of doubles or bools, a tensor with
    extra info, an unknown tag). Every offset, length and budget is checked as `Table` checks it
    (a table's fields at once, by its reach); no `Table` is made."""
    ev = direct_fields(fb, pos)
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
        return Value(index, ValueKind.INT, _I64.unpack_from(data, at + off)[0] if off else 0)
    if tag == _TAG_TENSOR:
        tensor = _tensor_at(fb, at, val, constants)
        return None if tensor is None else Value(index, ValueKind.TENSOR, tensor)
    if tag == _TAG_BOOL:
        return Value(index, ValueKind.BOOL, off != 0 and data[at + off] != 0)
    if tag == _TAG_DOUBLE:
        return Value(index, ValueKind.DOUBLE, _F64.unpack_from(data, at + off)[0] if off else 0.0)
    if tag == _TAG_NULL:
        return Value(index, ValueKind.NULL, None)
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
_SCALAR_SIZES = {"q": 8, "i": 4, "I": 4, "B": 1}


def direct_ints(
    fb: FlatBuffer, at: int, off: int, fmt: str, most: int | None = None
) -> list[int] | None:
    """`Table.ints(slot, fmt)` of the table at `at` whose field `slot` is at offset `off` (0:
    absent; its uoffset inside the buffer), or None where `Table.ints` would raise, or where the
    vector holds more than `most` items (nothing counted against the budget then)."""
    if off == 0:
        return []
    data, size = fb.data, fb.size
    ref = at + off
    vec = ref + _U32.unpack_from(data, ref)[0]
    if vec >= size or vec % 4 or vec + 4 > size:
        return None
    n = _U32.unpack_from(data, vec)[0]
    if most is not None and n > most:
        return None
    nbytes = n * _SCALAR_SIZES[fmt]
    if nbytes > size - vec - 4 or fb.unpack_left - nbytes < 0:
        return None
    fb.unpack_left -= nbytes
    return list(struct.unpack_from(f"<{n}{fmt}", data, vec + 4))


def _tensor_at(
    fb: FlatBuffer, at: int, t: tuple[int, ...], constants: _ConstantIndex
) -> Tensor | None:
    """`reader._read_tensor` of the Tensor table at `at` (field offsets `t`, each field inside the
    buffer), or None where a check would fail or the tensor has extra info (its external data,
    a mutable buffer's segment, its name: read the checked way)."""
    if len(t) < 10:
        t = t + (0,) * (10 - len(t))  # slots 0-9 of `table Tensor`; absent past the vtable
    if t[9]:  # extra_tensor_info
        return None
    data = fb.data
    memory: MemoryPlan | None = None
    off = t[6]  # allocation_info
    if off:
        got = direct_table(fb, at, off)
        if got is None:
            return None
        where, a = got[0], got[1] + (0, 0, 0)  # memory_id, memory_offset_low, _high: uint
        memory = MemoryPlan(
            _U32.unpack_from(data, where + a[0])[0] if a[0] else 0,
            (_U32.unpack_from(data, where + a[1])[0] if a[1] else 0)
            | (_U32.unpack_from(data, where + a[2])[0] if a[2] else 0) << 32,
        )
    sizes = direct_ints(fb, at, t[2], "i")
    if sizes is None:
        return None
    dim_order = direct_ints(fb, at, t[3], "B")
    if dim_order is None:
        return None
    off = t[8]  # shape_dynamism: byte
    dynamism = (data[at + off] ^ 0x80) - 0x80 if off else 0
    off = t[0]  # scalar_type: byte
    tensor = Tensor(
        scalar_type=(data[at + off] ^ 0x80) - 0x80 if off else 0,
        sizes=sizes,
        dim_order=dim_order,
        dynamism=SHAPE_DYNAMISM.get(dynamism, "unknown"),
        storage_offset=_I32.unpack_from(data, at + t[1])[0] if t[1] else 0,
        requires_grad=t[4] != 0 and data[at + t[4]] != 0,
        layout=(data[at + t[7]] ^ 0x80) - 0x80 if t[7] else 0,
        memory=memory,
    )
    off = t[5]  # data_buffer_idx: uint
    buffer_idx = _U32.unpack_from(data, at + off)[0] if off else 0
    if buffer_idx > 0:
        if memory is None:
            tensor.constant = constants.constant(buffer_idx, tensor.nbytes)
        else:
            tensor.constant = constants.mutable_initial(0, buffer_idx, tensor.nbytes)
    return tensor


def instruction_at(
    fb: FlatBuffer, at: int, index: int, chain: int, position: int, owner: int
) -> Instruction | None:
    """The kernel or delegate call at `at` as `reader._read_instruction` reads it, its table claimed, or
    None where a check would fail or for another kind of instruction (as `value_at`)."""
    ins = direct_fields(fb, at)
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
    call, fields = (
        got[0],
        got[1] + (0, 0),
    )  # KernelCall and DelegateCall: an index (int), then args ([int])
    number = _I32.unpack_from(data, call + fields[0])[0] if fields[0] else 0
    args = direct_ints(fb, call, fields[1], "i")
    if args is None:
        return None
    if tag == _TAG_KERNEL:
        return Instruction(index, chain, position, InstructionKind.KERNEL, number, args=args)
    return Instruction(index, chain, position, InstructionKind.DELEGATE, None, number, args)


_TAG_KERNEL = S.InstructionArguments.KernelCall.value
_TAG_DELEGATE = S.InstructionArguments.DelegateCall.value
