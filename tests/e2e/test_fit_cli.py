"""`pte-adapter fit`: the map, the pool sizes, the gate's exit codes, `--json`, and the same map
in `summary --json`, the report and Model Explorer's Graph info."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.api import summarize
from pte_adapter.cli import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, main
from pte_adapter.render.html.page import report_html
from pte_adapter.render.plan.program import program_plan
from tests.support.examples import example

WIDE = "wide_scratch_ethosu55"  # a 2,100,000-byte NPU scratch: more than the Corstone-300's SRAM
CORSTONE_300_SRAM = 0x00200000  # examples/arm/executor_runner/Corstone-300.ld: SRAM LENGTH


def _arms_scratch(path: Path) -> int:
    from executorch.backends.arm.scripts.get_ethosu_scratch_from_pte import get_scratch_from_pte

    with contextlib.redirect_stdout(io.StringIO()):
        size = get_scratch_from_pte(str(path))
    assert size is not None
    return size


def test_a_program_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    path = example(WIDE)
    assert main(["fit", str(path), "--board", "corstone-300"]) == EXIT_CHECK_FAILED
    out, err = capsys.readouterr()
    over = _arms_scratch(path) - CORSTONE_300_SRAM
    assert over > 0
    assert f"does not fit: SRAM overflows by {over} bytes" in err
    assert "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE=" in out


def test_the_same_program_fits_a_bigger_board(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(example(WIDE)), "--board", "corstone-320"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("OK: fits") and "does not fit" not in err


def test_own_sizes_override_the_board(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(example("mv2_lrn_ethosu85"))
    assert main(["fit", path, "--board", "corstone-300"]) == EXIT_OK
    assert main(["fit", path, "--board", "corstone-300", "--sram", "1MiB"]) == EXIT_CHECK_FAILED
    assert "does not fit: SRAM overflows" in capsys.readouterr().err
    assert main(["fit", path, "--sram", "2MiB", "--dram", "8MiB"]) == EXIT_OK


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--board", "pico"], "unknown board 'pico'; known boards: corstone-300, corstone-320"),
        (["--sram", "2 megs"], "size '2 megs' is not understood"),
        (["--flash", "1.5"], "not a whole number of bytes"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(example(WIDE)), *argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def _sizes(data: Any, path: str = "") -> list[tuple[str, object]]:
    """Every value whose key names a size in bytes."""
    out: list[tuple[str, object]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k.endswith(("bytes", "_used", "capacity", "used", "overflow", "estimated")):
                out.append((f"{path}.{k}", v))
            if k in ("regions", "regions_exact") and isinstance(v, dict):
                out += [(f"{path}.{k}.{r}", n) for r, n in v.items()]
            out += _sizes(v, f"{path}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _sizes(v, f"{path}[{i}]")
    return out


def test_json_sizes_are_integers_and_summary_has_the_same_map(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = example("convnet_dedicated_sram_ethosu85")
    assert main(["fit", str(path), "--board", "corstone-320", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    sizes = _sizes(data)
    assert len(sizes) > 20
    assert all(type(v) is int for _, v in sizes), [s for s in sizes if type(s[1]) is not int]
    assert data["board"]["fits"] is True
    (npu,) = data["npu_partitions"]
    assert npu["memory_mode"] == "Dedicated_Sram_384KB" and npu["arena_cache_size"] == 393216
    summary = summarize(pte_adapter.load(path))["fit"]
    assert summary == {k: v for k, v in data.items() if k != "board"}


def test_a_program_without_an_npu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(example("mv2_xnnpack_int8")), "--board", "corstone-300"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "planned arenas of forward" in out and "NPU scratch" not in out


def test_an_unknown_memory_mode_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = example("convnet_cortex_m_ethosu85").read_bytes()
    bad = tmp_path / "bad_mode.pte"
    bad.write_bytes(data.replace(b"--memory-mode=Shared_Sram", b"--memory-mode=Shared_Xram"))
    assert main(["fit", str(bad)]) == EXIT_OK
    problems = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("problem:")]
    assert len(problems) == 1 and "memory mode 'Shared_Xram'" in problems[0]


def test_graph_info_and_report_show_the_map() -> None:
    result = pte_adapter.analyse(pte_adapter.load(example("two_methods")))
    plan = program_plan(result)
    info = {g.id: g.group_attrs.get("", {}) for g in plan.graphs}
    first = result.program.methods[0].name  # the method Arm's runner loads
    assert result.deployment is not None and result.deployment.method == first
    with_line = [gid for gid, attrs in info.items() if "deployment_memory" in attrs]
    assert with_line == [first] and len(info) == 2, info.keys()
    wide = pte_adapter.analyse(pte_adapter.load(example(WIDE)))
    assert wide.deployment is not None
    html = report_html(wide)
    section = html.split('<section id="fit">', 1)[1].split("</section>", 1)[0]
    assert section.count("<rect") == len(wide.deployment.items)
    for name in ("SRAM", "DRAM", "off-chip flash", "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE"):
        assert name in section


def test_a_fit_only_without_the_estimate_is_noted(capsys: pytest.CaptureFixture[str]) -> None:
    """The gate counts exact figures; the estimated bookkeeping beside them is a note."""
    path = example("convnet_dedicated_sram_ethosu85")
    dmap = pte_adapter.analyse(pte_adapter.load(path)).deployment
    assert dmap is not None
    exact, everything = dmap.region_bytes(exact_only=True), dmap.region_bytes()
    assert everything["dram"] > exact["dram"]
    argv = ["fit", str(path), "--sram", "1MiB", "--dram", str(exact["dram"])]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err
    assert err.startswith("note: DRAM fits only without the estimated ")
    assert main([*argv[:-1], str(exact["dram"] - 1)]) == EXIT_CHECK_FAILED
    assert "does not fit: DRAM overflows by 1 bytes" in capsys.readouterr().err
