"""Corrupt TOSA bytes must give `PteFormatError` and nothing else (and never hang)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.delegates.tosa import decode, read_tosa
from pte_adapter.errors import PteFormatError

ts = pytest.importorskip("tosa_serializer")


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


def _read(data: bytes) -> None:
    try:
        read_tosa(data)
        decode(memoryview(data), DecodeContext("TOSABackend"))
    except PteFormatError:
        pass


def test_intact_graph_reads() -> None:
    assert [op.kind for op in read_tosa(GRAPH).main.operators][-1] == "CONV2D"


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 16])
def test_truncated_header(cut: int) -> None:
    with pytest.raises(PteFormatError):
        read_tosa(GRAPH[:cut])


def test_truncated_anywhere() -> None:
    """A cut may only remove padding (then the graph still reads); anything else is a format error."""
    for cut in range(len(GRAPH)):
        _read(GRAPH[:cut])


def test_bad_identifier() -> None:
    with pytest.raises(PteFormatError, match="identifier"):
        read_tosa(GRAPH[:4] + b"TOSB" + GRAPH[8:])


def test_root_offset_past_end() -> None:
    with pytest.raises(PteFormatError):
        read_tosa(struct.pack("<I", len(GRAPH) + 100) + GRAPH[4:])


def test_every_offset_word_set_to_garbage() -> None:
    """Overwrite each aligned word with a huge value: a format error or a (different) graph."""
    for pos in range(0, len(GRAPH) - 3, 4):
        for garbage in (0xFFFFFFF0, 0x7FFFFFFF):
            mutated = bytearray(GRAPH)
            mutated[pos : pos + 4] = struct.pack("<I", garbage)
            _read(bytes(mutated))


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, len(GRAPH) - 1), st.integers(0, 255)), min_size=1, max_size=8)
)
def test_random_byte_mutations(edits: list[tuple[int, int]]) -> None:
    mutated = bytearray(GRAPH)
    for pos, value in edits:
        mutated[pos] = value
    _read(bytes(mutated))


@settings(max_examples=100, deadline=2000)
@given(st.binary(min_size=0, max_size=256))
def test_random_bytes_with_identifier(tail: bytes) -> None:
    _read(tail[:4] + b"TOSA" + tail[4:])
