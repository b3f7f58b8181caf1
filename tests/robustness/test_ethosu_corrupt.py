"""Broken Ethos-U payloads: clear per-delegate errors, partial results kept, nothing else raised.

Corruptions are made from a real payload (the smallest Ethos-U example) by re-packing its blocks,
so each test breaks exactly one thing.
"""

from __future__ import annotations

import random
import struct

import pytest

from pte_adapter.delegates.ethosu._generated import registers_u55, registers_u85
from pte_adapter.delegates.ethosu.binstream import parse_bin_stream
from pte_adapter.delegates.ethosu.commands import decode_commands
from pte_adapter.delegates.ethosu.cop import parse_cop
from pte_adapter.delegates.ethosu.decode import decode, decode_stream
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.registry import decode_payload
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import EXAMPLES, oracle_program_bytes

HEADER = struct.Struct("<16sIB11s")


def _blocks(payload: bytes) -> list[tuple[str, bytes, int]]:
    """The test's own block splitter (name, data, external flag), independent of binstream."""
    out = []
    pos = 0
    while pos < len(payload):
        name, size, flag, _ = HEADER.unpack_from(payload, pos)
        data = payload[pos + 32 : pos + 32 + size]
        out.append((name.rstrip(b"\0").decode(), data, flag))
        pos += 32 + (size + 15) // 16 * 16
    return out


def _pack(blocks: list[tuple[str, bytes, int]]) -> bytes:
    out = b""
    for name, data, flag in blocks:
        out += HEADER.pack(name.encode(), len(data), flag, b"\0" * 11)
        out += data + b"\0" * (-len(data) % 16)
    return out


def _replace(payload: bytes, name: str, data: bytes, flag: int = 0) -> bytes:
    return _pack(
        [(n, data if n == name else d, flag if n == name else f) for n, d, f in _blocks(payload)]
    )


@pytest.fixture(scope="module")
def payload() -> bytes:
    from executorch.exir._serialize._program import deserialize_pte_binary

    best: bytes | None = None
    for pte in sorted(EXAMPLES.glob("*.pte")):
        if b"vela_bin_stream" not in pte.read_bytes():
            continue
        program = deserialize_pte_binary(oracle_program_bytes(pte.read_bytes())).program
        for data in program.backend_delegate_data:
            raw = bytes(data.data)
            if not raw.startswith(b"vela_bin_stream"):
                continue
            # These tests edit blocks in place: use a payload that carries all its own data.
            if any(b.external for b in parse_bin_stream(memoryview(raw)).blocks):
                continue
            if best is None or len(raw) < len(best):
                best = raw
    if best is None:
        pytest.fail("no Ethos-U example program: run python -m examples.build_examples")
    return best


def _ctx() -> DecodeContext:
    return DecodeContext("EthosUBackend", {})


def test_repack_roundtrip(payload: bytes) -> None:
    assert _pack(_blocks(payload)) == payload


