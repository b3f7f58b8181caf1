"""`pte-adapter size`: every byte in one part, and the parts agree with independent readers.

Oracles: ExecuTorch's own `.pte` reader (`_get_extended_header`, `_flatbuffer_to_program` for the
segment table before it is restored, `deserialize_pte_binary` for payload, constant-buffer and
named-data bytes), XNNPACK's `XNNHeader.from_bytes`, tosa-tools' generated readers, and a
Vela block walk written here from the `vela_bin_stream` format (not the adapter's parser).
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.size import SizePart, SizeReport, size_report
from pte_adapter.cli import EXIT_OK, main
from tests.support.examples import example, oracle


def _report(path: Path) -> SizeReport:
    return size_report(pte_adapter.load(path))


def _parts(part: SizePart) -> list[SizePart]:
    return [part] + [p for c in part.children for p in _parts(c)]


def test_every_byte_is_in_exactly_one_part(example_pte: Path) -> None:
    report = _report(example_pte)
    size = example_pte.stat().st_size
    assert report.file_size == size
    pos = 0
    for leaf in report.leaves():
        assert leaf.offset == pos, f"{leaf.name} starts at {leaf.offset}, expected {pos}"
        assert leaf.size > 0
        pos = leaf.end
    assert pos == size
    assert sum(report.totals().values()) == size
    for part in _parts(report.root):  # children cover their parent exactly
        if part.children:
            assert part.children[0].offset == part.offset
            assert part.children[-1].end == part.end
            assert sum(c.size for c in part.children) == part.size
    assert report.problems == []


def _raw_program(data: bytes) -> tuple[Any, Any]:
    """ExecuTorch's reading of the program FlatBuffer before segments are moved back into it."""
    from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program
    from executorch.exir._serialize._program import _get_extended_header

    eh = _get_extended_header(data)
    size = eh.program_size if eh is not None and eh.is_valid() else len(data)
    return eh, _flatbuffer_to_program(data[:size])


def test_header_and_segments_match_executorch(example_pte: Path) -> None:
    data = example_pte.read_bytes()
    eh, program = _raw_program(data)
    report = _report(example_pte)
    top = report.root.children
    assert (top[0].kind, top[0].offset, top[0].size) == ("header", 0, 8)
    flat = next(p for p in top if p.kind == "program_flatbuffer")
    if eh is None or not eh.is_valid():
        assert flat.end == len(data)
        assert all("segment" not in p.detail for p in top)
        return
    assert (top[1].kind, top[1].offset, top[1].size) == ("extended_header", 8, eh.length)
    assert flat.end == eh.program_size
    ours = {p.detail["segment"]: p for p in top if "segment" in p.detail}
    non_empty = {i: seg for i, seg in enumerate(program.segments) if seg.size}
    assert set(ours) == set(non_empty)  # an empty segment holds no byte, so it is no part
    for i, seg in non_empty.items():
        assert (ours[i].offset, ours[i].size) == (eh.segment_base_offset + seg.offset, seg.size)
    # What each segment holds, from ExecuTorch's table.
    roles: dict[int, str] = {}
    for plan in program.execution_plan:
        for d in plan.delegates:
            if d.processed.location.name == "SEGMENT":
                roles[d.processed.index] = "delegate_payload"
    if program.constant_segment and program.constant_segment.offsets:
        roles[program.constant_segment.segment_index] = "constant_segment"
    for m in program.mutable_data_segments or []:
        roles[m.segment_index] = "mutable_segment"
    for nd in program.named_data or []:
        roles.setdefault(nd.segment_index, "named_data")
    assert {i: p.kind for i, p in ours.items()} == {
        i: r for i, r in roles.items() if i in non_empty
    }


