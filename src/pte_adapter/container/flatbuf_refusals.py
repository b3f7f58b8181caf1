"""Why a FlatBuffer refuses what it was asked to read: a table (the error of the first check that
failed, in the order and words the reader has always used: `FlatBuffer.checked_fields` only says
whether a table passes, as fast as it can), a table used twice, a vector past the unpacking
budget. Each error is worded here, once, when it is raised."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NoReturn

from pte_adapter.errors import LimitExceededError

if TYPE_CHECKING:
    from pte_adapter.container.flatbuf import FlatBuffer

_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")


def refuse_table(fb: FlatBuffer, pos: int, what: str) -> NoReturn:
    """Count the table at `pos` against the budget and raise what is wrong with it."""
    fb.tables_left -= 1
    if fb.tables_left < 0:
        raise LimitExceededError(
            "more tables than this reader will walk for a buffer of this size "
            "(a corrupt length, or offsets pointing at shared tables?)",
            part=fb.part,
            offset=fb.base + pos,
        )
    if pos % 4 or pos < 0 or pos + 4 > fb.size:
        _table_error(fb, pos, what)
    vt: int = pos - _I32.unpack_from(fb.data, pos)[0]
    vtable = fb.vtable(vt)
    if vtable is None:
        _table_error(fb, pos, what, vt)
    fb.need(pos, vtable[0], what)  # the table's inline part runs past the end
    raise AssertionError("no check failed")  # pragma: no cover


def _table_error(fb: FlatBuffer, pos: int, what: str, vt: int | None = None) -> NoReturn:
    """Raise the error of the first check of the table or its vtable that fails."""
    if pos % 4:
        raise fb.error(f"{what}: table at {pos} is not 4-byte aligned", pos)
    fb.need(pos, 4, what)
    assert vt is not None
    if vt % 2:
        raise fb.error(f"{what}: vtable at {vt} is not 2-byte aligned", pos)
    fb.need(vt, 4, f"{what} vtable")
    vt_len = int(_U16.unpack_from(fb.data, vt)[0])
    inline = int(_U16.unpack_from(fb.data, vt + 2)[0])
    if vt_len < 4 or vt_len % 2:
        raise fb.error(f"{what}: bad vtable length {vt_len}", vt)
    fb.need(vt, vt_len, f"{what} vtable")
    if inline < 4:
        raise fb.error(f"{what}: bad table size {inline}", vt)
    raise AssertionError("no check failed")  # pragma: no cover


def refuse_shared(
    fb: FlatBuffer, kind: str, pos: int, use: tuple[int, int], first: tuple[int, int]
) -> NoReturn:
    """`FlatBuffer.claim`'s refusal: the table at `pos` is `kind` `use` (the table whose vector
    holds it, the index there) and was `first` already."""
    raise fb.error(
        f"{kind}[{use[1]}] of the table at byte {use[0]} is the same table as "
        f"{kind}[{first[1]}] of the table at byte {first[0]}: ExecuTorch writes each of "
        f"its {kind} as a table of its own (shared tables are refused)",
        pos,
    )


def refuse_unpacking(fb: FlatBuffer, pos: int, what: str) -> NoReturn:
    """`FlatBuffer.charge`'s refusal: the vectors unpacked so far passed the budget."""
    from pte_adapter.container.flatbuf import UNPACKED_BYTES_PER_BYTE  # loaded: it called here

    raise LimitExceededError(
        f"{what}: the vectors read so far add up to more than "
        f"{UNPACKED_BYTES_PER_BYTE} times the buffer's size (offsets pointing at shared "
        "data?)",
        part=fb.part,
        offset=fb.base + pos,
    )
