"""Corrupt BundledPrograms: one clear `PteFormatError` naming the part and the byte when the program
cannot be had, and the program still shown when only the test cases are broken.

Inputs are hand-corrupted copies of the real example bundle (and of bundles ExecuTorch's writer
makes, tests/support/bundles.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_OK, main
from pte_adapter.container._generated import bundled_program_schema as B
from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.errors import PteFormatError
from pte_adapter.explorer.convert import convert_path
from tests.support.examples import EXAMPLES

BUNDLE = EXAMPLES / "bundle_ethosu55.bpte"
DATA = BUNDLE.read_bytes()


def _program_span() -> tuple[int, int]:
    root = FlatBuffer(DATA, "x").root()
    found = root.bytes_span(B.BundledProgram.program, "program")
    assert found is not None
    return found


def _suites_vector() -> int:
    """Where the length of `method_test_suites` sits."""
    fb = FlatBuffer(DATA, "x")
    root = fb.root()
    field = root._field(B.BundledProgram.method_test_suites, 4)
    return fb.follow(field, "method_test_suites")


def _write(tmp_path: Path, data: bytes, name: str = "bad.bpte") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("name", ["bad.bpte", "bad.pte"])
def test_truncated_anywhere(tmp_path: Path, name: str) -> None:
    """Every cut: the program opens (test cases that were cut off are a problem of the bundle) or
    one PteFormatError names the bundle and a byte."""
    cuts = sorted({len(DATA) * k // 29 for k in range(1, 29)} | {4, 8, 63, 64, len(DATA) - 1})
    opened = 0
    for cut in cuts:
        p = _write(tmp_path, DATA[:cut], name)
        try:
            program = pte_adapter.load(p)
        except PteFormatError as e:
            assert e.offset is not None and f"at byte {e.offset}" in str(e), str(e)
            assert name in str(e)
            continue
        opened += 1
        assert program.bundle is not None and program.methods
    assert opened < len(cuts)


def test_corrupt_program_inside_names_the_bundle_and_its_byte(tmp_path: Path) -> None:
    start, size = _program_span()
    data = bytearray(DATA)
    data[start + 4 : start + 8] = b"XXXX"  # the program's own identifier, ET12
    with pytest.raises(PteFormatError) as e:
        pte_adapter.load(_write(tmp_path, bytes(data)))
    assert e.value.offset == start + 4
    assert str(e.value) == (
        f"bad.bpte at byte {start + 4}: in the bundled program (bytes {start}-{start + size}, "
        "at its byte 4): not an ExecuTorch program: expected identifier b'ET12' at bytes 4-7, "
        "found b'XXXX'"
    )


def test_program_longer_than_the_bundle(tmp_path: Path) -> None:
    start, _ = _program_span()
    data = bytearray(DATA)
    data[start - 4 : start] = struct.pack("<I", len(DATA))
    with pytest.raises(PteFormatError, match=r"bad\.bpte \(bundle\) at byte \d+: .*program") as e:
        pte_adapter.load(_write(tmp_path, bytes(data)))
    assert e.value.offset == start - 4


def test_a_bundle_of_nothing(tmp_path: Path) -> None:
    """ExecuTorch's writer around an empty file: a bundle with no program."""
    from tests.support.bundles import write_bundle

    empty = _write(tmp_path, b"", "empty.pte")
    p = write_bundle(empty, tmp_path / "nothing.bpte", {})
    with pytest.raises(PteFormatError, match="the bundle holds no program"):
        pte_adapter.load(p)


def test_broken_test_cases_keep_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the test cases are unreadable: the program opens in every view, and the problem names
    the part and the byte."""
    at = _suites_vector()
    data = bytearray(DATA)
    data[at : at + 4] = struct.pack("<I", 0x7FFF_FFFF)
    p = _write(tmp_path, bytes(data))
    result = pte_adapter.open_analysis(p)
    assert result.bundle is not None
    (problem,) = result.bundle.problems
    assert problem.startswith(
        f"bundled test cases not read past this point: bad.bpte (bundle) at byte {at}: "
    )
    assert f"bundle: {problem}" in result.problems
    assert result.bundle.methods["forward"].cases == []
    assert [m.name for m in result.methods] == ["forward"]
    graphs = convert_path(p)
    assert graphs and graphs[0].id == "forward"
    assert main(["summary", str(p)]) == EXIT_OK
    assert f"problem: bundle: {problem}" in capsys.readouterr().out


def test_cli_reports_one_line_for_a_corrupt_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start, _ = _program_span()
    data = bytearray(DATA)
    data[start + 4 : start + 8] = b"XXXX"
    p = _write(tmp_path, bytes(data))
    for command in (
        ["summary"],
        ["size"],
        ["check", "--max-partitions", "9"],
        ["export", "-o", str(tmp_path / "g.json")],
    ):
        assert main([command[0], str(p), *command[1:]]) == EXIT_BAD_FILE
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "bad.bpte at byte" in err and "bundled program" in err
