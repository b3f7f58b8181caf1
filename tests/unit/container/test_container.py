"""The container layer: extended-header variants, memory mapping, external .ptd data."""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import pte_adapter
from pte_adapter.container.pte import PteFile, map_file
from tests.support.examples import EXAMPLES, example


def test_file_is_memory_mapped_not_copied() -> None:
    program = pte_adapter.load(example("undelegated"))
    assert program.sources is not None
    assert isinstance(program.sources.pte.data.obj, mmap.mmap)


def test_24_byte_extended_header_reads_the_same(tmp_path: Path) -> None:
    """Pre-1.0 files have a 24-byte eh00 header (no segment_data_size); rewrite a real file's
    header length to 24 and it must read identically."""
    data = bytearray(example("undelegated").read_bytes())
    assert data[8:12] == b"eh00" and struct.unpack_from("<I", data, 12)[0] == 32
    struct.pack_into("<I", data, 12, 24)
    old = tmp_path / "old_header.pte"
    old.write_bytes(bytes(data))
    pte = PteFile(map_file(old), old.name)
    assert pte.header is not None and pte.header.length == 24
    assert pte.header.segment_data_size is None
    a, b = pte_adapter.load(example("undelegated")), pte_adapter.load(old)
    assert [len(m.instructions) for m in a.methods] == [len(m.instructions) for m in b.methods]
    assert [v.payload for v in a.methods[0].values] == [v.payload for v in b.methods[0].values] or [
        v.kind for v in a.methods[0].values
    ] == [v.kind for v in b.methods[0].values]


def test_extended_header_shorter_than_24_is_rejected(tmp_path: Path) -> None:
    import pytest

    from pte_adapter.errors import PteFormatError

    data = bytearray(example("undelegated").read_bytes())
    struct.pack_into("<I", data, 12, 16)
    p = tmp_path / "short.pte"
    p.write_bytes(bytes(data))
    with pytest.raises(PteFormatError, match="at byte 12: extended header length 16"):
        pte_adapter.load(p)


def test_external_ptd_weights_are_found_beside_the_pte(tmp_path: Path) -> None:
    """The .ptd example's external data resolves from the .ptd next to it; moved away alone,
    the program still opens and says which key is missing."""
    import shutil

    pte = example("mv2_ethosu85_ptd")
    ptds = sorted(EXAMPLES.glob("*.ptd"))
    assert ptds, "the .ptd example ships its .ptd"
    program = pte_adapter.load(pte)
    assert program.sources is not None
    assert [p.name for p in program.sources.ptd_files] == [p.name for p in ptds]
    d = program.methods[0].delegates[0]
    assert not any("missing" in p or "not found" in p for p in d.decoded.problems), (
        d.decoded.problems
    )

    lonely = tmp_path / pte.name
    shutil.copy(pte, lonely)
    program = pte_adapter.load(lonely)
    problems = " ".join(p for m in program.methods for d in m.delegates for p in d.decoded.problems)
    assert problems, "a missing .ptd must be reported on the delegate"
