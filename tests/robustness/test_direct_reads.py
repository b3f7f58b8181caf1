"""The readers that read straight from the buffer (the program's values and calls, XNNPACK's
tensor values, nodes and constant entries: `program/reader.py`, `delegates/xnnpack/`) give
exactly what the checked reads give, on real programs and on corrupted copies of them: the same
program and decoded graphs, or the same error.

The direct reads fall back to the checked ones for anything a check would refuse, so the checked
reads alone (each direct read made to decline) are the reference.
"""

from __future__ import annotations

import random
import struct
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pte_adapter import api
from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.pte import PteFile
from pte_adapter.delegates.xnnpack import decode
from pte_adapter.program import reader
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import example

# Small programs with each kind of direct read: portable kernels and values, XNNPACK graphs fp32
# and int8 (quantized values, which are read the checked way), Ethos-U calls.
PROGRAMS = ["tiny_gpt_xnnpack", "mv2_xnnpack_int8", "two_methods", "mv2_lrn_ethosu85"]
EDITS = 60  # corrupted copies per program, spread over its FlatBuffers


@contextmanager
def checked_reads_only() -> Iterator[None]:
    """Every direct read declines, so everything is read the checked way."""
    mp = pytest.MonkeyPatch()
    for module, name in [
        (reader, "value_at"),
        (reader, "instruction_at"),
        (decode, "tensor_value_at"),
        (decode, "_known_xnode"),
        (decode, "constant_entry_at"),
    ]:
        mp.setattr(module, name, lambda *args: None)
    try:
        yield
    finally:
        mp.undo()


def _read(data: bytes) -> str:
    """What a user of the reading sees: every method's values, calls, problems and decoded
    delegates, and the program's problems."""
    program = api.load_bytes(data, "corrupt.pte")
    return repr(
        [
            (m.name, m.values, m.instructions, m.chains, m.problems, m.delegates)
            for m in program.methods
        ]
        + [program.problems]
    )


def _regions(data: bytes) -> list[tuple[int, int]]:
    """The program's FlatBuffer, and its first three delegate payloads' FlatBuffers (past their
    XH00 header)."""
    program = api.read_container(data, "x", None)
    size = program.program_size
    regions = [(8, size)]
    for method in program.methods:
        for d in method.delegates:
            if d.payload_offset is None or d.payload_size is None or d.payload_size < 32:
                continue
            start, n = d.payload_offset, d.payload_size
            if data[start + 4 : start + 8] == b"XH00":
                offset, n = struct.unpack_from("<II", data, start + 10)
                start += offset
            regions.append((start + 8, start + n))
    return regions[:4]


@pytest.mark.parametrize("name", PROGRAMS)
def test_direct_reads_read_real_programs_as_the_checked_reads(name: str) -> None:
    data = example(name).with_suffix(".pte").read_bytes()
    with checked_reads_only():
        checked = _read(data)
    assert _read(data) == checked


@pytest.mark.parametrize("name", PROGRAMS)
def test_direct_reads_of_corrupt_copies_give_what_the_checked_reads_give(name: str) -> None:
    data = example(name).with_suffix(".pte").read_bytes()
    rng = random.Random(f"direct reads {name}")
    direct: Outcomes[str] = Outcomes(f"{name}, direct reads")
    checked: Outcomes[str] = Outcomes(f"{name}, checked reads")
    regions = _regions(data)
    for k in range(EDITS):
        corrupt, edits = byte_edits(rng, data, most=3, span=regions[k % len(regions)])
        label = tuple(edits)
        direct.attempt(label, _read, corrupt)
        with checked_reads_only():
            checked.attempt(label, _read, corrupt)
    assert direct.rejected == checked.rejected
    assert [str(e) for e in direct.errors] == [str(e) for e in checked.errors]
    assert direct.accepted == checked.accepted
    # The edits reach what is read: some copies are refused, some read differently.
    assert direct.rejected, direct
    assert any(result != _read(data) for _, result in direct.accepted), direct


def test_a_tensor_vtable_with_overlapping_fields_is_read_the_checked_way() -> None:
    """A vtable that puts two fields at one offset is corrupt, yet `Table` reads it: the direct
    read cannot lay such fields out as one struct call (`direct_reads.compile_row`), so those
    tensors are read the checked way, to what the checked reads give."""
    data = example("tiny_gpt_xnnpack").with_suffix(".pte").read_bytes()
    plan = next(PteFile(data, "x").root.iter_tables(S.Program.execution_plan, "execution_plan"))
    vtables: Counter[int] = Counter()
    for value in plan.iter_tables(S.ExecutionPlan.values, "values"):
        tag, table = value.union(S.EValue.val, "val")
        if tag == S.KernelTypes.Tensor and table is not None and table.offsets[S.Tensor.sizes]:
            vtables[table.vt] += 1
    vt = vtables.most_common(1)[0][0]  # the program's FlatBuffer starts the file
    corrupt = bytearray(data)
    sizes = struct.unpack_from("<H", data, vt + 4 + 2 * S.Tensor.sizes)[0]
    struct.pack_into("<H", corrupt, vt + 4 + 2 * S.Tensor.dim_order, sizes)  # dim_order = sizes
    with checked_reads_only():
        checked = _read(bytes(corrupt))
    assert _read(bytes(corrupt)) == checked != _read(data)
