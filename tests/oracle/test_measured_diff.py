"""What a fix saved, measured: `diff` of the measured pair (lrn_pow_xnnpack: a pow on the CPU
between two XNNPACK partitions; lrn_rsqrt_xnnpack: the same weights with the pow written as
square roots, one partition), each with the ETDump ExecuTorch's pip runtime recorded beside it
(examples/profile_examples.py).

Every measured figure is recomputed from ExecuTorch's ETDump deserializer (tests/support/drift.py)
with numpy, each side's warm-up found by the independent computation of the drift tests; the
prediction is checked against the what-if as `summary --json` states it, and against what the
re-export actually did (the truth: the fixed program's partitions and calls).
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.cli import EXIT_OK, main
from tests.support.drift import deserialized_runs, oracle
from tests.support.examples import EXAMPLES

BEFORE, AFTER = EXAMPLES / "lrn_pow_xnnpack.pte", EXAMPLES / "lrn_rsqrt_xnnpack.pte"


@cache
def _diff_json() -> Any:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["diff", str(BEFORE), str(AFTER), "--json"]) == EXIT_OK
    return json.loads(out.getvalue())


def _steady(pte: Path, key: str) -> float:
    """The median over the runs after the warm-up of one figure of each run."""
    runs = deserialized_runs(pte.with_suffix(".etdp"))
    warm = oracle([r["Method::execute"] for r in runs])["warmup_runs"]
    return float(np.median([r.get(key, 0.0) for r in runs[warm:]]))


def test_the_fix_computes_the_same_outputs() -> None:
    """The fixed program is the same network: ExecuTorch's runtime gives the same outputs."""
    import torch
    from executorch.runtime import Runtime

    x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(3)) * 4 - 2
    outs = []
    for pte in (BEFORE, AFTER):
        method = Runtime.get().load_program(pte).load_method("forward")
        assert method is not None
        outs.append(method.execute([x])[0])
    assert torch.allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)


def test_measured_figures_match_the_runs() -> None:
    (m,) = _diff_json()["measured"]["methods"]
    assert m["unit"] == "ms"
    assert m["latency"]["before"] == pytest.approx(_steady(BEFORE, "Method::execute"), abs=1e-3)
    assert m["latency"]["after"] == pytest.approx(_steady(AFTER, "Method::execute"), abs=1e-3)
    calls = m["delegate_calls"]["XnnpackBackend"]
    assert (calls["before"], calls["after"]) == (
        _steady(BEFORE, "DELEGATE_CALL calls"),
        _steady(AFTER, "DELEGATE_CALL calls"),
    )
    assert (calls["before"], calls["after"], calls["change"]) == (2, 1, -1)
    time = m["delegate_time"]["XnnpackBackend"]
    assert time["before"] == pytest.approx(_steady(BEFORE, "DELEGATE_CALL"), abs=1e-3)
    assert time["after"] == pytest.approx(_steady(AFTER, "DELEGATE_CALL"), abs=1e-3)
    # The one CPU island runs one kernel: its OPERATOR_CALL is the island's time.
    island = m["cpu_island_time"]
    assert island["before"] == pytest.approx(_steady(BEFORE, "OPERATOR_CALL"), abs=1e-3)
    assert island["after"] == 0
    assert island["change"] == pytest.approx(-island["before"], abs=1e-4)


def test_the_prediction_is_the_islands_what_if_and_came_true() -> None:
    (m,) = _diff_json()["measured"]["methods"]
    assert m["fixed_islands"] == ["CPU island 1"]
    predicted = m["predicted"]
    summary = pte_adapter.summarize(pte_adapter.open_analysis(BEFORE))
    (scenario,) = summary["methods"][0]["what_if"]["islands"]
    assert predicted["scenario"] == "CPU island 1"
    assert predicted["delegate_calls_change"] == -scenario["delegate_calls_removed"] == -1
    assert predicted["cpu_time_change"] == pytest.approx(
        -scenario["cpu_time_removed_us"] / 1000, abs=1e-4
    )
    # What the CPU time removed is: the pow kernel's median over every run of the first ETDump.
    runs = deserialized_runs(BEFORE.with_suffix(".etdp"))
    assert scenario["cpu_time_removed_us"] == pytest.approx(
        1000 * float(np.median([r["OPERATOR_CALL"] for r in runs])), abs=1e-2
    )
    assert predicted["npu_time_change"] is None  # no cost model for XNNPACK, and it says so
    assert any("no cost model for XnnpackBackend" in n for n in predicted["notes"])
    # The truth: the re-export has the partitions and calls the what-if predicted.
    after = pte_adapter.summarize(pte_adapter.open_analysis(AFTER))["methods"][0]
    assert after["delegate_partitions"] == predicted["delegate_partitions_after"] == 1
    assert m["delegate_calls"]["XnnpackBackend"]["change"] == predicted["delegate_calls_change"]


def test_text_and_report_show_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(BEFORE), str(AFTER)]) == EXIT_OK
    out = capsys.readouterr().out
    (m,) = _diff_json()["measured"]["methods"]
    assert "measured (lrn_pow_xnnpack.etdp -> lrn_rsqrt_xnnpack.etdp" in out
    latency = next(line for line in out.splitlines() if line.strip().startswith("latency "))
    assert f"{m['latency']['before']:.3f}" in latency and f"{m['latency']['after']:.3f}" in latency
    assert f"{m['predicted']['latency_change']:+.3f} (CPU time removed alone)" in latency
    assert "the what-if of CPU island 1:" in out
    html = tmp_path / "r.html"
    assert main(["report", str(BEFORE), str(AFTER), "-o", str(html)]) == EXIT_OK
    page = html.read_text()
    assert "What the change saved, measured" in page and "what-if predicted" in page


def test_one_side_without_an_etdump_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = Path(shutil.copy(AFTER, tmp_path / AFTER.name))
    assert main(["diff", str(BEFORE), str(after), "--json"]) == EXIT_OK
    measured = json.loads(capsys.readouterr().out)["measured"]
    assert measured["methods"] == []
    assert measured["problems"] == [
        "after: no ETDump beside the program, so nothing to compare with"
    ]
    assert main(["diff", str(BEFORE), str(after)]) == EXIT_OK
    assert "measured: after: no ETDump beside the program" in capsys.readouterr().out


def test_without_etdumps_the_diff_is_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "diff",
                str(EXAMPLES / "mv2_lrn_ethosu85.pte"),
                str(EXAMPLES / "mv2_ethosu85_full.pte"),
                "--json",
            ]
        )
        == EXIT_OK
    )
    assert json.loads(capsys.readouterr().out)["measured"] is None
