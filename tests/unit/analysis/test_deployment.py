"""The deployment memory map on the real examples: where each memory mode puts things, external
weights, a bundle, programs without an NPU, an unknown memory mode, and the boards' fit check.

The figures themselves are checked against Vela, Arm's scratch reader and ExecuTorch's memory
plans in tests/oracle/test_fit.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.boards import BOARDS, Board, board_for, fit, parse_size
from pte_adapter.analysis.deployment import DeploymentMap
from pte_adapter.backends import ARM_RUNNER
from pte_adapter.program.delegate_graph import DRAM, OFF_CHIP_FLASH, SRAM
from tests.support.examples import EXAMPLE_PTES, EXAMPLES, example
from tests.support.vela import PtdOracle


def _map(path: Path) -> DeploymentMap:
    # A phone or desktop program's map is made when asked for: here, under Arm's runner.
    return pte_adapter.analyse(pte_adapter.load(path)).deployment_under(ARM_RUNNER)


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=lambda p: p.name)
def test_the_file_and_its_parts(pte: Path) -> None:
    dmap = _map(pte)
    program = dmap.item("program")
    assert program is not None and program.bytes == pte.stat().st_size
    assert sum(p.bytes for p in program.parts) <= program.bytes
    assert all(i.bytes >= 0 for i in dmap.items)
    estimated = [i for i in dmap.items if not i.exact]
    assert [i.key for i in estimated] == ["bookkeeping"]
    pool = next(p for p in dmap.pools if p.option == ARM_RUNNER.method_pool)
    assert pool.estimated_bytes == estimated[0].bytes > 0
    assert pool.exact_bytes == sum(
        i.bytes for i in dmap.items if i.pool == ARM_RUNNER.method_pool and i.exact
    )


def test_each_memory_mode_places_things_where_vela_does() -> None:
    shared = _map(example("wide_scratch_ethosu55"))  # U55 High_End_Embedded: Sram + OffChipFlash
    assert {i.key: i.region for i in shared.items if i.key in ("program", "scratch")} == {
        "program": OFF_CHIP_FLASH,
        "scratch": SRAM,
    }
    dedicated = _map(example("convnet_dedicated_sram_ethosu85"))  # U85 SYS_DRAM, Dedicated_Sram
    regions = {i.key: i.region for i in dedicated.items}
    assert regions["program"] == regions["scratch"] == DRAM and regions["fast_scratch"] == SRAM
    (npu,) = dedicated.partitions
    assert npu.memory.arena_cache_size == 384 * 1024
    fast = dedicated.item("fast_scratch")
    assert fast is not None and 0 < fast.bytes <= 384 * 1024
    assert any(
        p.option == ARM_RUNNER.fast_scratch_pool and p.exact_bytes == fast.bytes
        for p in dedicated.pools
    )
    sram_only = _map(example("convnet_sram_only_ethosu55"))
    assert {i.region for i in sram_only.items if i.key in ("program", "scratch")} == {SRAM}
    assert sram_only.item("fast_scratch") is None and shared.item("fast_scratch") is None


def test_external_weights_are_the_ptds() -> None:
    """The .ptd's weights, as ExecuTorch's own FlatTensor reader sizes them."""
    dmap = _map(example("mv2_ethosu85_ptd"))
    (npu,) = dmap.partitions
    assert npu.memory.weights_source == "mv2_u85_weights.ptd"
    ext = dmap.item("external_data")
    assert ext is not None
    blobs = PtdOracle(EXAMPLES).blobs
    ours = [len(data) for data, source in blobs.values() if source == npu.memory.weights_source]
    assert ext.bytes == sum(ours) and len(ours) == 1
    program = dmap.item("program")
    assert program is not None and ext.region == program.region
    assert next(p.bytes for p in program.parts if p.key == "npu_weights") == 0


def test_a_bundle_is_the_program_file() -> None:
    path = EXAMPLES / "bundle_ethosu55.bpte"
    program = _map(path).item("program")
    assert program is not None and program.what == "program file (bundle)"
    assert program.bytes == path.stat().st_size


@pytest.mark.parametrize("name", ["vulkan_mv2", "mv2_xnnpack_int8", "coreml_small", "vgf_small"])
def test_a_phone_or_desktop_program_gets_no_map_unless_asked(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its backend's record says it runs on a phone or desktop: no Corstone memory map in the
    analysis, the Graph info or `fit`, unless a board or a memory size is asked for."""
    from pte_adapter.cli import main
    from pte_adapter.render.model_explorer import graphs_to_json, program_graphs

    result = pte_adapter.analyse(pte_adapter.load(example(name)))
    assert result.deployment is None
    assert "runs on a phone or desktop" in result.deployment_skipped
    graphs = graphs_to_json(program_graphs(result))["graphs"]
    assert not any("deployment_memory" in g["groupNodeAttributes"][""] for g in graphs)
    assert main(["fit", str(example(name))]) == 0
    assert capsys.readouterr().out.strip() == result.deployment_skipped
    assert main(["fit", str(example(name)), "--board", "corstone-320"]) in (0, 1)
    assert "pool sizes for Arm's bare-metal runner" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["undelegated", "mv2_xnnpack_int8", "two_methods"])
