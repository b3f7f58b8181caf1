"""`pte-adapter vela` / `export --vela`: Vela's own estimate on request, next to ours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pte_adapter.api import load
from pte_adapter.cli import main
from pte_adapter.delegates.ethosu.vela_oracle import safe_flags
from pte_adapter.delegates.registry import compiler_checks
from tests.support.examples import EXAMPLES

EXAMPLE = EXAMPLES / "mv2_lrn2_ethosu85.pte"


def test_hostile_compile_flags_are_not_passed_on() -> None:
    flags = safe_flags(
        "--accelerator-config=ethos-u85-256 --config=/etc/evil.ini --output-dir=/etc "
        "--system-config=$(rm -rf ~) --memory-mode Shared_Sram --config=Arm/vela.ini "
        "--optimise=Performance --verbose-all"
    )
    assert flags == [
        "--accelerator-config=ethos-u85-256",
        "--memory-mode=Shared_Sram",
        "--config=Arm/vela.ini",
        "--optimise=Performance",
    ]


@pytest.mark.slow
def test_vela_rows_per_partition(capsys: pytest.CaptureFixture[str]) -> None:
    program = load(EXAMPLE)
    rows = compiler_checks(program, timeout=300)
    delegates = [d for m in program.methods for d in m.delegates if d.id == "EthosUBackend"]
    assert len(rows) == len(delegates) == 3
    for row, delegate in zip(rows, delegates, strict=True):
        assert "error" not in row, row
        # The sidecar recompiles to exactly the payload's command stream.
        assert row["identical_stream"] is True
        assert row["ours_cycles"] == delegate.decoded.stats["npu_est_cycles"]
        assert row["deviation"] == pytest.approx(
            (row["ours_cycles"] - row["vela_cycles"]) / row["vela_cycles"], abs=1e-4
        )
        assert "vela_estimate" in delegate.decoded.summary
        source = next(g for g in delegate.decoded.graphs if g.name == "TOSA source")
        annotated = [n for n in source.nodes if "vela_cycles" in n.attrs]
        assert len(annotated) == row["annotated_nodes"] > 0
        # Vela names a fused layer by its last output (the RESCALE after a convolution).
        on_nodes = sum(int(n.attrs["vela_cycles"]) for n in annotated)
        assert 0.5 * row["vela_cycles"] < on_nodes <= row["vela_cycles"]
        assert source.attrs["vela_total_cycles"] == str(row["vela_cycles"])


def test_timeout_is_reported_not_raised() -> None:
    rows = compiler_checks(load(EXAMPLE), timeout=0.001)
    assert rows and all("longer than" in r["error"] for r in rows)


@pytest.mark.slow
def test_export_with_vela_puts_numbers_on_the_source_view(tmp_path: Path) -> None:
    out = tmp_path / "graph.json"
    assert main(["export", str(EXAMPLE), "-o", str(out), "--vela"]) == 0
    data = json.loads(out.read_text())
    # The TOSA source view: its own graph, or a group inside the method graph.
    source = [
        n
        for g in data["graphs"]
        for n in g["nodes"]
        if "TOSA source" in g["id"] or "TOSA source" in n.get("namespace", "")
    ]
    assert source
    assert any(a["key"] == "vela_cycles" for n in source for a in n.get("attrs", []))
