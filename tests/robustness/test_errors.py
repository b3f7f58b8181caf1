"""Broken input gives one clear error type that says what and where — never a raw low-level error.

Inputs are hand-corrupted copies of real example files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.cli import EXIT_BAD_FILE, main
from pte_adapter.errors import PteFormatError
from tests.support.corruption import Outcomes, cuts_of_zeros_only
from tests.support.examples import EXAMPLE_PTES, example

WHERE = re.compile(r"at byte \d+")


def _write(tmp_path: Path, data: bytes, name: str = "bad.pte") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_not_a_pte(tmp_path: Path) -> None:
    p = _write(tmp_path, b"# just a text file, not a program\n" * 4)
    with pytest.raises(PteFormatError, match=r"not an ExecuTorch program.*ET12") as e:
        pte_adapter.load(p)
    assert e.value.offset == 4


def test_wrong_identifier(tmp_path: Path) -> None:
    data = bytearray(example("undelegated").read_bytes())
    data[4:8] = b"ET13"
    with pytest.raises(PteFormatError, match=r"at byte 4: .*found b'ET13'"):
        pte_adapter.load(_write(tmp_path, bytes(data)))


@pytest.mark.parametrize("size", [0, 3, 7, 8, 15, 40])
def test_tiny_files(tmp_path: Path, size: int) -> None:
    data = example("undelegated").read_bytes()[:size]
    with pytest.raises(PteFormatError):
        pte_adapter.load(_write(tmp_path, data))


@pytest.mark.parametrize("path", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_truncated_copies(tmp_path: Path, path: Path) -> None:
    """Every truncation of a real file either raises PteFormatError naming a byte offset or, when
    the cut lost nothing but trailing zero bytes (a string's terminator), loads as the intact file."""
    data = path.read_bytes()
    # The intact copy and every cut are the same path (what a decoder reports names its file and
    # folder); each is renamed over the one before, so a program still mapping it keeps its bytes.
    copy = tmp_path / path.name

    def swap_in(content: bytes) -> Path:
        new = tmp_path / "next.tmp"
        new.write_bytes(content)
        return new.replace(copy)

    intact = pte_adapter.load(swap_in(data)).methods
    cuts = sorted({len(data) * k // 23 for k in range(1, 23)} | {len(data) - 1, 64, 200})

    def load_cut(cut: int) -> tuple[bool, list[str]]:
        program = pte_adapter.load(swap_in(data[:cut]))
        problems = [
            problem
            for m in program.methods
            for d in m.delegates
            for problem in d.problems + d.decoded.problems
        ]
        if program.bundle is not None:  # test cases cut off after an intact program
            problems += [f"bundle: {p}" for p in program.bundle.problems]
        return program.methods == intact, problems

    out: Outcomes[tuple[bool, list[str]]] = Outcomes(f"cuts of {path.name}")
    for cut in cuts:
        out.attempt(cut, load_cut, cut)
    for e in out.errors:
        assert e.offset is not None and f"at byte {e.offset}" in str(e), str(e)
    zeros_only = cuts_of_zeros_only(data)
    # A bundle whose program is whole shows it, and says its test cases were cut off.
    bundle = pte_adapter.load(swap_in(data)).bundle
    past_program = (
        {c for c in cuts if c >= bundle.program.offset + bundle.program.size} if bundle else set()
    )
    assert len(out.rejected) >= len(set(cuts) - zeros_only - past_program), out
    for cut, (same, problems) in out.accepted:
        assert same, f"the cut at {cut} of {len(data)} changed the program"
        if cut not in zeros_only:
            assert cut in past_program and any(p.startswith("bundle: ") for p in problems), cut
        # Whatever could not be read is reported on the delegates, not raised; each problem is
        # a sentence, not an empty string or a repr.
        assert all(isinstance(p, str) and p.strip() for p in problems), problems


def test_truncated_segment_data_names_the_offset(tmp_path: Path) -> None:
    path = example("undelegated")
    data = path.read_bytes()
    with pytest.raises(PteFormatError) as e:
        pte_adapter.load(_write(tmp_path, data[: len(data) - 10]))
    assert WHERE.search(str(e.value)), str(e.value)
    assert "truncated" in str(e.value)


def test_cli_reports_one_line_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(tmp_path, b"\x00" * 64)
    assert main(["summary", str(p)]) == EXIT_BAD_FILE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.pte" in err and "ET12" in err
    assert main(["summary", str(tmp_path / "missing.pte")]) == EXIT_BAD_FILE
    assert "cannot open" in capsys.readouterr().err


def test_adapter_raises_format_error(tmp_path: Path) -> None:
    """Model Explorer shows the exception's text as the conversion error."""
    from pte_adapter.main import PteAdapter

    p = _write(tmp_path, b"garbage!" * 10)
    with pytest.raises(PteFormatError, match="ET12"):
        PteAdapter().convert(str(p), {})
