"""`pte-adapter numerics` and the numeric gap in `summary`, `check --min-snr`, `report`, `export`
and the node data, on the examples run with a debug buffer; and every bad input of issue 43 item 8
in one clear line (no traceback): a debug buffer of another run, truncated, empty or missing, an
ETDump without debug events, a reference of another network, no ETRecord, `--aot` without torch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, main
from tests.support.examples import ROOT, example
from tests.support.numerics import files

INT8, FP32 = "numerics_island_int8", "numerics_island_fp32"
PAIR = [str(example(INT8)), "--reference", str(example(FP32))]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["numerics", *args, "--json"]) == EXIT_OK
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _keys(data: object) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def test_numerics_json_has_the_issues_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, *PAIR)
    (method,) = data["methods"]
    n = method["numerics"]
    assert n["reference"] == f"{FP32}.pte" and data["reference"] == n["reference"]
    assert n["rows"] and n["worst"] is not None and n["first_below"] is not None
    for row in n["rows"]:
        for key in ("aot_ops", "runtime_ops", "layer", "instructions", "partition"):
            assert key in row
        for key in ("mse", "l1", "snr_db", "max_abs", "cosine"):
            assert isinstance(row[key], float), (key, row[key])
    assert {r["runtime_ops"][0] for r in n["rows"]} == {
        "DELEGATE_CALL",
        "native_call_pow.Tensor_Scalar_out",
    }
    dequantized = [r["dequantized"] for r in n["rows"] if r["dtype"] == "int8"]
    assert dequantized and all("XnnpackBackend payload" in d["source"] for d in dequantized)


def test_docs_document_every_numerics_key(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/json.md's `numerics --json` table names exactly the keys the JSON has (a pair with
    dequantized integers, outputs not joined and a first row below the threshold)."""
    page = (ROOT / "docs" / "json.md").read_text()
    section = page.split("\n## `numerics --json` keys\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", section, re.MULTILINE))
    seen = _keys(_json(capsys, *PAIR))
    other = str(example("numerics_portable"))
    seen |= _keys(_json(capsys, other, "--reference", str(example("numerics_xnnpack_int8"))))
    assert documented == seen, (documented - seen, seen - documented)


def test_inf_snr_is_the_string_inf(capsys: pytest.CaptureFixture[str]) -> None:
    """XNNPACK fp32 against the portable kernels: rows agree to float32 rounding, and a row whose
    two tensors are equal (no noise) has `"inf"` for its SNR."""
    data = _json(capsys, str(example("numerics_portable")), "--reference", str(example(FP32)))
    assert data["methods"][0]["numerics"]["problems"]  # another network: said, not guessed
    same = _json(
        capsys, str(example("numerics_portable")), "--reference", str(example("numerics_portable"))
    )
    rows = same["methods"][0]["numerics"]["rows"]
    assert rows and all(r["snr_db"] == "inf" and r["mse"] == 0.0 for r in rows)


def test_text_names_the_worst_and_the_first_below(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["numerics", *PAIR]) == EXIT_OK
    out = capsys.readouterr().out
    assert "compared with numerics_island_fp32.pte" in out
    assert re.search(r"worst: [0-9.]+ dB at ", out) and "first below 30 dB: " in out
    assert "[CPU island 1]" in out and "EMULATED" not in out


def test_values_only_without_a_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["numerics", str(example("numerics_portable"))]) == EXIT_OK
    out = capsys.readouterr().out
    assert "10 logged outputs" in out and "give --reference OTHER.pte or --aot" in out


