"""Every command takes a bundle where it takes a `.pte`, and says what it says of the program
inside: `summary`, `check`, `diff`, `size`, `export` on the example bundle, and `profile` on a
bundle ExecuTorch's writer makes around a profiled example (with that example's ETDump)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pte_adapter.cli import EXIT_CHECK_FAILED, EXIT_OK, main
from tests.support.bundles import write_bundle
from tests.support.examples import EXAMPLES, example

BUNDLE = EXAMPLES / "bundle_ethosu55.bpte"


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _inner(tmp_path: Path) -> Path:
    """The program inside the bundle, as a `.pte` of its own."""
    from tests.support.examples import oracle_program_bytes

    path = tmp_path / "inner.pte"
    path.write_bytes(oracle_program_bytes(BUNDLE.read_bytes()))
    return path


def test_summary_check_diff_size_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inner = _inner(tmp_path)
    code, text = _out(capsys, "summary", str(BUNDLE))
    assert code == EXIT_OK and "bundle: BundledProgram version 2" in text
    assert "  bundled tests        1 case(s)" in text
    code, bundle_json = _out(capsys, "summary", str(BUNDLE), "--json")
    code, inner_json = _out(capsys, "summary", str(inner), "--json")
    assert json.loads(bundle_json)["methods"] == json.loads(inner_json)["methods"]
    code, text = _out(capsys, "check", str(BUNDLE), "--max-partitions", "1")
    assert code == EXIT_OK and text.endswith("OK\n")
    assert main(["check", str(BUNDLE), "--max-cpu-islands", "1"]) == EXIT_CHECK_FAILED
    capsys.readouterr()
    code, text = _out(capsys, "diff", str(inner), str(BUNDLE), "--json")
    assert code == EXIT_OK
    diff = json.loads(text)
    assert diff["regressions"] == []
    assert all(n["delta"] == 0 for m in diff["methods"] for n in m["numbers"].values())
    changed = {k for k, v in diff["size"]["by_kind"].items() if v["delta"]}
    assert changed == {"bundle_header", "bundle_flatbuffer", "bundled_test_data"}
    code, text = _out(capsys, "size", str(BUNDLE), "--json")
    size = json.loads(text)
    assert code == EXIT_OK and size["file_size"] == BUNDLE.stat().st_size
    assert sum(size["totals"].values()) == size["file_size"]
    assert {"bundle_header", "bundle_flatbuffer", "bundled_test_data"} <= set(size["totals"])
    out = tmp_path / "g.json"
    code, text = _out(capsys, "export", str(BUNDLE), "-o", str(out))
    assert code == EXIT_OK and json.loads(out.read_text())["graphs"][0]["id"] == "forward"


def test_profile_of_a_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundle of a profiled example, its ETDump beside it: the same profile as the `.pte`'s."""
    pte = example("undelegated")
    bundle = write_bundle(pte, tmp_path / "undelegated.bpte")
    shutil.copy(EXAMPLES / "undelegated.etdp", tmp_path / "undelegated.etdp")
    code, text = _out(capsys, "profile", str(bundle), "--json")
    assert code == EXIT_OK
    ours = json.loads(text)
    _, text = _out(capsys, "profile", str(pte), "--json")
    plain = json.loads(text)
    assert ours["file"] == "undelegated.bpte"
    assert {k: v for k, v in ours.items() if k != "file"} == {
        k: v for k, v in plain.items() if k != "file"
    }
