"""A delegate id nobody knows (QNN, a custom backend ...) must never stop a file opening.

The test takes a real example, rewrites its delegate id inside the program FlatBuffer in a temp
copy (same length, so every offset stays valid), and loads it: once with the payload untouched (the
registry recognises the payload by its magic), once with the payload's magic bytes scrambled too
(nothing to recognise: the opaque view with a hex preview).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.registry import decode_payload
from pte_adapter.program.model import InstructionKind, Program
from tests.support.examples import EXAMPLES

# (example, backend id, magic offset in the payload, magic length): examples that may exist.
CANDIDATES = [
    ("mv2_xnnpack_fp32.pte", "XnnpackBackend", 4, 4),
    ("mv2_xnnpack_int8.pte", "XnnpackBackend", 4, 4),
    ("vgf_small.pte", "VgfBackend", 0, 4),
]
# The examples ship with the repository: one that is missing fails (below), it is not skipped.
AVAILABLE = CANDIDATES


def _custom_id(original: str) -> str:
    """A same-length id no decoder knows: 'XnnpackBackend' -> 'CustomXBackend'."""
    stem = "Custom" + "X" * max(0, len(original) - len("Custom") - len("Backend"))
    new = (stem + "Backend")[: len(original)].ljust(len(original), "X")
    assert len(new) == len(original) and new != original
    return new


def _rewrite_id(data: bytearray, old: str, new: str) -> int:
    """Replace every FlatBuffer string `old` (u32 length, bytes, NUL) in the program part."""
    program_size = len(data)
    if data[8:12] == b"eh00":
        program_size = struct.unpack_from("<Q", data, 16)[0]
    encoded = struct.pack("<I", len(old)) + old.encode() + b"\0"
    count = 0
    pos = data.find(encoded, 0, program_size)
    while pos >= 0:
        data[pos + 4 : pos + 4 + len(old)] = new.encode()
        count += 1
        pos = data.find(encoded, pos + 1, program_size)
    return count


def _kernel_counts(program: Program) -> list[int]:
    return [sum(i.kind is InstructionKind.KERNEL for i in m.instructions) for m in program.methods]


@pytest.mark.parametrize("case", AVAILABLE, ids=lambda c: c[0])
@pytest.mark.parametrize("scramble_magic", [False, True], ids=["magic-kept", "magic-scrambled"])
def test_unknown_delegate_id_still_opens(
    case: tuple[str, str, int, int], scramble_magic: bool, tmp_path: Path
) -> None:
    name, backend, magic_at, magic_len = case
    src = EXAMPLES / name
    original = pte_adapter.load(src)
    delegates = [d for m in original.methods for d in m.delegates if d.id == backend]
    assert delegates

    data = bytearray(src.read_bytes())
    custom = _custom_id(backend)
    assert _rewrite_id(data, backend, custom) == len(delegates)  # one id string per delegate
    if scramble_magic:
        for d in delegates:
            assert d.payload_offset is not None
            at = d.payload_offset + magic_at
            data[at : at + magic_len] = b"\xa5" * magic_len
    out = tmp_path / name
    out.write_bytes(bytes(data))

    program = pte_adapter.load(out)
    custom_delegates = [d for m in program.methods for d in m.delegates if d.id == custom]
    assert len(custom_delegates) == len(delegates)
    assert not any(d.id == backend for m in program.methods for d in m.delegates)
    # The rest of the program is untouched: same instructions, same operators.
    assert _kernel_counts(program) == _kernel_counts(original)
    for d, before in zip(custom_delegates, delegates, strict=True):
        assert d.payload_size == before.payload_size
        dec = d.decoded
        if scramble_magic:
            # Nothing recognises it: an opaque node with id, specs, size and a hex preview.
            assert dec.graphs == []
            assert dec.inner_op_count is None
            assert "payload_preview" in dec.summary
            assert "a5 " * magic_len in dec.summary["payload_preview"]
            assert "payload_recognised_as" not in dec.summary
        else:
            # The registry sniffs the payload's magic and still decodes it.
            assert dec.summary.get("payload_recognised_as") == backend
            assert dec.graphs and not dec.problems
            assert dec.inner_op_count == before.decoded.inner_op_count
            # A decoded payload is its graph: no hex preview beside it (docs/model-explorer.md).
            assert "payload_preview" not in dec.summary
        assert [s.key for s in d.compile_specs] == [s.key for s in before.compile_specs]


def test_registry_gives_unknown_payloads_a_preview() -> None:
    payload = memoryview(bytes(range(200)))
    # QnnBackend has a record but no decoder (Core ML's payloads are decoded now).
    dec = decode_payload(payload, DecodeContext(delegate_id="QnnBackend"))
    assert dec.graphs == [] and dec.problems == []
    assert dec.summary["payload_preview"].startswith("00 01 02 03")


def test_another_executorch_backend_is_named_from_its_record(tmp_path: Path) -> None:
    """A real program whose delegate id is rewritten to NeutronBackend (same length as
    XnnpackBackend): the partition is named and coloured from NeutronBackend's record."""
    from pte_adapter.api import summarize
    from pte_adapter.backends import BACKENDS, backend_colour

    src = EXAMPLES / "mv2_xnnpack_fp32.pte"
    data = bytearray(src.read_bytes())
    assert _rewrite_id(data, "XnnpackBackend", "NeutronBackend") == 1
    out = tmp_path / src.name
    out.write_bytes(bytes(data))
    m = summarize(pte_adapter.load(out))["methods"][0]
    assert [p["name"] for p in m["partitions"]] == ["Neutron partition 1 (NeutronBackend)"]
    assert m["delegate_calls"] == {"NeutronBackend": 1}
    assert backend_colour("NeutronBackend") == BACKENDS["NeutronBackend"].colour
