"""Corrupt Core ML payloads (hand-corrupted copies of the real example): the flattened folder's
index is checked before a file is named, only `PteFormatError` leaves the reader, and the rest of
the program still opens."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

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


def test_files_are_found_by_path_in_one_look_up() -> None:
    """The folder's files indexed once (issue 44: each of 20,000 constants scanned the list)."""
    _, payload = _payload()
    tree = _read(payload)
    assert all(tree.find(f.path) is f for f in tree.files)
    assert tree.find("model.mlpackage/nothing") is None


def test_folders_nested_past_the_limit_are_refused(tmp_path: Path) -> None:
    """A chain of folders is walked by parent, a path made only for a file (issue 44: every
    level's full path was built and kept); past MAX_DEPTH the payload is refused."""
    from pte_adapter.delegates.coreml.filetree import MAX_DEPTH
    from pte_adapter.errors import LimitExceededError
    from tests.support.hostile_programs import coreml_with_folder_chain

    def payload_of(pte: Path) -> bytes:
        (d,) = [
            d for m in pte_adapter.load(pte, decode_delegates=False).methods for d in m.delegates
        ]
        assert d.payload_offset is not None and d.payload_size is not None
        return pte.read_bytes()[d.payload_offset : d.payload_offset + d.payload_size]

    # The root is at depth 0, so a chain of MAX_DEPTH - 1 folders puts its file just inside.
    fits = _read(payload_of(coreml_with_folder_chain(tmp_path / "fits", MAX_DEPTH - 1)))
    assert fits.find("/".join(["d"] * (MAX_DEPTH - 1) + ["deep.json"])) is not None
    with pytest.raises(LimitExceededError, match=f"limit {MAX_DEPTH}"):
        _read(payload_of(coreml_with_folder_chain(tmp_path / "deep", MAX_DEPTH + 1)))


def test_the_index_is_counted_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Like an ETRecord's JSON parts, the index's values are counted (commas and brackets) and
    an index of more is refused unparsed (issue 44: 16 MB of `0,` took 444 MB)."""
    import json

    from pte_adapter.delegates.coreml import filetree
    from pte_adapter.errors import LimitExceededError

    _, payload = _payload()
    tree = _read(payload)
    index = payload[tree.index_offset :][::-1]
    count = index.count(b",") + index.count(b"[") + index.count(b"{") + 1
    assert count >= len(json.loads(index)["nodes"])
    monkeypatch.setattr(filetree, "MAX_INDEX_VALUES", count - 1)
    with pytest.raises(LimitExceededError, match="counted before parsing"):
        _read(payload)
    monkeypatch.setattr(filetree, "MAX_INDEX_VALUES", count)
    assert _read(payload).files == tree.files


def test_operations_past_the_cap_are_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's operations are capped over all its blocks, like Ethos-U's command stream
    (issue 44): the first are shown, a problem names the cap, the rest is not read."""
    from pte_adapter.delegates.coreml import mil

    _, payload = _payload()
    ctx = DecodeContext("CoreMLBackend")
    whole = coreml.decode(memoryview(payload), ctx)
    n = sum(len(g.nodes) for g in whole.graphs if g.name.startswith("MIL"))
    monkeypatch.setattr(mil, "MAX_OPERATIONS", n - 3)
    cut = coreml.decode(memoryview(payload), ctx)
    assert sum(len(g.nodes) for g in cut.graphs if g.name.startswith("MIL")) == n - 3
    assert any(f"more than {n - 3} operations" in p for p in cut.problems), cut.problems
    assert not any(f"more than {n - 3}" in p for p in whole.problems)