def test_summary_check_report_and_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", *PAIR]) == EXIT_OK
    assert "  accuracy: first below 30 dB at " in capsys.readouterr().out
    assert main(["summary", *PAIR, "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["methods"][0]["numerics"]["rows"]
    assert main(["check", *PAIR, "--min-snr", "20"]) == EXIT_OK
    assert main(["check", *PAIR, "--min-snr", "25"]) == EXIT_CHECK_FAILED
    err = capsys.readouterr().err
    assert re.search(r"SNR [0-9.]+ dB < 25 at ", err)
    assert main(["check", str(example(INT8)), "--min-snr", "25"]) == EXIT_USAGE
    out = tmp_path / "r.html"
    assert main(["report", *PAIR, "-o", str(out)]) == EXIT_OK
    html = out.read_text()
    assert "snr-track" in html and "Numeric gap" in html
    graph = tmp_path / "g.json"
    assert main(["export", *PAIR, "-o", str(graph)]) == EXIT_OK
    forward = next(g for g in json.loads(graph.read_text())["graphs"] if g["id"] == "forward")
    attrs = forward["groupNodeAttributes"]
    assert attrs[""]["accuracy"].startswith("first below 30 dB at ")
    assert sum("output SNR" in a for a in attrs.values()) == 3  # every partition


def test_node_data_colours_by_the_metric_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for metric in ("snr", "mse", "cosine"):
        out = tmp_path / f"{metric}.json"
        assert main(["numerics", *PAIR, "--node-data", str(out), "--metric", metric]) == EXIT_OK
        forward = json.loads(out.read_text())["forward"]
        values = [v["value"] for v in forward["results"].values()]
        assert len(values) == 6  # 3 instructions and their 3 partition groups
        assert metric in forward["name"].lower() or "snr" in forward["name"].lower()
    capsys.readouterr()


# -- bad input: one clear line each ---------------------------------------------------------


def _copy(tmp_path: Path, stem: str, *, etrecord: bool = True) -> Path:
    pte, record, etdump, buffer = files(stem)
    for f in (pte, etdump, buffer, *((record,) if etrecord else ())):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / pte.name


def _problems(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code = main(["numerics", *args, "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if not captured.out:
        assert code != EXIT_OK
        return [captured.err.strip()]
    data = json.loads(captured.out)
    return data["problems"] + [p for m in data["methods"] for p in m["numerics"]["problems"]]


def test_a_debug_buffer_of_another_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = _copy(tmp_path, "numerics_portable")
    other = files("numerics_xnnpack_int8")[3]  # 3 KB: portable's tensors lie past its end
    problems = _problems(capsys, str(pte), "--debug-buffer", str(other))
    assert any(
        re.search(r"\d+ of the 11 tensors .* lie outside .*another run", p) for p in problems
    )


def test_a_truncated_debug_buffer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = _copy(tmp_path, "numerics_portable")
    buffer = tmp_path / "numerics_portable.debug_buffer.bin"
    buffer.write_bytes(buffer.read_bytes()[:20000])
    problems = _problems(capsys, str(pte), "--reference", str(example("numerics_portable")))
    assert any("lie outside numerics_portable.debug_buffer.bin" in p for p in problems)
    assert main(["numerics", str(pte), "--reference", str(example("numerics_portable"))]) == 0
    out = capsys.readouterr().out
    assert "inf" in out and "cannot be read" in out  # what fits is compared, the rest says why


def test_an_empty_debug_buffer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = _copy(tmp_path, "numerics_portable")
    (tmp_path / "numerics_portable.debug_buffer.bin").write_bytes(b"")
    problems = _problems(capsys, str(pte))
    assert any("numerics_portable.debug_buffer.bin is empty" in p for p in problems)


def test_a_missing_debug_buffer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = _copy(tmp_path, "numerics_portable")
    (tmp_path / "numerics_portable.debug_buffer.bin").unlink()
    problems = _problems(capsys, str(pte))
    assert any(p.startswith("no debug buffer beside numerics_portable.etdp") for p in problems)


def test_an_etdump_without_debug_events(capsys: pytest.CaptureFixture[str]) -> None:
    """The profiled example was recorded without a debug buffer: how to record one is said."""
    problems = _problems(capsys, str(example("undelegated")))
    assert any("holds no debug events" in p and "debug_buffer_size" in p for p in problems)
    assert any("ETDumpGen::set_debug_buffer" in p for p in problems)


def test_no_etrecord_gives_rows_by_instruction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pte = _copy(tmp_path, "numerics_portable", etrecord=False)
    data = _json(capsys, str(pte))
    rows = data["methods"][0]["numerics"]["rows"]
    assert len(rows) == 10 and all(r["layer"] == "" and r["aot_ops"] == [] for r in rows)
    joined = _json(capsys, str(pte), "--reference", str(example("numerics_portable")))
    n = joined["methods"][0]["numerics"]
    assert not n["rows"] and all("no ETRecord" in u["reason"] for u in n["unjoined"])
    assert any("rows by instruction only" in p for p in joined["problems"])


def test_aot_without_torch_is_one_line_and_exit_2() -> None:
    code = (
        "import sys\n"
        "sys.modules['executorch.devtools'] = None\n"
        "from pte_adapter.cli import main\n"
        f"sys.exit(main(['numerics', {str(example(INT8))!r}, '--aot']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == EXIT_USAGE, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install -e ".[numerics]"' in lines[0], lines
    assert "--reference" in lines[0]


def test_no_etdump_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(example("numerics_portable"), tmp_path / "numerics_portable.pte")
    assert main(["numerics", str(tmp_path / "numerics_portable.pte")]) == EXIT_BAD_FILE
    err = capsys.readouterr().err
    assert "no ETDump beside it" in err and len(err.strip().splitlines()) == 1


def test_an_emulated_run_is_labelled_and_invents_no_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose ETDump holds debug events only, named `emulated: ...` (what an emulated Ethos-U
    run writes), given by path from a subfolder: every view says EMULATED, and no time is read."""
    from tests.support.etdumps import debug_only_etdump

    pte, _, etdump, buffer = files(INT8)
    sub = tmp_path / "emulated"
    sub.mkdir()
    emulated = debug_only_etdump(etdump, sub / "run.etdp", "emulated: test emulation")
    args = [str(pte), "--etdump", str(emulated), "--debug-buffer", str(buffer)]
    args += ["--reference", str(example(FP32))]
    data = _json(capsys, *args)
    n = data["methods"][0]["numerics"]
    assert data["emulated"] is True and n["emulated"] is True and n["reference_emulated"] is False
    assert n["rows"]
    assert main(["numerics", *args]) == EXIT_OK
    assert "EMULATED: this run computed by an emulation" in capsys.readouterr().out
    assert main(["summary", *args]) == EXIT_OK
    assert "(emulated)" in capsys.readouterr().out
    assert main(["profile", str(pte), str(emulated), "--json"]) == EXIT_OK
    profile = json.loads(capsys.readouterr().out)
    assert all(not m["runs"] for m in profile["methods"]), profile["methods"]
