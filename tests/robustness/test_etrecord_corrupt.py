"""A corrupt, hostile or foreign ETRecord never stops the `.pte` from opening.

Each case is a hand-corrupted copy of a real ETRecord (examples/*.etrecord) placed beside a copy
of its real `.pte`: the program must load, summarise and render exactly as without an ETRecord,
with one problem that says what was wrong with the ETRecord. The reader itself raises only
`PteFormatError`.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.source import ProgramSource
from pte_adapter.api import summarize
from pte_adapter.cli import main as cli_main
from pte_adapter.container import etrecord as reader
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Program
from tests.support.examples import EXAMPLES

SMALL = EXAMPLES / "undelegated.etrecord"
LRN = EXAMPLES / "mv2_lrn_ethosu85"


def _parts(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i)) for i in z.infolist()]


def _zip(parts: list[tuple[str, bytes]], compress: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        for name, data in parts:
            z.writestr(name, data)
    return buf.getvalue()


def _replace(name: str, data: bytes) -> Callable[[list[tuple[str, bytes]]], bytes]:
    return lambda parts: _zip([(n, data if n == name else d) for n, d in parts])


def _setup(tmp_path: Path, stem: str, etrecord_bytes: bytes) -> Path:
    pte = tmp_path / f"{stem}.pte"
    shutil.copyfile(EXAMPLES / f"{stem}.pte", pte)
    (tmp_path / f"{stem}.etrecord").write_bytes(etrecord_bytes)
    return pte


CASES: dict[str, Callable[[list[tuple[str, bytes]]], bytes]] = {
    "truncated zip": lambda parts: _zip(parts)[:2000],
    "empty file": lambda parts: b"",
    "not a zip": lambda parts: b"PK\x03\x04" + b"\x00" * 100,
    "no identifier": lambda parts: _zip([(n, d) for n, d in parts if n != "ETRECORD_V0"]),
    "no debug handle map": lambda parts: _zip(
        [(n, d) for n, d in parts if n != "debug_handle_map"]
    ),
    "debug handle map not JSON": _replace("debug_handle_map", b"{not json"),
    "debug handle map a list": _replace("debug_handle_map", b"[1, 2, 3]"),
    "handle is a string": _replace("debug_handle_map", b'{"forward": {"0": "x"}}'),
    "handle is true": _replace("debug_handle_map", b'{"forward": {"0": true}}'),
    "instruction id not a number": _replace("debug_handle_map", b'{"forward": {"zero": 1}}'),
    "deeply nested JSON": _replace("debug_handle_map", b"[" * 200_000 + b"]" * 200_000),
    "edge graph not JSON": _replace("edge_dialect_exported_program/forward", b"\xff\xfe"),
    "edge graph without nodes": _replace(
        "edge_dialect_exported_program/forward", b'{"graph_module": {"graph": {}}}'
    ),
    "node name not a string": _replace(
        "edge_dialect_exported_program/forward",
        json.dumps({"graph_module": {"graph": {"nodes": [{"name": 5, "target": "x"}]}}}).encode(),
    ),
    "bad debug handle metadata": _replace(
        "edge_dialect_exported_program/forward",
        json.dumps(
            {
                "graph_module": {
                    "graph": {
                        "nodes": [
                            {"name": "a", "target": "x", "metadata": {"debug_handle": "1e999"}}
                        ]
                    }
                }
            }
        ).encode(),
    ),
    "zip bomb": _replace("debug_handle_map", b" " * (reader.MAX_JSON_PART + 10)),
}


def _source(program: Program) -> ProgramSource | None:
    return pte_adapter.analyse(program).source


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_corrupt_etrecord_is_a_problem_not_a_failure(tmp_path: Path, case: str) -> None:
    data = CASES[case](_parts(SMALL))
    pte = _setup(tmp_path, "undelegated", data)
    with pytest.raises(PteFormatError):
        reader.read_etrecord(io.BytesIO(data), "undelegated.etrecord")
    program = pte_adapter.load(pte)
    assert program.etrecord is None
    assert len(program.problems) == 1
    assert program.problems[0].startswith("ETRecord not used: undelegated.etrecord")
    clean = summarize(pte_adapter.load(EXAMPLES / "undelegated.pte", sidecars=False))
    got = summarize(program)
    assert got["methods"] == clean["methods"]
    assert got["etrecord"] is None


def test_zip_bomb_stops_at_the_limit() -> None:
    """A part that inflates past the limit is refused after reading limit+1 bytes, however small
    its compressed size and whatever its header claims."""
    bomb = _replace("debug_handle_map", b" " * (reader.MAX_JSON_PART + 10))(_parts(SMALL))
    assert len(bomb) < reader.MAX_JSON_PART // 100  # 64 MiB of spaces deflate to ~64 KiB
    with pytest.raises(PteFormatError, match="limit"):
        reader.read_etrecord(io.BytesIO(bomb), "bomb.etrecord")


def test_pickled_parts_are_never_read(tmp_path: Path) -> None:
    """Garbage in every pickled part changes nothing: they are not opened."""
    parts = [
        (
            n,
            b"\x80\x04garbage"
            if n.endswith(("_state_dict", "_constants", "_example_inputs"))
            else d,
        )
        for n, d in _parts(SMALL)
    ]
    pte = _setup(tmp_path, "undelegated", _zip(parts))
    program = pte_adapter.load(pte)
    assert program.problems == []
    assert _source(program) is not None


def test_stored_zip_reads_like_deflated(tmp_path: Path) -> None:
    """ETRecord.save writes uncompressed members; the committed examples are deflated."""
    pte = _setup(tmp_path, "undelegated", _zip(_parts(SMALL), zipfile.ZIP_STORED))
    stored = _source(pte_adapter.load(pte))
    deflated = _source(pte_adapter.load(EXAMPLES / "undelegated.pte"))
    assert stored is not None and deflated is not None
    assert stored.methods == deflated.methods


def test_foreign_etrecord_is_reported_and_unused(tmp_path: Path) -> None:
    """The small CNN's ETRecord beside the Ethos-U program: nothing from it is shown."""
    pte = _setup(tmp_path, LRN.name, SMALL.read_bytes())
    program = pte_adapter.load(pte)
    result = pte_adapter.analyse(program)
    assert result.source is None
    assert len(result.problems) == 1
    assert "does not belong to this program" in result.problems[0]
    assert "method 'forward'" in result.problems[0]
    s = summarize(program)
    assert s["etrecord"] is None
    assert all(not p["modules"] and not p["causes"] for p in s["methods"][0]["partitions"])
    # The partitioner rules do not need the ETRecord: the why stays.
    assert any("avg_pool3d" in r["reason"] for r in s["methods"][0]["why"])


