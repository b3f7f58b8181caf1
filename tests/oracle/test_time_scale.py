"""Time scales: ETDumps in cycles (and in microseconds) against ExecuTorch's Inspector run with the
same `source_time_scale`.

The ETDumps are real example ETDumps (`examples/*.etdp`, recorded in ns by ExecuTorch's runtime)
with every tick scaled and re-serialised by ExecuTorch's own ETDump serializer
(tests/support/etdumps.py): what a Cortex-M board at that clock, counting cycles, would have written
for the same runs. Every expected number comes from the Inspector (numpy percentiles), and the
clock's conversion from the Inspector's cycles divided by the clock.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.profile.time_scale import TimeScale
from pte_adapter.cli import EXIT_OK, main
from tests.support.etdumps import rescaled_etdump
from tests.support.examples import EXAMPLES

CLOCK_MHZ = 150.0  # cycles = ns * 0.15
CYCLES_PER_NS = CLOCK_MHZ / 1e3


def _inspector(path: Path, source: str, target: str) -> Any:
    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale as InspectorScale

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(
            etdump_path=str(path),
            source_time_scale=InspectorScale(source),
            target_time_scale=InspectorScale(target),
        )


def _program_with(tmp_path: Path, stem: str, etdump_name: str, factor: float) -> Path:
    pte = shutil.copy(EXAMPLES / f"{stem}.pte", tmp_path / f"{stem}.pte")
    rescaled_etdump(EXAMPLES / f"{stem}.etdp", tmp_path / etdump_name, factor)
    return Path(pte)


def _execute_events(ins: Any, name: str) -> list[Any]:
    return [e for b in ins.event_blocks if b.name == "Execute" for e in b.events if e.name == name]


@pytest.mark.parametrize("stem", ["undelegated", "mv2_xnnpack_int8"])
def test_cycles_match_the_inspector_in_cycles(tmp_path: Path, stem: str) -> None:
    pte = _program_with(tmp_path, stem, f"{stem}.etdp", CYCLES_PER_NS)
    result = pte_adapter.open_analysis(pte, time_scale=TimeScale("cycles"))
    summary = result.profile_summary
    assert summary is not None and result.profile_error is None
    assert (summary["unit"], summary["time_scale"], summary["clock_mhz"]) == (
        "cycles",
        "cycles",
        None,
    )
    assert summary["tick_ns"] is None and summary["ms_per_unit"] is None
    ins = _inspector(tmp_path / f"{stem}.etdp", "cycles", "cycles")
    (method,) = summary["methods"]
    (execute,) = _execute_events(ins, "Method::execute")
    assert method["latency_runs"] == [round(v, 4) for v in execute.perf_data.raw]
    assert method["latency_ms"] == []  # no clock: no time
    assert method["latency"]["median"] == pytest.approx(execute.perf_data.p50)
    # Every instruction's median (cycles), against the Inspector's event of that instruction.
    measured = result.methods[0].measured
    assert measured is not None
    calls = _execute_events(ins, "OPERATOR_CALL") + _execute_events(ins, "DELEGATE_CALL")
    assert calls
    for e in calls:
        ours = measured.instruction_times[e._instruction_id]
        assert ours.stats.median == pytest.approx(e.perf_data.p50)
        assert ours.stats.max == pytest.approx(e.perf_data.max)


def test_a_clock_shows_cycles_as_time_too(tmp_path: Path) -> None:
    """The numbers stay in cycles; with the clock each is also time: the Inspector's cycles over
    the clock."""
    pte = _program_with(tmp_path, "undelegated", "undelegated.etdp", CYCLES_PER_NS)
    result = pte_adapter.open_analysis(pte, time_scale=TimeScale("cycles", clock_mhz=CLOCK_MHZ))
    summary = result.profile_summary
    assert summary is not None
    assert summary["unit"] == "cycles" and summary["clock_mhz"] == CLOCK_MHZ
    assert summary["tick_ns"] == pytest.approx(1e3 / CLOCK_MHZ)
    (execute,) = _execute_events(
        _inspector(tmp_path / "undelegated.etdp", "cycles", "cycles"), "Method::execute"
    )
    expected_ms = [c / (CLOCK_MHZ * 1e3) for c in execute.perf_data.raw]
    assert summary["methods"][0]["latency_ms"] == pytest.approx(expected_ms, abs=1e-4)
    # ... which is the original recording in ns, to the rounding of the ticks.
    original = pte_adapter.open_analysis(EXAMPLES / "undelegated.pte").profile_summary
    assert original is not None
    assert summary["methods"][0]["latency_ms"] == pytest.approx(
        original["methods"][0]["latency_ms"], rel=1e-3
    )


def test_microseconds_match_the_inspector_in_ms(tmp_path: Path) -> None:
    pte = _program_with(tmp_path, "undelegated", "undelegated.etdp", 1e-3)
    result = pte_adapter.open_analysis(pte, time_scale=TimeScale("us"))
    summary = result.profile_summary
    assert summary is not None and summary["unit"] == "ms" and summary["tick_ns"] == 1e3
    (execute,) = _execute_events(
        _inspector(tmp_path / "undelegated.etdp", "us", "ms"), "Method::execute"
    )
    assert summary["methods"][0]["latency_ms"] == pytest.approx(execute.perf_data.raw, abs=1e-4)


def test_the_etdumps_name_sets_the_scale_and_the_flag_wins(tmp_path: Path) -> None:
    """Arm's FVP name with the clock in it: found beside the program, read in cycles at 150 MHz,
    and said so; `--time-scale` on the command line overrides the name."""
    pte = _program_with(tmp_path, "undelegated", "etdump.150MHz.bin", CYCLES_PER_NS)
    result = pte_adapter.open_analysis(pte)
    summary = result.profile_summary
    assert summary is not None and summary["etdump"] == "etdump.150MHz.bin"
    assert (summary["unit"], summary["clock_mhz"]) == ("cycles", CLOCK_MHZ)
    flagged = pte_adapter.open_analysis(pte, time_scale=TimeScale("ns"))
    assert flagged.profile_summary is not None and flagged.profile_summary["unit"] == "ms"


def test_cycles_in_the_views(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text, node data and Model Explorer attributes say cycles, and ms with the clock."""
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.node_data import model_node_data
    from pte_adapter.render.plan.program import program_plan

    pte = _program_with(tmp_path, "undelegated", "undelegated.cycles.etdp", CYCLES_PER_NS)
    assert main(["profile", str(pte)]) == EXIT_OK
    text = capsys.readouterr().out
    assert text.startswith(
        "undelegated.pte + undelegated.cycles.etdp: times in cycles (ETDump version 0, "
        "1 tick = 1 cycle; no clock given, so no time)"
    )
    assert main(["profile", str(pte), "--clock-mhz", "150"]) == EXIT_OK
    text = capsys.readouterr().out
    assert (
        "times in cycles (ETDump version 0, 1 tick = 1 cycle at 150 MHz (6.667 ns); latency also in ms"
        in text
    )
    assert "  latency (ms)       median " in text
    graphs = {g.id: g for g in convert_path(pte)}
    attrs = graphs["forward"].groupNodeAttributes[""]
    assert attrs["measured time scale"] == "1 tick = 1 cycle; no clock given, so no time"
    assert (
        attrs["measured latency"].startswith("median ")
        and " cycles (p10 " in attrs["measured latency"]
    )
    result = pte_adapter.open_analysis(pte, time_scale=TimeScale("cycles", clock_mhz=CLOCK_MHZ))
    data = model_node_data(result, program_plan(result))
    assert data["forward"]["name"] == "measured time (median cycles)"