def test_payload_constant_and_named_bytes_match_executorch(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    data = example_pte.read_bytes()
    pte: Any = oracle(example_pte, oracle_cache)
    theirs = pte.program
    parts = _parts(_report(example_pte).root)
    payloads = {
        label: p for p in parts if p.kind == "delegate_payload" for label in p.detail["delegates"]
    }
    for plan in theirs.execution_plan:
        for i, d in enumerate(plan.delegates):
            part = payloads[f"{plan.name} delegate {i}"]
            expected = bytes(theirs.backend_delegate_data[d.processed.index].data)
            assert data[part.offset : part.end] == expected
    # Constant buffers (data + alignment padding) are the oracle's restored buffers.
    buffers = [p for p in parts if p.kind == "constant_tensor" and "buffer" in p.detail]
    for p in buffers:
        assert data[p.offset : p.end] == bytes(theirs.constant_buffer[p.detail["buffer"]].storage)
    restored = sum(len(b.storage) for b in theirs.constant_buffer)
    assert sum(p.size for p in buffers) == restored
    named = pte.named_data
    for p in parts:
        if p.kind == "named_data":
            entry = named.pte_data[p.detail["key"]]
            buffer = named.buffers[entry.buffer_index]
            assert data[p.offset : p.end] == bytes(getattr(buffer, "buffer", buffer))


def _vela_blocks(payload: bytes) -> list[tuple[str, int, int]]:
    """(name, data offset, size) of each block: 32-byte header (16-byte name, u32 size, u8
    external flag, 11 reserved), data padded to 16."""
    out = []
    pos = 0
    while pos + 32 <= len(payload):
        name, size = struct.unpack_from("<16sI", payload, pos)
        label = name.rstrip(b"\0").decode()
        out.append((label, pos + 32, size))
        pos += 32 + (size + 15) // 16 * 16
        if label == "vela_end_stream":
            break
    return out


def _payload_cases(kind: str) -> list[str]:
    return {
        "EthosUBackend": [
            "mv2_ethosu85_full",
            "mv2_lrn_ethosu85",
            "mv2_lrn2_ethosu85",
            "mv2_ethosu55",
            "mv2_ethosu85_ptd",
        ],
        "XnnpackBackend": ["mv2_xnnpack_fp32", "mv2_xnnpack_int8", "xnnpack_ptd"],
        "TOSABackend": ["mv2_tosa", "tosa_debug"],
    }[kind]


@pytest.mark.parametrize("name", _payload_cases("EthosUBackend"))
def test_ethosu_payload_parts_are_the_vela_blocks(name: str) -> None:
    path = example(name)
    data = path.read_bytes()
    for part in _parts(_report(path).root):
        if part.kind != "delegate_payload":
            continue
        blocks = _vela_blocks(data[part.offset : part.end])
        assert blocks and blocks[0][0] == "vela_bin_stream"
        children = {(c.offset - part.offset, c.size): c for c in part.children}
        for block, at, size in blocks:
            assert children[(at - 32, 32)].kind == "vela_block_header"
            if size == 0:
                continue
            child = children[(at, size)]
            if block == "cmd_data":
                assert child.kind == "npu_command_stream"
                assert data[child.offset : child.offset + 4] == b"COP1"
            elif block == "weight_data" and child.kind != "external_key":
                kinds = Counter(c.kind for c in child.children)
                assert kinds["npu_weights"] > 0 and kinds["npu_scales"] > 0
                assert sum(c.size for c in child.children) == size
            elif block in ("inputs", "outputs", "scratch_size"):
                assert child.kind == "npu_io_description"


@pytest.mark.parametrize("name", _payload_cases("XnnpackBackend"))
def test_xnnpack_payload_parts_match_xnnheader(name: str) -> None:
    from executorch.backends.xnnpack.serialization.xnnpack_graph_serialize import XNNHeader

    path = example(name)
    data = path.read_bytes()
    for part in _parts(_report(path).root):
        if part.kind != "delegate_payload":
            continue
        header = XNNHeader.from_bytes(data[part.offset : part.offset + 30])
        kids = {c.kind: c for c in part.children}
        fb = kids["xnnpack_flatbuffer"]
        assert (fb.offset - part.offset, fb.size) == (
            header.flatbuffer_offset,
            header.flatbuffer_size,
        )
        if header.constant_data_size:
            block = kids["xnnpack_constant_block"]
            assert (block.offset - part.offset, block.size) == (
                header.constant_data_offset,
                header.constant_data_size,
            )
        else:
            assert "xnnpack_constant_block" not in kids


@pytest.mark.parametrize("name", _payload_cases("TOSABackend"))
def test_tosa_constants_match_tosa_tools(name: str) -> None:
    from tests.oracle.test_tosa_reader import oracle_graph

    path = example(name)
    data = path.read_bytes()
    for part in _parts(_report(path).root):
        if part.kind != "delegate_payload":
            continue
        blocks = oracle_graph(data[part.offset : part.end])
        expected = sum(
            t["data"]
            for b in blocks.values()
            for t in (*b["tensors"].values(), *b["shapes"].values())
        )
        got = sum(leaf.size for leaf in part.leaves() if leaf.kind == "tosa_constant")
        assert got == expected > 0


def test_constants_are_listed_largest_first_with_their_readers() -> None:
    """undelegated: each constant's readers are the kernel calls that take it, recounted from the
    oracle's instruction stream."""
    path = example("undelegated")
    report = _report(path)
    sizes = [c.nbytes for c in report.constants]
    assert sizes == sorted(sizes, reverse=True)
    plan: Any = oracle(path).program.execution_plan[0]  # type: ignore[attr-defined]
    readers: dict[int, set[str]] = {}
    for i, call in enumerate(x.instr_args for c in plan.chains for x in c.instructions):
        op = plan.operators[call.op_index]
        for a in call.args:
            ev = plan.values[a].val
            if (
                type(ev).__name__ == "Tensor"
                and ev.data_buffer_idx > 0
                and ev.allocation_info is None
            ):
                readers.setdefault(ev.data_buffer_idx, set()).add(
                    f"forward #{i} {op.name}.{op.overload}"
                )
    ours = {int(c.where.split("[")[1].rstrip("]")): set(c.readers) for c in report.constants}
    assert {k: v for k, v in ours.items() if v} == readers


def test_external_ptd_entries_are_listed_separately() -> None:
    """xnnpack_ptd: the entries listed are the .ptd's own (ExecuTorch's FlatTensor reader), each
    named by an external plan tensor or an XNNPACK constant of the program."""
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    path = example("xnnpack_ptd")
    report = _report(path)
    assert [e.file for e in report.external] == ["xnnpack_weights.ptd"]
    ptd = FlatTensorSerializer().deserialize(
        Cord((path.parent / "xnnpack_weights.ptd").read_bytes())
    )
    sizes = {
        k: len(bytes(getattr(b, "buffer", b)))
        for k, b in ((k, ptd.buffers[v.buffer_index]) for k, v in ptd.named_data.items())
    }
    e = report.external[0]
    assert {n.key for n in e.entries} == set(sizes)  # this program uses every entry
    for n in e.entries:
        assert n.nbytes == sizes[n.key] and n.used_by
    assert e.referenced_bytes == sum(sizes.values())
    # Not part of the file: the .pte's own leaves still add up to its size without them.
    assert sum(leaf.size for leaf in report.leaves()) == path.stat().st_size


def test_cli_size_json_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("mv2_lrn_ethosu85")
    assert main(["size", str(path), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert sum(out["totals"].values()) == path.stat().st_size
    assert set(out["delegates"]) == {"forward delegate 0", "forward delegate 1"}
    assert main(["size", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert f"every byte in one part: {path.stat().st_size} B" in text


@pytest.mark.parametrize(
    "name", ["mutable_buffer", "xnnpack_ptd", "mv2_ethosu85_ptd", "tosa_debug"]
)
def test_corrupt_copies_still_add_up_or_fail_cleanly(name: str) -> None:
    """Hand-corrupted copies of real files: `size` and `diff` either raise PteFormatError or
    account for every byte; no other exception reaches the user."""
    import random

    from pte_adapter.analysis.diff import diff_programs
    from pte_adapter.api import analyse, load_bytes
    from pte_adapter.errors import PteFormatError

    original = example(name).read_bytes()
    rng = random.Random(15)
    measured = 0
    for _ in range(60):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        try:
            program = load_bytes(bytes(data), name)
            report = size_report(program)
            result = analyse(program)
            diff_programs(result, result)
        except PteFormatError:
            continue
        measured += 1
        assert sum(leaf.size for leaf in report.leaves()) == len(data)
    assert measured > 0


@pytest.mark.parametrize("name", _payload_cases("TOSABackend"))
def test_tosa_delegate_constants_and_readers_match_tosa_tools(name: str) -> None:
    """Each TOSA constant listed by `size` is a tosa-tools tensor with data, with as many readers
    as tosa-tools' operators that take it as an input."""
    from tests.oracle.test_tosa_reader import oracle_graph

    path = example(name)
    data = path.read_bytes()
    report = _report(path)
    (payload,) = [p for p in _parts(report.root) if p.kind == "delegate_payload"]
    blocks = oracle_graph(data[payload.offset : payload.end])
    expected: Counter[tuple[str, int, int]] = Counter()
    for b in blocks.values():
        for tname, t in (*b["tensors"].items(), *b["shapes"].items()):
            if t["data"]:
                readers = sum(tname in op["inputs"] for op in b["ops"])
                expected[(tname, t["data"], readers)] += 1
    got = Counter(
        (c.name.split(":")[0], c.nbytes, len(c.readers))
        for c in report.constants
        if c.owner.endswith("(TOSABackend)")
    )
    assert got == expected
