"""Decode an NPU register command stream into operations.

A command is one word (cmd0: opcode in bits 0-9, control bits 14-15 = 0, 16-bit parameter in bits
16-31) or two words (cmd1: control = 1, the second word is a 32-bit payload). `NPU_SET_*` commands
write registers; `NPU_OP_*` commands start work using whatever the registers hold. Vela omits a
write when the register already holds the value, so the decoder keeps a shadow register file and
takes a snapshot at every `NPU_OP_*`. The opcode tables differ between U55/U65 and U85 (the same
opcode can name different registers), so the table is chosen from the COP header's product field.
"""

from __future__ import annotations

import sys
from array import array
from types import ModuleType

from pte_adapter.delegates.ethosu._generated import registers_u55, registers_u85
from pte_adapter.delegates.ethosu.operations import (
    COMPUTE_OPS,
    MAX_OPERATIONS,
    Command,
    CommandStream,
    DmaTransfer,
    FeatureMap,
    NpuOperation,
    WeightStream,
)
from pte_adapter.delegates.ethosu.registers import ShadowRegisters, snapshot

__all__ = [
    "COMPUTE_OPS",
    "MAX_OPERATIONS",
    "Command",
    "CommandStream",
    "DmaTransfer",
    "FeatureMap",
    "NpuOperation",
    "WeightStream",
    "decode_commands",
    "table_for",
]


def table_for(product_code: int) -> ModuleType:
    """U85 (product 2) has its own register map; U55 and U65 share one."""
    return registers_u85 if product_code == 2 else registers_u55


def _words(stream: memoryview, out: CommandStream) -> array[int]:
    """The stream as little-endian 32-bit words (a trailing partial word is a problem)."""
    n_words = len(stream) // 4
    if len(stream) % 4:
        out.problems.append(f"the command stream length {len(stream)} is not a multiple of 4")
    words = array("I")
    if words.itemsize != 4:  # pragma: no cover - every supported platform has 4-byte "I"
        words = array("L")
    words.frombytes(bytes(stream[: n_words * 4]))
    if sys.byteorder == "big":  # pragma: no cover
        words.byteswap()
    return words


def _command_at(
    words: array[int], i: int, table: ModuleType, out: CommandStream
) -> tuple[str, int, int | None, int] | None:
    """(name, value, second word, size in words) of the command at word `i`; None (with the
    problem recorded) when it cannot be read."""
    word = words[i]
    opcode = word & 0x3FF
    control = (word >> 14) & 0x3
    offset = i * 4
    name: str | None = None
    payload: int | None = None
    value, size = word, 1
    if control == 0:
        name = table.CMD0_OPCODES.get(opcode)
    elif control == 1:
        name = table.CMD1_OPCODES.get(opcode)
        if i + 1 >= len(words):
            out.problems.append(
                f"command stream byte {offset}: two-word command 0x{word:08x} is cut off "
                "by the end of the stream"
            )
            return None
        payload = words[i + 1]
        value, size = word | payload << 32, 2
    if name is None:
        out.problems.append(
            f"command stream byte {offset}: unknown opcode 0x{opcode:03x} "
            f"(word 0x{word:08x}, control {control}); decoding stopped, "
            f"{len(out.operations)} operations kept"
        )
        return None
    return name, value, payload, size


def decode_commands(
    stream: memoryview,
    product_code: int,
    *,
    weight_streams: int = 1,
    keep_commands: bool = False,
) -> CommandStream:
    """Walk the command words. Never raises for bad words: problems end the walk, kept results stay.

    `weight_streams` is how many weight/scale register pairs the NPU reads (weight decoders on
    U85, cores on a dual-core U65); registers past that count may hold stale values.
    """
    table = table_for(product_code)
    regs = ShadowRegisters(table)
    out = CommandStream()
    words = _words(stream, out)
    n_words = len(words)
    i = 0
    while i < n_words:
        command = _command_at(words, i, table, out)
        if command is None:
            break
        name, value, payload, size = command
        offset, param = i * 4, words[i] >> 16
        if keep_commands:
            out.commands.append(Command(offset, words[i] & 0x3FF, size == 2, name, param, payload))
        out.command_count += 1
        i += size
        regs.values[name] = value
        if name.startswith("NPU_SET_"):
            continue
        if len(out.operations) >= MAX_OPERATIONS:
            out.problems.append(
                f"command stream byte {offset}: more than {MAX_OPERATIONS} operations; "
                f"decoding stopped, {len(out.operations)} operations kept"
            )
            break
        out.operations.append(
            snapshot(regs, len(out.operations), offset, name, param, weight_streams)
        )
        if name == "NPU_OP_STOP":
            if i < n_words:
                out.problems.append(f"{n_words - i} command words follow NPU_OP_STOP; not decoded")
            break
    else:
        if not out.operations or out.operations[-1].name != "NPU_OP_STOP":
            out.problems.append("the command stream ends without NPU_OP_STOP")
    out.words_decoded = i
    return out
