"""`pte-adapter profile`: text, JSON, plot and node data, checked against ExecuTorch's Inspector.

Expected times come from `executorch.devtools.Inspector` reading the same `.etdp`; node ids from the
graph JSON our renderer exports (so the overlay lands on nodes that exist).
"""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_OK, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _node_ids(path: Path, method: str = "forward") -> list[str]:
    """The renderer's node id of each instruction (its role id)."""
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids as instruction_node_ids

    m = next(m for m in pte_adapter.load(path).methods if m.name == method)
    return instruction_node_ids(m, partition_method(m))


@cache
def inspector(path: Path) -> Any:
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(etdump_path=str(path))


def _execute_ms(stem: str) -> list[float]:
    return [
        x
        for b in inspector(EXAMPLES / f"{stem}.etdp").event_blocks
        for e in b.events
        if e.name == "Method::execute"
        for x in e.perf_data.raw
    ]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["profile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, str(EXAMPLES / "mv2_xnnpack_int8.pte"))
    assert code == EXIT_OK
    runs = _execute_ms("mv2_xnnpack_int8")
    assert f"median {np.percentile(runs, 50):.3f}" in out
    assert f"p90 {np.percentile(runs, 90):.3f}" in out
    assert "XNNPACK partition 1 (XnnpackBackend)" in out
    per_run = next(line for line in out.splitlines() if line.strip().startswith("per run"))
    spark = per_run.split()[2]
    assert len(spark) == len(runs)  # one character per run
    # The highest bar is the slowest run, the lowest the fastest.
    assert spark[int(np.argmax(runs))] == "█"
    assert spark[int(np.argmin(runs))] == "▁"


def test_json_report_and_top_cpu_ops(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, str(EXAMPLES / "undelegated.pte"), "--json")
    assert code == EXIT_OK
    data = json.loads(out)
    (m,) = data["methods"]
    runs = _execute_ms("undelegated")
    assert m["latency_ms"] == pytest.approx(runs, abs=1e-4)
    assert m["latency"]["p10"] == pytest.approx(np.percentile(runs, 10), abs=1e-4)
    # Top CPU operators: Inspector's OPERATOR_CALL medians, sorted.
    medians = sorted(
        (
            float(np.median(e.perf_data.raw))
            for b in inspector(EXAMPLES / "undelegated.etdp").event_blocks
            for e in b.events
            if e.name == "OPERATOR_CALL"
        ),
        reverse=True,
    )
    assert [op["median"] for op in m["top_cpu_ops"]] == pytest.approx(
        medians[: len(m["top_cpu_ops"])], abs=1e-4
    )
    assert m["top_cpu_ops"][0]["op"] == "aten::convolution.out"
    assert set(m["split"]) == {"delegates", "cpu_compute", "glue", "control", "runtime"}
    assert m["split"]["delegates"]["median"] == 0


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    out = tmp_path / f"latency{suffix}"
    code, _, _ = _run(capsys, str(EXAMPLES / "two_methods.pte"), "--plot", str(out))
    assert code == EXIT_OK
    if suffix == ".png":
        import matplotlib.image

        img = matplotlib.image.imread(out)
        assert img.shape[0] > 200 and img.shape[1] > 400
        assert float(img[..., :3].std()) > 0.01  # something was drawn
    else:
        root = ET.parse(out).getroot()
        assert root.tag.endswith("svg")
        text = out.read_text()
        assert "encode" in text and "forward" in text  # legend: one series per method
        # Reproducible: the same profile gives the same bytes.
        again = tmp_path / "again.svg"
        main(["profile", str(EXAMPLES / "two_methods.pte"), "--plot", str(again)])
        assert again.read_bytes() == out.read_bytes()


def test_node_data_lands_on_rendered_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nd = tmp_path / "nd.json"
    code, _, _ = _run(capsys, str(EXAMPLES / "undelegated.pte"), "--node-data", str(nd))
    assert code == EXIT_OK
    graph_json = tmp_path / "g.json"
    assert main(["export", str(EXAMPLES / "undelegated.pte"), "-o", str(graph_json)]) == EXIT_OK
    capsys.readouterr()
    graphs = json.loads(graph_json.read_text())["graphs"]
    data = json.loads(nd.read_text())
    assert set(data) == {"forward"}
    forward = next(g for g in graphs if g["id"] == "forward")
    ids = {n["id"] for n in forward["nodes"]}
    results = data["forward"]["results"]
    assert set(results) <= ids
    assert data["forward"]["gradient"][0]["stop"] == 0
    # Every OPERATOR_CALL of the run has a value: Inspector's median for that instruction.
    block = next(
        b for b in inspector(EXAMPLES / "undelegated.etdp").event_blocks if b.name == "Execute"
    )
    ops = [e for e in block.events if e.name == "OPERATOR_CALL"]
    assert len(ops) == 25
    by_label = {n["id"]: n for n in forward["nodes"]}
    ids = _node_ids(EXAMPLES / "undelegated.pte")
    for e in ops:
        key = ids[e._instruction_id]
        assert key in by_label
        assert results[key]["value"] == pytest.approx(float(np.median(e.perf_data.raw)), abs=1e-6)


def test_missing_and_foreign_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, str(EXAMPLES / "mv2_ethosu55.pte"))
    assert code == EXIT_BAD_FILE
    assert "mv2_ethosu55.etdp" in err and "cannot open" in err
    code, _, err = _run(
        capsys, str(EXAMPLES / "undelegated.pte"), str(EXAMPLES / "mv2_xnnpack_int8.etdp")
    )
    assert code == EXIT_BAD_FILE
    assert "recorded running another program" in err
    bad = tmp_path / "bad.etdp"
    bad.write_bytes((EXAMPLES / "undelegated.etdp").read_bytes()[:100])
    code, _, err = _run(capsys, str(EXAMPLES / "undelegated.pte"), str(bad))
    assert code == EXIT_BAD_FILE
    assert err.startswith("pte-adapter: bad.etdp")
