"""One spelling of a byte count, a time and a count (src/pte_adapter/wording.py): the views of a
real program write every size with one decimal and, where they add the exact count, that count
agrees with it; every estimated time with three significant digits; cycles and MACs with their
thousands separated."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from pte_adapter.api import open_analysis
from pte_adapter.cli import main
from pte_adapter.wording import (
    bytes_short,
    bytes_text,
    cycles_text,
    macs_text,
    plural,
    shape_text,
    signed_bytes,
    thousands,
    us_text,
)
from tests.support.examples import example

UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
SIZE = re.compile(r"(\d+(?:\.\d+)?) (KiB|MiB|GiB)(?: \((\d+) B\))?")
TIME = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?) (us|ms)\b")
UNSEPARATED = re.compile(r"\b\d{4,} (?:MACs|cycles)\b")


def test_the_edges_of_each_unit() -> None:
    assert bytes_text(None) == "?"
    assert bytes_text(1023) == "1023 B" == bytes_short(1023)
    assert bytes_text(1024) == "1.0 KiB (1024 B)"
    assert bytes_short(1024**2 - 1) == "1024.0 KiB"  # rounds up, still in the smaller unit
    assert bytes_short(3 * 1024**3 // 2) == "1.5 GiB"
    assert signed_bytes(0) == "0 B"
    assert signed_bytes(-2048, minus="−") == "−2.0 KiB (2048 B)"
    assert signed_bytes(5) == "+5 B"
    assert shape_text([1, 3, 224, 224]) == "[1, 3, 224, 224]" and shape_text(()) == "[]"
    assert plural(1, "tensor") == "1 tensor" and plural(2, "tensor") == "2 tensors"
    assert thousands(999) == "999" and thousands(4253326) == "4,253,326"
    assert cycles_text(1000) == "1,000 cycles" and macs_text(301301120) == "301,301,120 MACs"
    assert us_text(24.9) == "24.9 us" and us_text(4253.3) == "4.25 ms"


@pytest.mark.parametrize("command", ["summary", "fit", "size", "export"])
def test_every_size_a_view_writes_has_one_spelling(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fit` once wrote `1.44 MiB (1510192 bytes)` beside `summary`'s `1.4 MiB (1510192 B)`, and
    Model Explorer's `deployment_memory` `1.44 MiB`."""
    out_file = tmp_path / "graphs.json"
    extra = ["-o", str(out_file)] if command == "export" else []
    main([command, str(example("mv2_lrn_ethosu85")), *extra])
    out = out_file.read_text() if extra else capsys.readouterr().out
    sizes = SIZE.findall(out)
    assert sizes, out[:2000]
    for number, unit, exact in sizes:
        assert re.fullmatch(r"\d+\.\d", number), (number, unit)
        if exact:
            assert bytes_short(int(exact)) == f"{number} {unit}"
    assert not re.search(r"\d \d*\.?\d* ?(KiB|MiB|GiB) \(\d+ bytes\)", out)


@pytest.mark.parametrize("command", ["summary", "report", "export"])
def test_every_estimated_time_and_count_has_one_spelling(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`summary` once wrote the NPU estimate as `4253.3 us` where the report and Model Explorer
    wrote `4.25 ms`, and `301301120 MACs` beside `4,253,326 cycles`."""
    pte = example("mv2_lrn_ethosu85")
    est = open_analysis(pte).methods[0].estimate
    assert est is not None
    out_file = tmp_path / "out"
    extra = [] if command == "summary" else ["-o", str(out_file)]
    main([command, str(pte), *extra])
    out = html.unescape(out_file.read_text()) if extra else capsys.readouterr().out
    assert f"{us_text(est.time_us)} ({cycles_text(est.cycles)}" in out
    times = TIME.findall(out)
    assert len(times) > 3, out[:2000]
    for number, unit in times:
        assert us_text(float(number) * (1000 if unit == "ms" else 1)) == f"{number} {unit}"
    assert not UNSEPARATED.search(out), UNSEPARATED.findall(out)
    if command == "summary":
        assert macs_text(est.macs) in out
