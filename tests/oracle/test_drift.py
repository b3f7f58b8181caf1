"""Runs over time (warm-up, drift, onset, where the time went) against an independent computation
over ExecuTorch's own reading of the same ETDumps, and against what the recorder caused.

The ETDumps are real: `examples/*.etdp` (examples/profile_examples.py) and `examples/drift/`
(examples/profile_drift.py: one program run 60 times pinned to one core, steady, with a CPU-bound
process started on that core at a known run, and with a ramp of competing load). The per-run
latencies come from ExecuTorch's Inspector (its event blocks keep the runs in order) or, for a
method whose runs fall in several blocks (`cond` takes two branches), from ExecuTorch's ETDump
deserializer in file order; the figures are recomputed from them here with numpy, following the
method docs/profiling.md states, never with the adapter's code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.analysis.profile.report_types import DriftJSON
from tests.support.drift import deserialized_runs, latencies, oracle
from tests.support.examples import EXAMPLES

DRIFT = EXAMPLES / "drift"
RECORDINGS = json.loads((DRIFT / "recordings.json").read_text())["recordings"]
DUMPS = [(p, EXAMPLES / f"{p.stem}.pte") for p in sorted(EXAMPLES.glob("*.etdp"))] + [
    (DRIFT / r["etdump"], EXAMPLES / r["program"]) for r in RECORDINGS.values()
]
IDS = [p.stem for p, _ in DUMPS]


@cache
def _summary(etdp: Path, pte: Path) -> Any:
    result = pte_adapter.open_analysis(pte, etdump=etdp)
    assert result.profile_error is None and result.profile_summary is not None
    return result.profile_summary


# -- the figures --------------------------------------------------------------------------


@pytest.mark.parametrize(("etdp", "pte"), DUMPS, ids=IDS)
def test_every_figure_matches_the_independent_computation(etdp: Path, pte: Path) -> None:
    for method in _summary(etdp, pte)["methods"]:
        drift: DriftJSON = method["drift"]
        want = oracle(latencies(etdp, method))
        if want["state"] in ("few", "one_run", "identical"):
            # Too few (or all equal) runs: a state and no figures.
            assert drift["state"] == {"few": "few_runs"}.get(want["state"], want["state"])
            assert drift["first_ms"] is None and drift["onset_run"] is None
            continue
        assert drift["state"] == want["state"], (method["name"], drift["text"])
        assert drift["warmup_runs"] == want["warmup_runs"]
        assert drift["window"] == want["window"]
        assert drift["first_ms"] == pytest.approx(want["first"], abs=1e-3)
        assert drift["last_ms"] == pytest.approx(want["last"], abs=1e-3)
        assert drift["change_pct"] == pytest.approx(want["change_pct"], abs=0.02)
        assert drift["onset_run"] == want["onset_run"]
        assert drift["slope_ms_per_100_runs"] == pytest.approx(want["slope"], abs=1e-3)
        assert drift["noise_ms"] == pytest.approx(want["noise"], abs=1e-3)


def test_the_recordings_were_made_as_recordings_json_says() -> None:
    """Sixty runs of one program each; each run's Method::execute lies inside the recorder's own
    clock around that `execute` call (Python's call overhead, and with a competitor its slices,
    on top: the input copied in, a fraction of a millisecond as a rule)."""
    assert set(RECORDINGS) == {"steady", "slowdown", "creep"}
    for r in RECORDINGS.values():
        summary = _summary(DRIFT / r["etdump"], EXAMPLES / r["program"])
        (method,) = summary["methods"]
        assert method["runs"] == r["runs"] == len(r["wall_ms"])
        runs = [run["Method::execute"] for run in deserialized_runs(DRIFT / r["etdump"])]
        gaps = [wall - ms for ms, wall in zip(runs, r["wall_ms"], strict=True)]
        assert min(gaps) > -1e-3 and float(np.median(gaps)) < 0.5, gaps


def _drift(name: str) -> DriftJSON:
    r = RECORDINGS[name]
    (method,) = _summary(DRIFT / r["etdump"], EXAMPLES / r["program"])["methods"]
    return method["drift"]


def test_a_steady_recording_has_no_onset() -> None:
    d = _drift("steady")
    assert d["onset_run"] is None and d["where"] is None
    assert d["state"] in ("steady", "noisy"), d["text"]


def test_the_slowdown_is_found_where_the_load_began() -> None:
    """A CPU-bound process took the core from run LOAD: the onset is that run (give or take the
    scheduler), the latency rose by about the share the process took, and the text says it."""
    load = RECORDINGS["slowdown"]["load_from_run"]
    d = _drift("slowdown")
    assert d["state"] == "rose"
    assert d["onset_run"] is not None and abs(d["onset_run"] - load) <= 2, d["text"]
    assert d["change_pct"] is not None and d["change_pct"] > 50
    assert f"from run {d['onset_run']}" in d["text"] and "two regimes" in d["text"]


def test_the_creep_rises_after_the_ramp_began() -> None:
    load = RECORDINGS["creep"]["load_from_run"]
    d = _drift("creep")
    assert d["state"] == "rose", d["text"]
    assert d["onset_run"] is None or d["onset_run"] >= load - 2, d["text"]
    assert d["slope_ms_per_100_runs"] is not None and d["slope_ms_per_100_runs"] > 0


def test_where_the_time_went_matches_the_runs_split_at_the_onset() -> None:
    """Per partition and per operator, the medians before the onset and from it, recomputed from
    ExecuTorch's deserialized runs (the program is one XNNPACK call: DELEGATE_CALL is its
    partition; XNNPACK's events are its operators)."""
    r = RECORDINGS["slowdown"]
    etdp = DRIFT / r["etdump"]
    d = _drift("slowdown")
    where = d["where"]
    assert where is not None and d["onset_run"] is not None
    runs = deserialized_runs(etdp)
    before, after = runs[d["warmup_runs"] : d["onset_run"]], runs[d["onset_run"] :]
    assert where["before_runs"] == [d["warmup_runs"], d["onset_run"] - 1]
    assert where["after_runs"] == [d["onset_run"], len(runs) - 1]

    def medians(name: str) -> tuple[float, float]:
        return (
            float(np.median([r.get(name, 0.0) for r in before])),
            float(np.median([r.get(name, 0.0) for r in after])),
        )

    (partition,) = where["partitions"]
    assert (partition["before"], partition["after"]) == pytest.approx(
        medians("DELEGATE_CALL"), abs=1e-3
    )
    assert (where["latency"]["before"], where["latency"]["after"]) == pytest.approx(
        medians("Method::execute"), abs=1e-3
    )
    names = {n for r in runs for n in r if not n.endswith(" calls")}
    names -= {"Method::execute", "DELEGATE_CALL"}
    changes = sorted(((b - a, n) for n in names for a, b in [medians(n)]), key=lambda t: -abs(t[0]))
    assert [op["name"] for op in where["operators"]] == [n for _, n in changes[:5]]
    for op, (change, _) in zip(where["operators"], changes, strict=False):
        assert op["change"] == pytest.approx(change, abs=1e-3)
