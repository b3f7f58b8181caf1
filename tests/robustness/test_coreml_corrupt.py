"""Corrupt Core ML payloads (hand-corrupted copies of the real example): the flattened folder's
index is checked before a file is named, only `PteFormatError` leaves the reader, and the rest of
the program still opens."""

from __future__ import annotations

import random
from pathlib import Path

import pte_adapter
from pte_adapter.delegates.coreml import decode as coreml
from pte_adapter.delegates.coreml.filetree import FileTree, read_file_tree
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.explorer.convert import convert_path
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import example

NAME = "coreml_small"


def _payload() -> tuple[int, bytes]:
    program = pte_adapter.load(example(NAME))
    (d,) = [d for m in program.methods for d in m.delegates]
    assert d.payload_offset is not None and d.payload_size is not None
    data = example(NAME).read_bytes()
    return d.payload_offset, data[d.payload_offset : d.payload_offset + d.payload_size]


def _read(payload: bytes) -> FileTree:
    return read_file_tree(memoryview(payload), "Core ML payload", 0)


def test_every_cut_is_rejected() -> None:
    """The index is the payload's end: any cut loses it, or leaves a file past the bytes."""
    _, payload = _payload()
    outcomes: Outcomes[FileTree] = Outcomes("Core ML payload cuts")
    for n in range(0, len(payload), 7):
        outcomes.attempt(n, _read, payload[:n])
    assert not outcomes.accepted, outcomes


def test_edits_of_the_index_are_rejected_or_read_a_consistent_tree() -> None:
    _, payload = _payload()
    tree = _read(payload)
    rng = random.Random(3506)
    outcomes: Outcomes[FileTree] = Outcomes("Core ML index edits")
    for _ in range(400):
        bad, edits = byte_edits(rng, payload, most=3, span=(tree.index_offset, len(payload)))
        outcomes.attempt(tuple(edits), _read, bad)
    # Accepted edits changed a name's letters or a number to another that still fits: every
    # file still lies inside the file bytes.
    for _, got in outcomes.accepted:
        assert all(f.offset + f.size <= got.index_offset for f in got.files)
    assert outcomes.rejected_share > 0.5, outcomes


def test_a_broken_index_keeps_the_program_open(tmp_path: Path) -> None:
    offset, payload = _payload()
    data = bytearray(example(NAME).read_bytes())
    end = offset + len(payload)
    data[end - 1] = ord("[")  # the index no longer ends with its backwards '{'
    bad = tmp_path / f"{NAME}.pte"
    bad.write_bytes(bytes(data))
    program = pte_adapter.load(bad)
    (d,) = [d for m in program.methods for d in m.delegates]
    assert any("index" in p for p in d.decoded.problems), d.decoded.problems
    assert convert_path(bad)
    dec = coreml.decode(memoryview(payload), DecodeContext("CoreMLBackend"))
    assert not dec.problems


def test_edits_of_the_model_specification_raise_only_format_errors() -> None:
    """Byte edits inside model.mlmodel: the protobuf reader rejects what breaks the wire format
    (a length past its message, a wire type that does not fit the field) and reads the rest."""
    _, payload = _payload()
    tree = _read(payload)
    model = tree.find("model.mlpackage/Data/com.apple.CoreML/model.mlmodel")
    assert model is not None
    rng = random.Random(3507)
    outcomes: Outcomes[DecodedDelegate] = Outcomes("model.mlmodel edits")
    ctx = DecodeContext("CoreMLBackend")
    for _ in range(400):
        bad, edits = byte_edits(
            rng, payload, most=4, span=(model.offset, model.offset + model.size)
        )
        outcomes.attempt(tuple(edits), coreml.decode, memoryview(bad), ctx)
    assert 0.1 < outcomes.rejected_share < 0.95, outcomes
    assert all("model specification" in e.part for e in outcomes.errors)