def test_sibling_example_etrecord_is_foreign(tmp_path: Path) -> None:
    """Same model family, same backend, different program (two LRNs vs one): still refused."""
    pte = _setup(tmp_path, LRN.name, (EXAMPLES / "mv2_lrn2_ethosu85.etrecord").read_bytes())
    result = pte_adapter.analyse(pte_adapter.load(pte))
    assert result.source is None
    assert "does not belong to this program" in result.problems[0]


def test_explicit_etrecord_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = tmp_path / f"{LRN.name}.pte"
    shutil.copyfile(LRN.with_suffix(".pte"), pte)
    assert cli_main(["summary", str(pte), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["etrecord"] is None  # nothing beside it
    assert (
        cli_main(["summary", str(pte), "--json", "--etrecord", str(LRN.with_suffix(".etrecord"))])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["etrecord"] == f"{LRN.name}.etrecord"
    # A missing explicit ETRecord is a problem, not an error.
    assert cli_main(["summary", str(pte), "--etrecord", str(tmp_path / "nope.etrecord")]) == 0
    assert "ETRecord not used" in capsys.readouterr().out


def test_check_failure_names_layer_and_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["check", str(LRN.with_suffix(".pte")), "--max-cpu-ops", "0"])
    assert code == 1
    err = capsys.readouterr().err
    assert "why aten::avg_pool3d.out in features.4 (LocalResponseNorm)" in err
    assert "not supported by the Arm backend for TOSA-1.0+INT+int16+int4+cf" in err
    assert "ExecuTorch 1.5.1 rules" in err


def test_check_partition_failure_names_the_splitting_ops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pte = str(EXAMPLES / "mv2_lrn2_ethosu85.pte")
    assert cli_main(["check", pte, "--backend", "EthosUBackend", "--max-partitions", "1"]) == 1
    err = capsys.readouterr().err
    assert "FAIL forward: 3 EthosUBackend partitions > 1" in err
    assert "in features.4 (LocalResponseNorm)" in err
    assert "in features.12 (LocalResponseNorm)" in err
