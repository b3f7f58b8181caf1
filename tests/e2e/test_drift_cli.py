"""The runs over time from the command line: `profile` (text, `--json`, `--plot`), `check
--max-drift`, and the cases with too little to go on (fewer than 10 runs, one run, every run the
same, an ETDump in cycles), each a plain statement and never an exception.

The ETDumps are the real recordings of examples/drift/ (examples/profile_drift.py) and copies of
them cut or edited by ExecuTorch's own ETDump serializer (tests/support/etdumps.py). Expected
figures come from ExecuTorch's reading of the same runs (tests/support/drift.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, main
from tests.support.drift import deserialized_runs
from tests.support.etdumps import edited_etdump, rescaled_etdump
from tests.support.examples import EXAMPLES

DRIFT = EXAMPLES / "drift"
RECORDINGS = json.loads((DRIFT / "recordings.json").read_text())["recordings"]
PROGRAM = EXAMPLES / RECORDINGS["slowdown"]["program"]
SLOWDOWN = DRIFT / RECORDINGS["slowdown"]["etdump"]
STEADY = DRIFT / RECORDINGS["steady"]["etdump"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _drift(capsys: pytest.CaptureFixture[str], etdp: Path, *extra: str) -> dict:
    code, out, _ = _run(capsys, "profile", str(PROGRAM), str(etdp), "--json", *extra)
    assert code == EXIT_OK
    (method,) = json.loads(out)["methods"]
    return method["drift"]


def test_text_marks_the_warmup_and_the_onset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "profile", str(PROGRAM), str(SLOWDOWN))
    assert code == EXIT_OK
    drift = _drift(capsys, SLOWDOWN)
    lines = out.splitlines()
    spark = next(i for i, line in enumerate(lines) if line.strip().startswith("per run"))
    marks = lines[spark + 1]
    column = lines[spark].index(lines[spark].split()[2])  # where the sparkline starts
    assert marks[column + drift["onset_run"]] == "^"
    assert marks[column : column + drift["warmup_runs"]] == "w" * drift["warmup_runs"]
    assert f"onset, run {drift['onset_run']}" in marks
    assert f"drift              {drift['text']}" in out
    assert "where it changed" in out and "XNNPACK partition 1" in out


def test_json_and_plot_say_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "latency.svg"
    drift = _drift(capsys, SLOWDOWN, "--plot", str(svg))
    text = svg.read_text()  # matplotlib keeps each text as a comment beside its glyphs
    assert f"onset: run {drift['onset_run']} ({drift['change_pct']:+.0f} %)" in text
    if drift["warmup_runs"]:
        assert f"warm-up ({drift['warmup_runs']})" in text
    assert "run (from 0)" in text


def test_check_max_drift(capsys: pytest.CaptureFixture[str]) -> None:
    drift = _drift(capsys, SLOWDOWN)
    change = drift["change_pct"]
    code, _, err = _run(
        capsys, "check", str(PROGRAM), "--etdump", str(SLOWDOWN), "--max-drift", "20"
    )
    assert code == EXIT_CHECK_FAILED
    assert f"FAIL forward: latency changed {change:+.1f} % over the runs > 20 %" in err
    assert drift["text"] in err
    code, out, _ = _run(
        capsys, "check", str(PROGRAM), "--etdump", str(SLOWDOWN), "--max-drift", f"{change + 1:.0f}"
    )
    assert code == EXIT_OK and f"latency changed {change:+.1f} % over the runs" in out


def test_check_max_drift_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "check", str(PROGRAM), "--etdump", str(SLOWDOWN))
    assert code == EXIT_USAGE and "no limit given" in err
    code, _, err = _run(
        capsys, "check", str(PROGRAM), "--etdump", str(SLOWDOWN), "--max-partitions", "1"
    )
    assert code == EXIT_USAGE and "--etdump is read for --max-drift or --min-snr only" in err
    lone = Path(shutil.copy(PROGRAM, tmp_path / PROGRAM.name))
    code, _, err = _run(capsys, "check", str(lone), "--max-drift", "10")
    assert code == EXIT_BAD_FILE and "no ETDump beside it" in err


def _cut(tmp_path: Path, runs: int | None = None, same: bool = False) -> Path:
    return edited_etdump(SLOWDOWN, tmp_path / "cut.etdp", runs=runs, same=same)


@pytest.mark.parametrize("runs", [1, 7])
def test_too_few_runs_are_said_and_fail_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: int
) -> None:
    etdp = _cut(tmp_path, runs)
    assert len(deserialized_runs(etdp)) == runs
    drift = _drift(capsys, etdp)
    assert drift["first_ms"] is None and drift["onset_run"] is None
    assert drift["change_pct"] is None and drift["where"] is None
    if runs == 1:
        assert drift["state"] == "one_run" and "nothing to compare" in drift["text"]
    else:
        assert drift["state"] == "few_runs"
        assert drift["text"].startswith(f"{runs} runs: too few") and "10 or more" in drift["text"]
    code, out, _ = _run(capsys, "profile", str(PROGRAM), str(etdp))
    assert code == EXIT_OK and drift["text"] in out
    code, _, err = _run(capsys, "check", str(PROGRAM), "--etdump", str(etdp), "--max-drift", "50")
    assert code == EXIT_CHECK_FAILED and "cannot be checked against 50 %" in err


def test_identical_runs_are_steady(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    etdp = _cut(tmp_path, same=True)
    latency = {r["Method::execute"] for r in deserialized_runs(etdp)}
    assert len(latency) == 1 and len(deserialized_runs(etdp)) == 60
    drift = _drift(capsys, etdp)
    (ms,) = latency
    assert drift["state"] == "identical" and drift["onset_run"] is None
    assert drift["text"] == f"all 60 runs took {ms:.3f} ms: steady"
    assert drift["change_pct"] == 0 and drift["slope_ms_per_100_runs"] == 0
    code, _, _ = _run(capsys, "check", str(PROGRAM), "--etdump", str(etdp), "--max-drift", "0")
    assert code == EXIT_OK


@pytest.mark.parametrize("clock", [None, "150"])
def test_a_dump_in_cycles_gives_its_drift_in_cycles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clock: str | None
) -> None:
    """The same runs counted in cycles at 150 MHz: every figure in cycles, said so; the change
    and the onset are those of the same runs in ns."""
    etdp = rescaled_etdump(SLOWDOWN, tmp_path / "slowdown.etdp", 0.15)
    scale = ["--clock-mhz", clock] if clock else ["--time-scale", "cycles"]
    drift = _drift(capsys, etdp, *scale)
    in_ns = _drift(capsys, SLOWDOWN)
    assert drift["unit"] == "cycles" and "cycles" in drift["text"] and " ms" not in drift["text"]
    assert drift["onset_run"] == in_ns["onset_run"]
    assert drift["warmup_runs"] == in_ns["warmup_runs"]
    assert drift["change_pct"] == pytest.approx(in_ns["change_pct"], abs=0.5)
    latency = [r["Method::execute"] * 1e6 * 0.15 for r in deserialized_runs(SLOWDOWN)]
    steady = latency[drift["warmup_runs"] :]
    assert drift["first_ms"] == pytest.approx(np.median(steady[: drift["window"]]), rel=1e-3)
    code, out, _ = _run(capsys, "profile", str(PROGRAM), str(etdp), *scale)
    assert code == EXIT_OK and "times in cycles" in out
    assert re.search(r"drift +latency rose \d+ % from run \d+: \d+ → \d+ cycles", out), out


def _documented(title: str) -> set[str]:
    """Every key named in the first column of the docs/json.md table under `title`."""
    page = (EXAMPLES.parent / "docs" / "json.md").read_text()
    section = page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    cells = re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE)
    return {k for cell in cells for k in re.findall(r"`([a-z_0-9]+)`", cell)} - {"key"}


def _keys(data: object) -> set[str]:
    """Every key of the nested objects (as JSON writes them: `"key":`)."""
    return set(re.findall(r'"([A-Za-z_0-9]+)": ', json.dumps(data)))


def test_docs_name_every_drift_and_measured_key(capsys: pytest.CaptureFixture[str]) -> None:
    drift = _drift(capsys, SLOWDOWN)
    assert drift["where"] is not None
    assert _documented("`profile --json` drift keys") == {"drift"} | _keys(drift)
    before, after = EXAMPLES / "lrn_pow_xnnpack.pte", EXAMPLES / "lrn_rsqrt_xnnpack.pte"
    code, out, _ = _run(capsys, "diff", str(before), str(after), "--json")
    assert code == EXIT_OK
    measured = json.loads(out)["measured"]
    (method,) = measured["methods"]
    figures = _keys(method["latency"]) | _keys(method["predicted"])
    backends = set(method["delegate_calls"]) | set(method["delegate_time"])
    want = {"measured"} | set(measured) | set(method) | figures
    assert _documented("`diff --json` measured keys") == want - backends


@pytest.mark.parametrize("recording", ["steady", "slowdown"])
def test_a_single_slow_run_is_not_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: str
) -> None:
    """One run three times as long (a preempted run) in the middle of each regime, and one at
    the last run: nothing the drift says moves but the noise a little."""
    source = DRIFT / RECORDINGS[recording]["etdump"]
    etdp = edited_etdump(source, tmp_path / "outlier.etdp", stretch={15: 3.0, 45: 3.0, 59: 3.0})
    runs = deserialized_runs(etdp)
    assert runs[15]["Method::execute"] > 2.5 * deserialized_runs(source)[15]["Method::execute"]
    clean, spiked = _drift(capsys, source), _drift(capsys, etdp)
    for key in ("state", "warmup_runs", "onset_run", "shape"):
        assert spiked[key] == clean[key], key
    assert spiked["first_ms"] == pytest.approx(clean["first_ms"], rel=0.02)
    assert spiked["last_ms"] == pytest.approx(clean["last_ms"], rel=0.02)
