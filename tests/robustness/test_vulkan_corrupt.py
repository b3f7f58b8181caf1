"""Corrupt Vulkan payloads (hand-corrupted copies of the real examples): only `PteFormatError` ever
leaves the reader, the rest of the file still opens, and a bad reference inside the graph is a
problem of its partition, not an exception."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vulkan import decode as vulkan
from pte_adapter.delegates.vulkan.layout import payload_layout
from pte_adapter.delegates.vulkan.records import GRAPH, TABLES
from pte_adapter.explorer.convert import convert_path
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.corruption import Outcomes, byte_edits, cuts_of_zeros_only
from tests.support.examples import example

SEED = 3505


def _payloads(name: str) -> list[tuple[int, bytes]]:
    program = pte_adapter.load(example(name))
    data = example(name).read_bytes()
    out = []
    for m in program.methods:
        for d in m.delegates:
            assert d.payload_offset is not None and d.payload_size is not None
            out.append(
                (d.payload_offset, data[d.payload_offset : d.payload_offset + d.payload_size])
            )
    return out


def _decode(payload: bytes) -> DecodedDelegate:
    return vulkan.decode(memoryview(payload), DecodeContext(delegate_id="VulkanBackend"))


def test_every_cut_of_a_payload_is_rejected_or_loses_only_padding() -> None:
    for _, payload in _payloads("vulkan_cnn_island"):
        intact = _decode(payload)
        keep = cuts_of_zeros_only(payload)
        outcomes: Outcomes[DecodedDelegate] = Outcomes("Vulkan payload cuts")
        for n in range(len(payload)):
            outcomes.attempt(n, _decode, payload[:n])
        for n, dec in outcomes.accepted:
            assert n in keep, f"a cut at {n} of {len(payload)} bytes was accepted"
            assert dec.summary == intact.summary
        assert len(outcomes.rejected) >= len(payload) - len(keep), outcomes


def test_header_fields_out_of_range_are_rejected_with_their_offset() -> None:
    (_, payload), *_ = _payloads("vulkan_cnn_island")
    outcomes: Outcomes[DecodedDelegate] = Outcomes("VH00 header edits")
    for field_at, fmt in ((8, "<H"), (10, "<I"), (14, "<I"), (18, "<I"), (22, "<Q")):
        for value in (0, 1, len(payload), 0xFFFFFFFF):
            bad = bytearray(payload)
            struct.pack_into(fmt, bad, field_at, min(value, 0xFFFF if fmt == "<H" else value))
            outcomes.attempt((field_at, value), _decode, bytes(bad))
    # The magic, byte by byte.
    for i in range(4, 8):
        bad = bytearray(payload)
        bad[i] ^= 0x20
        outcomes.attempt(("magic", i), _decode, bytes(bad))
    # Only a raw-bytes block moved to the payload's end, or emptied, still fits; everything else
    # points outside the payload or into another part.
    assert set(outcomes.accepted_labels()) == {(18, len(payload)), (22, 0)}, outcomes
    # Each error names the field it found wrong: the length, the FlatBuffer's region, the raw
    # bytes' region, or the magic.
    for label, error in zip(outcomes.rejected, outcomes.errors, strict=True):
        assert error.part == "Vulkan payload (VulkanBackend)"
        # (a header length past the FlatBuffer's start is the FlatBuffer overlapping the header)
        fields = {"magic": {4}, 8: {8, 10}, 10: {10}, 14: {10}, 18: {18}, 22: {18}}
        assert error.offset in fields[label[0]], (label, error)


def test_random_edits_of_the_flatbuffer_raise_only_format_errors() -> None:
    rng = random.Random(SEED)
    outcomes: Outcomes[DecodedDelegate] = Outcomes("VkGraph byte edits")
    for _, payload in _payloads("vulkan_transformer") + _payloads("vulkan_cnn_island"):
        header = vulkan.read_graph(memoryview(payload), "x", 0).header
        span = (header.flatbuffer_offset, header.flatbuffer_offset + header.flatbuffer_size)
        for _ in range(300):
            bad, edits = byte_edits(rng, payload, span=span)
            dec = outcomes.attempt(tuple(edits), _decode, bad)
            if dec is not None:
                outcomes.attempt(("layout", *edits), payload_layout, memoryview(bad), 0, None)
    # Most edits land in values a reader cannot check (a dim, an int, a name's letters); a
    # reader that checked nothing would reject none.
    assert outcomes.rejected, outcomes
    assert 0.5 < outcomes.rejected_share < 0.9, outcomes  # 74% with this seed


def _chain_arg_position(payload: bytes, call: int, arg: int) -> int:
    """Where argument `arg` of operator call `call` is stored in the payload."""
    header = vulkan.read_graph(memoryview(payload), "x", 0).header
    start = header.flatbuffer_offset
    root = FlatBuffer(payload[start : start + header.flatbuffer_size], "x").root()
    table = list(root.iter_tables(GRAPH["chain"].slot, "chain"))[call]
    slot = next(f.slot for f in TABLES["OperatorCall"] if f.name == "args")
    entry = table.fb.u16(table.vt + 4 + 2 * slot)
    vector = table.follow(table.pos + entry, "args")
    return start + vector + 4 + 4 * arg


def test_an_undefined_argument_is_a_problem_of_its_partition(tmp_path: Path) -> None:
    path = example("vulkan_cnn_island")
    data = bytearray(path.read_bytes())
    (offset, payload), *_ = _payloads("vulkan_cnn_island")
    struct.pack_into("<i", data, offset + _chain_arg_position(payload, 0, 1), 999_999)
    bad = tmp_path / path.name
    bad.write_bytes(bytes(data))
    program = pte_adapter.load(bad)
    first = program.methods[0].delegates[0].decoded
    assert any("refers to undefined value 999999" in p for p in first.problems), first.problems
    (node, *_) = first.graphs[0].nodes
    assert node.attrs["weight"] == "undefined value 999999"
    # The other partitions, and the graph, are untouched.
    assert all(not d.decoded.problems for d in program.methods[0].delegates[1:])
    assert convert_path(bad)


def test_a_broken_payload_keeps_the_file_open(tmp_path: Path) -> None:
    path = example("vulkan_cnn_island")
    data = bytearray(path.read_bytes())
    offset, _ = _payloads("vulkan_cnn_island")[1]
    data[offset + 4 : offset + 8] = b"XXXX"
    bad = tmp_path / path.name
    bad.write_bytes(bytes(data))
    program = pte_adapter.load(bad)
    broken = program.methods[0].delegates[1].decoded
    assert any("VH00" in p for p in broken.problems), broken.problems
    assert not broken.graphs
    assert program.methods[0].delegates[0].decoded.graphs  # the others still decode
    assert convert_path(bad)


def test_byte_counts_saturate() -> None:
    """A tensor of 450 dimensions of 2^32 - 1 (issue 44: its byte count, over 4,300 digits, could
    not be printed) counts NUMEL_CAP elements."""
    from pte_adapter.delegates.vulkan.records import VkTensor
    from pte_adapter.program.model import NUMEL_CAP

    huge = VkTensor("FLOAT32", [0xFFFFFFFF] * 450, -1, -1, "", "", "UNSET")
    assert huge.nbytes == 4 * NUMEL_CAP
    assert VkTensor("FLOAT32", [2, 3, 0xFFFFFFFF, 0], -1, -1, "", "", "UNSET").nbytes == 0


def test_calls_past_the_cap_are_counted_not_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    (_, payload), *_ = _payloads("vulkan_cnn_island")
    whole = _decode(payload)
    n = len(whole.graphs[0].nodes)
    monkeypatch.setattr(vulkan, "MAX_OPERATIONS", n - 1)
    cut = _decode(payload)
    assert len(cut.graphs[0].nodes) == n - 1
    assert any(f"{n} operator calls: more than {n - 1}" in p for p in cut.problems), cut.problems


def test_list_tensors_past_the_cap_are_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value list is worked out once however many calls name it, and its tensors are drawn as
    ports while the payload's budget lasts (issue 44: one list named by 4,000 calls)."""
    from pte_adapter.delegates.vulkan import graphs

    (_, payload), *_ = _payloads("vulkan_transformer")

    def ports(dec: DecodedDelegate) -> int:
        return sum(len(op.inputs) + len(op.outputs) for op in dec.graphs[0].nodes)

    whole = _decode(payload)
    assert not any("not drawn" in p for p in whole.problems), whole.problems
    monkeypatch.setattr(graphs, "MAX_LIST_TENSORS", 1)
    cut = _decode(payload)
    assert any("are not drawn as edges" in p for p in cut.problems), cut.problems
    assert ports(cut) < ports(whole)
