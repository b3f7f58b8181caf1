"""Corrupt TOSA bytes must give `PteFormatError` and nothing else (and never hang); each test
counts how many of its corrupted inputs were rejected, and what the accepted ones read as."""

from __future__ import annotations

import random
import struct

import pytest
import tosa_serializer as ts  # tosa-tools, in the test extra

from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.tosa.decode import decode, read_tosa
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.corruption import Outcomes, byte_edits, cuts_of_zeros_only


def _graph() -> bytes:
    import numpy as np

    g = ts.TosaSerializer("", targetMajor=1, targetMinor=0, targetPatch=0, targetDraft=False)
    x = g.addPlaceholder([1, 4, 4, 2], ts.DType.INT8)
    w = g.addConst([3, 1, 1, 2], ts.DType.INT8, np.arange(6, dtype=np.int8), name="w")
    b = g.addConst([3], ts.DType.INT32, np.zeros(3, dtype=np.int32), name="b")
    zp = g.addConst([1], ts.DType.INT8, np.zeros(1, dtype=np.int8), name="zp")
    y = g.addIntermediate([1, 4, 4, 3], ts.DType.INT32)
    attr = ts.TosaSerializerAttribute()
    attr.Conv2dAttribute([0, 0, 0, 0], [1, 1], [1, 1], False, ts.DType.INT32)
    g.addOperator(ts.Op.CONV2D, [x.name, w.name, b.name, zp.name, zp.name], [y.name], attr)
    g.addOutputTensor(y)
    return bytes(g.serialize())


GRAPH = _graph()


def _read(data: bytes) -> DecodedDelegate:
    read_tosa(data)
    return decode(memoryview(data), DecodeContext("TOSABackend"))


INTACT = _read(GRAPH)


def test_intact_graph_reads() -> None:
    assert [op.kind for op in read_tosa(GRAPH).main.operators][-1] == "CONV2D"


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 16])
def test_truncated_header(cut: int) -> None:
    with pytest.raises(PteFormatError):
        read_tosa(GRAPH[:cut])


def test_truncated_anywhere() -> None:
    """A cut may only remove padding (then the graph reads as the intact one); anything else is a
    format error."""
    out: Outcomes[DecodedDelegate] = Outcomes("cuts of the TOSA graph")
    for cut in range(len(GRAPH)):
        out.attempt(cut, _read, GRAPH[:cut])
    padding = cuts_of_zeros_only(GRAPH) - {len(GRAPH)}
    assert len(padding) < 16  # the graph ends in a string's terminator and its padding
    assert len(out.rejected) >= len(GRAPH) - len(padding), out
    assert set(out.accepted_labels()) <= padding, out
    for cut, result in out.accepted:
        assert result == INTACT, f"a cut at {cut} of padding changed the graph"


def test_bad_identifier() -> None:
    with pytest.raises(PteFormatError, match="identifier"):
        read_tosa(GRAPH[:4] + b"TOSB" + GRAPH[8:])


def test_root_offset_past_end() -> None:
    with pytest.raises(PteFormatError):
        read_tosa(struct.pack("<I", len(GRAPH) + 100) + GRAPH[4:])


def test_every_offset_word_set_to_garbage() -> None:
    """Overwrite each aligned word with a huge value: a format error where the reader follows the
    word as an offset or a length, or a (different) graph where it is data (or where -16, read as
    a table's vtable offset, lands on other valid bytes)."""
    out: Outcomes[DecodedDelegate] = Outcomes("aligned words set to garbage")
    for pos in range(0, len(GRAPH) - 3, 4):
        for garbage in (0xFFFFFFF0, 0x7FFFFFFF):
            mutated = bytearray(GRAPH)
            mutated[pos : pos + 4] = struct.pack("<I", garbage)
            out.attempt((pos, garbage), _read, bytes(mutated))
    # Measured: 380 of 588 (65 %); a reader that lets corrupt offsets or lengths through falls below.
    assert out.rejected_share >= 0.6, out


def test_random_byte_mutations() -> None:
    rng = random.Random(84)
    out: Outcomes[DecodedDelegate] = Outcomes("random byte edits of the TOSA graph")
    for _ in range(300):
        mutated, edits = byte_edits(rng, GRAPH)
        out.attempt(tuple(edits), _read, mutated)
    # Measured: 275 of 300 (272 to 279 with other seeds); nearly every byte of this small graph is
    # structure (offsets, lengths, vtables, enums) rather than tensor data.
    assert out.rejected_share >= 0.8, out


def test_random_bytes_with_identifier() -> None:
    """Random bytes with the TOSA identifier in place are never a graph (their root offset points
    outside them)."""
    rng = random.Random(93)
    out: Outcomes[DecodedDelegate] = Outcomes("random bytes with the TOSA identifier")
    for i in range(100):
        tail = rng.randbytes(rng.randint(0, 256))
        out.attempt(i, _read, tail[:4] + b"TOSA" + tail[4:])
    assert len(out.rejected) == out.tried == 100, out
