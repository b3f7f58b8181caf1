"""The runs over time on the Model Explorer graph of a program with its ETDump beside it: the
method's Graph info says the drift and its onset, and the partition's group its time before the
onset and from it. The ETDump is the recorded slowdown (examples/drift/); expected figures are
recomputed from ExecuTorch's reading of its runs (tests/support/drift.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pte_adapter.explorer.convert import convert_path
from tests.support.drift import deserialized_runs, oracle
from tests.support.examples import EXAMPLES
from tests.support.groups import group_names

DRIFT = EXAMPLES / "drift"
RECORDING = json.loads((DRIFT / "recordings.json").read_text())["recordings"]["slowdown"]


def test_graph_info_says_the_drift_and_its_onset(tmp_path: Path) -> None:
    pte = Path(shutil.copy(EXAMPLES / RECORDING["program"], tmp_path / RECORDING["program"]))
    shutil.copy(DRIFT / RECORDING["etdump"], pte.with_suffix(".etdp"))
    graph = next(g for g in convert_path(pte) if g.id == "forward")
    info = graph.groupNodeAttributes[""]
    runs = deserialized_runs(DRIFT / RECORDING["etdump"])
    want = oracle([r["Method::execute"] for r in runs])
    onset = want["onset_run"]
    assert onset is not None
    said = re.fullmatch(
        rf"run {onset} \(0-based\) of {len(runs)}: ([+-][0-9.]+) %", info["measured drift onset"]
    )
    assert said and float(said.group(1)) == pytest.approx(want["change_pct"], abs=0.06)
    said = re.match(rf"latency rose ([0-9]+) % from run {onset}: ", info["measured drift"])
    assert said and int(said.group(1)) == pytest.approx(want["change_pct"], abs=0.51)
    assert info["measured latency"].endswith("; over two regimes: see measured drift")
    if want["warmup_runs"]:
        assert info["measured warm-up"].startswith(f"{want['warmup_runs']} run")
    group = graph.groupNodeAttributes[group_names(pte)["forward"][0]]
    calls = [r["DELEGATE_CALL"] for r in runs]
    before = float(np.median(calls[want["warmup_runs"] : onset]))
    after = float(np.median(calls[onset:]))
    assert group["measured drift"].startswith(f"{before:.3f} ms -> {after:.3f} ms from run {onset}")