def test_time_scale_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pte = _program_with(tmp_path, "undelegated", "undelegated.etdp", 1.0)
    for bad in (
        ["--tick-ns", "0"],
        ["--tick-ns", "2", "--time-scale", "us"],
        ["--time-scale", "ns", "--clock-mhz", "100"],
        ["--clock-mhz", "-3"],
    ):
        assert main(["profile", str(pte), *bad]) == 2, bad
        capsys.readouterr()
    assert main(["profile", str(pte), "--tick-ns", "2", "--json"]) == EXIT_OK
    import json

    summary = json.loads(capsys.readouterr().out)
    assert (summary["tick_ns"], summary["time_scale"], summary["unit"]) == (2.0, "ns", "ms")


def test_an_etdump_without_its_size_prefix_reads_the_same(tmp_path: Path) -> None:
    """ExecuTorch's Python serializer writes no size prefix; the runtime does. Both read alike."""
    from pte_adapter.container.etdump import load_etdump

    with_prefix = load_etdump(rescaled_etdump(EXAMPLES / "cond.etdp", tmp_path / "a.etdp", 1.0))
    without = load_etdump(
        rescaled_etdump(EXAMPLES / "cond.etdp", tmp_path / "b.etdp", 1.0, prefixed=False)
    )
    original = load_etdump(EXAMPLES / "cond.etdp")
    assert with_prefix.runs == without.runs == original.runs