def test_a_program_without_an_npu_still_has_its_map(name: str) -> None:
    dmap = _map(example(name))
    assert dmap.partitions == [] and dmap.item("scratch") is None
    program = dmap.item("program")
    assert program is not None and program.region == OFF_CHIP_FLASH
    assert "assumed" in program.why_here
    assert dmap.item("arenas") is not None and dmap.problems == []
    assert [p.option for p in dmap.pools] == [ARM_RUNNER.method_pool]


def test_an_unknown_memory_mode_is_one_clear_problem(tmp_path: Path) -> None:
    """A copy of a real file whose compile spec names a memory mode Vela does not know."""
    data = example("convnet_cortex_m_ethosu85").read_bytes()
    assert data.count(b"--memory-mode=Shared_Sram") == 1
    bad = tmp_path / "bad_mode.pte"
    bad.write_bytes(data.replace(b"--memory-mode=Shared_Sram", b"--memory-mode=Shared_Xram"))
    dmap = _map(bad)
    assert len(dmap.problems) == 1 and "'Shared_Xram'" in dmap.problems[0]
    assert dmap.item("scratch") is None  # where it lives is unknown: not placed
    assert dmap.item("program") is not None and dmap.item("arenas") is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("64KiB", 65536),
        ("2MiB", 2 * 1024**2),
        ("1.5MB", 1_500_000),
        ("1.5mib", 1572864),
        ("4096", 4096),
        ("0x200000", 0x200000),
        ("2 GiB", 2 * 1024**3),
        ("512K", 512 * 1024),
    ],
)
def test_sizes(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "2x", "MiB", "-1", "1.5", "0x10KiB", "1.0000001KiB"])
def test_sizes_that_do_not_parse(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_boards() -> None:
    with pytest.raises(ValueError, match="known boards: corstone-300, corstone-320"):
        board_for("corstone-999", {})
    assert board_for(None, {"sram": None}) is None
    assert board_for("Corstone-300", {}) == BOARDS["corstone-300"]
    mine = board_for("corstone-300", {"sram": 1024, "flash": None})
    assert mine is not None and mine.regions == {"sram": 1024, "dram": 0x60000000}
    only = board_for(None, {"sram": 4096})
    assert only is not None and only.regions == {"sram": 4096}


def test_the_gate_on_the_corstone_presets() -> None:
    wide = _map(example("wide_scratch_ethosu55"))
    scratch = wide.item("scratch")
    assert scratch is not None
    over = fit(wide, BOARDS["corstone-300"])
    assert not over.ok
    (sram,) = [r for r in over.regions if r.overflow]
    assert sram.region == "sram" and sram.overflow == scratch.bytes - 0x200000 > 0
    (line,) = over.overflows()
    assert line.startswith(f"SRAM overflows by {sram.overflow} bytes") and "scratch" in line
    assert fit(wide, BOARDS["corstone-320"]).ok
    assert fit(_map(example("mv2_lrn_ethosu85")), BOARDS["corstone-300"]).ok


def test_a_memory_the_board_lacks() -> None:
    """Flash and DRAM fall back to what the board has; SRAM has nowhere else to go."""
    wide = _map(example("wide_scratch_ethosu55"))
    sram_only = fit(wide, Board("sram", {"sram": 8 * 1024**2}, "test"))
    assert sram_only.ok
    (region,) = sram_only.regions
    assert {k for k, _, _ in region.items} == {i.key for i in wide.items}
    no_sram = fit(wide, Board("dram", {"dram": 8 * 1024**2}, "test"))
    assert not no_sram.ok
    assert no_sram.unplaced == [
        "NPU scratch (temp allocator) (2100000 bytes, SRAM): dram has no memory for it"
    ]


def test_sizes_are_exact_integers_or_refused() -> None:
    """A size is parsed exactly (a float rounded 2^53 + 1 and overflowed on 400 digits) and a
    size no memory has is refused (issue 44)."""
    assert parse_size(str(2**53 + 1)) == 2**53 + 1
    assert parse_size("1.25KB") == 1250
    assert parse_size("0x" + "f" * 16) == 2**64 - 1
    for text in ("9" * 400, "9" * 5000, "1." + "0" * 5000, "17EiB", str(2**64 + 1)):
        with pytest.raises(ValueError):
            parse_size(text)