def test_truncated_block_is_a_format_error(payload: bytes) -> None:
    cut = payload[: len(payload) // 2 + 7]
    with pytest.raises(PteFormatError) as e:
        parse_bin_stream(memoryview(cut))
    assert "EthosUBackend payload" in str(e.value) and e.value.offset is not None
    result = decode_payload(memoryview(cut), _ctx())
    assert any("EthosUBackend payload" in p for p in result.problems)


def test_bad_stream_magic(payload: bytes) -> None:
    with pytest.raises(PteFormatError, match="vela_bin_stream"):
        parse_bin_stream(memoryview(b"vela_bad_stream\0" + payload[16:]))


def test_bad_cop_magic_keeps_io(payload: bytes) -> None:
    cmd = dict((n, d) for n, d, _ in _blocks(payload))["cmd_data"]
    broken = _replace(payload, "cmd_data", b"XOP1" + cmd[4:])
    with pytest.raises(PteFormatError) as e:
        parse_cop(memoryview(b"XOP1" + cmd[4:]))
    assert e.value.part == "EthosUBackend payload, block 'cmd_data'" and e.value.offset == 0
    result = decode(memoryview(broken), _ctx())
    assert any("COP1" in p and "cmd_data" in p for p in result.problems)
    # The I/O description survives the broken command stream unchanged.
    intact = decode(memoryview(payload), _ctx())
    assert intact.num_inputs is not None
    assert (result.num_inputs, result.num_outputs) == (intact.num_inputs, intact.num_outputs)
    assert result.graphs[0].inputs == intact.graphs[0].inputs


def test_stream_length_past_end(payload: bytes) -> None:
    cmd = bytearray(dict((n, d) for n, d, _ in _blocks(payload))["cmd_data"])
    config, _words = parse_cop(memoryview(bytes(cmd)))
    tag_at = config.stream_offset - 4
    struct.pack_into("<I", cmd, tag_at, 0x02 | 0xFF << 8 | 0xFFFF << 16)
    with pytest.raises(PteFormatError, match="claims") as e:
        parse_cop(memoryview(bytes(cmd)))
    assert e.value.offset == tag_at
    result = decode(memoryview(_replace(payload, "cmd_data", bytes(cmd))), _ctx())
    assert any("claims" in p for p in result.problems)


def test_unknown_opcode_keeps_ops_decoded_so_far(payload: bytes) -> None:
    cmd = dict((n, d) for n, d, _ in _blocks(payload))["cmd_data"]
    config, words = parse_cop(memoryview(cmd))
    full = decode_commands(words, config.product_code, keep_commands=True)
    assert len(full.operations) > 4
    table = registers_u85 if config.product_code == 2 else registers_u55
    unknown = next(o for o in range(0x3FF, 0, -1) if o not in table.CMD0_OPCODES)
    # Replace the command just after the third operation with an opcode the table lacks.
    third = full.operations[2]
    at = next(c.offset for c in full.commands if c.offset > third.offset)
    broken = bytearray(words)
    struct.pack_into("<I", broken, at, unknown)
    partial = decode_commands(memoryview(bytes(broken)), config.product_code)
    assert [o.offset for o in partial.operations] == [o.offset for o in full.operations[:3]]
    assert any(f"0x{unknown:03x}" in p and str(at) in p for p in partial.problems)
    whole = bytearray(cmd)
    whole[config.stream_offset : config.stream_offset + len(broken)] = broken
    result = decode(memoryview(_replace(payload, "cmd_data", bytes(whole))), _ctx())
    assert result.inner_op_count == sum(1 for o in full.operations[:3] if o.is_compute)
    assert any("unknown opcode" in p for p in result.problems)


def test_missing_external_key_names_the_key(payload: bytes) -> None:
    key = "ab" * 32

    class NoData:
        def find(self, _key: str) -> None:
            return None

        def searched(self) -> str:
            return "nowhere"

    broken = _replace(payload, "weight_data", key.encode(), flag=1)
    ctx = DecodeContext("EthosUBackend", {}, sources=NoData())  # type: ignore[arg-type]
    result = decode(memoryview(broken), ctx)
    assert any(key in p and "weight_data" in p for p in result.problems)
    assert result.inner_op_count  # the command stream still decodes


def test_old_4d_io_records_and_scratch_data(payload: bytes) -> None:
    blocks = _blocks(payload)
    by_name = {n: d for n, d, _ in blocks}
    new_blocks = []
    for n, d, f in blocks:
        if n in ("inputs", "outputs"):
            count = struct.unpack_from("<i", d)[0]
            recs = [struct.unpack_from("<9i", d, 4 + 36 * i) for i in range(count)]
            d = struct.pack("<i", count) + b"".join(struct.pack("<7i", *r[2:]) for r in recs)
        if n == "scratch_size":
            n, d = "scratch_data", bytes(struct.unpack("<I", by_name["scratch_size"])[0])
        new_blocks.append((n, d, f))
    old = _pack(new_blocks)
    stream = parse_bin_stream(memoryview(old))
    now = parse_bin_stream(memoryview(payload))
    assert stream.io_record_size == 28 and now.io_record_size == 36
    assert [i.shape for i in stream.inputs] == [i.shape for i in now.inputs]
    assert stream.scratch_size == now.scratch_size and stream.scratch_from_data_block
    assert stream.problems == []


def _fuzzed(rng: random.Random, payload: bytes) -> tuple[bytes, list[tuple[str, int]]]:
    """Headers, I/O and command data (weights are not read) with 1 to 8 bit flips, random words
    or cuts; returns the bytes and the (kind, offset) edits as a label."""
    buf = bytearray(payload[: 64 * 1024])
    label: list[tuple[str, int]] = []
    for _ in range(rng.randint(1, 8)):
        if not buf:
            break
        kind = rng.choice(["flip", "word", "cut"])
        at = rng.randrange(len(buf))
        label.append((kind, at))
        if kind == "flip":
            buf[at] ^= 1 << rng.randrange(8)
        elif kind == "word" and at + 4 <= len(buf):
            buf[at : at + 4] = rng.randbytes(4)
        else:
            del buf[at:]
    return bytes(buf), label


def _decode_both(data: bytes) -> DecodedDelegate:
    result = decode(memoryview(data), _ctx())
    decode_stream(memoryview(data), keep_commands=True)
    return result


def test_fuzzed_payloads_raise_only_format_errors(payload: bytes) -> None:
    rng = random.Random(191)
    out: Outcomes[DecodedDelegate] = Outcomes("fuzzed Ethos-U payloads")
    for _ in range(300):
        data, label = _fuzzed(rng, payload)
        out.attempt(tuple(label), _decode_both, data)
    # Measured: 224 of 300 (75 %): a cut or a broken header, length or COP word is refused.
    assert out.rejected_share >= 0.6, out


def test_edits_inside_the_weights_keep_the_decode(payload: bytes) -> None:
    """The decoder sizes the weight block but never reads its values: bytes changed there leave
    every operation, tensor, number and problem exactly as in the intact payload."""
    weights = parse_bin_stream(memoryview(payload)).block("weight_data")
    assert weights is not None and weights.size > 0
    start = weights.header_offset + 32
    intact = _decode_both(payload)
    assert intact.inner_op_count and intact.graphs[0].nodes  # something to keep
    rng = random.Random(192)
    out: Outcomes[DecodedDelegate] = Outcomes("edits inside the weight block")
    for _ in range(100):
        data, edits = byte_edits(rng, payload, span=(start, start + weights.size))
        out.attempt(tuple(edits), _decode_both, data)
    assert not out.rejected and len(out.accepted) == 100, out
    for edits, result in out.accepted:
        assert result == intact, edits


def test_u55_table_matches_vela_enumerations() -> None:
    # Vela is in the test extra: a missing one fails here rather than skipping.
    from ethosu.vela.ethos_u55_regs import ethos_u55_regs as regs

    assert {e.value: e.name for e in regs.cmd0} == registers_u55.CMD0_OPCODES
    assert {e.value: e.name for e in regs.cmd1} == registers_u55.CMD1_OPCODES
    for enum in ("pooling_mode", "elementwise_mode"):
        assert {e.value: e.name for e in getattr(regs, enum)} == registers_u55.ENUMS[enum]
    # Field layouts in the module are coarser (e.g. an 8-bit region where the header says 3 used
    # bits): where both name a field, it starts at the same bit and ours fits inside theirs.
    for name in registers_u55.FIELDS:
        cls = getattr(regs, name.lower() + "_t", None)
        if cls is None:
            continue
        lsb = 0
        theirs = {}
        for fname, _ctype, width in cls._fields_:
            theirs[fname] = (lsb, width)
            lsb += width
        for fname, f_lsb, f_width in registers_u55.FIELDS[name]:
            if fname in theirs:
                assert theirs[fname][0] == f_lsb and f_width <= theirs[fname][1], (name, fname)


def test_u85_table_differs_where_the_hardware_does() -> None:
    # Same opcode, different register: why the table is chosen by product.
    assert registers_u55.CMD0_OPCODES[0x12D] != registers_u85.CMD0_OPCODES.get(0x12D)
    assert "NPU_OP_RESIZE" in registers_u85.CMD0_OPCODES.values()
    assert "NPU_OP_RESIZE" not in registers_u55.CMD0_OPCODES.values()
