"""The deployment memory map (analysis/deployment.py) against the real toolchain.

- Per Ethos-U partition, Vela's own memory summary (`*_summary_*.csv`: `sram_memory_used`,
  `dram_memory_used`, `on_chip_flash_memory_used`, `off_chip_flash_memory_used` and, for a sized
  `Dedicated_Sram`, `arena_cache_size`, all in KiB) from recompiling the partition's `.tosa`
  sidecar with the delegate's own flags (the session's `vela_runs`).
- The NPU scratch against Arm's own reader, `get_ethosu_scratch_from_pte.py` (in the executorch
  wheel).
- The planned arenas against ExecuTorch's memory plans recorded when the examples were built.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.deployment import DeploymentMap
from pte_adapter.backends import ARM_RUNNER
from tests.support.examples import EXAMPLE_PTES, EXAMPLES, oracle
from tests.support.vela import ETHOSU_PTES, VelaRun, all_ethosu_partitions

VELA_KEYS = (
    "sram_memory_used",
    "dram_memory_used",
    "on_chip_flash_memory_used",
    "off_chip_flash_memory_used",
)
BUNDLE = EXAMPLES / "bundle_ethosu55.bpte"


def _map(pte: Path, cache: dict[Path, DeploymentMap] | None = None) -> DeploymentMap:
    if cache is not None and pte in cache:
        return cache[pte]
    # A phone or desktop program gets a map only when asked for: here, under Arm's runner.
    dmap = pte_adapter.analyse(pte_adapter.load(pte)).deployment_under(ARM_RUNNER)
    if cache is not None:
        cache[pte] = dmap
    return dmap


def test_partition_figures_equal_velas_own_summary(vela_runs: dict[str, VelaRun]) -> None:
    cache: dict[Path, DeploymentMap] = {}
    checked, modes, accelerators = 0, set(), set()
    for part in all_ethosu_partitions():
        run = vela_runs.get(part.name)
        if run is None:
            continue  # an example that keeps no sidecar for this partition
        ours = next(
            p
            for p in _map(part.pte, cache).partitions
            if p.method == part.method and p.delegate == part.index
        )
        vela = {k: round(float(run.summary[k]) * 1024) for k in VELA_KEYS}
        assert ours.memory.compiler_summary == vela, part.name
        assert ours.memory.memory_mode == run.summary["memory_mode"], part.name
        vela_cache = float(run.summary["arena_cache_size"]) * 1024  # Vela reports KiB
        if ours.memory.arena_cache_size is not None:
            assert ours.memory.arena_cache_size == vela_cache, part.name
        else:  # no size in the memory mode: Vela's is the NPU's whole address space
            assert vela_cache >= 2**32, part.name
        checked += 1
        modes.add(ours.memory.memory_mode)
        accelerators.add(ours.memory.accelerator.rsplit("-", 1)[0])
    assert checked >= 10
    assert modes == {"Shared_Sram", "Dedicated_Sram_384KB", "Sram_Only"}
    assert accelerators == {"ethos-u55", "ethos-u85"}


def _arms_scratch(path: Path) -> int | None:
    from executorch.backends.arm.scripts.get_ethosu_scratch_from_pte import get_scratch_from_pte

    with contextlib.redirect_stdout(io.StringIO()):
        return get_scratch_from_pte(str(path))


@pytest.mark.parametrize("pte", [*ETHOSU_PTES, BUNDLE], ids=lambda p: p.name)
def test_scratch_equals_arms_reader(pte: Path) -> None:
    """The temp allocator's NPU scratch: the largest partition's, as Arm's script reads it."""
    dmap = _map(pte)
    scratch = dmap.item("scratch")
    assert scratch is not None and scratch.exact
    assert scratch.bytes == _arms_scratch(pte)
    pool = next(p for p in dmap.pools if p.option.endswith("SCRATCH_TEMP_ALLOCATOR_POOL_SIZE"))
    assert pool.exact_bytes == scratch.bytes and pool.estimated_bytes == 0


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=lambda p: p.name)
def test_arenas_equal_the_recorded_memory_plan(pte: Path) -> None:
    """The method allocator's exact part: the runner's method's planned buffers, as ExecuTorch
    planned them, each allocated 16-byte aligned."""
    recorded = json.loads(pte.with_suffix(".memory.json").read_text())["methods"]
    # Arm's runner loads the program's first method, as ExecuTorch's deserializer orders them.
    first = oracle(pte).program.execution_plan[0].name  # type: ignore[attr-defined]
    method = next(m for m in recorded if m["name"] == first)
    sizes = method["non_const_buffer_sizes"][1:]
    slow = [s for i, s in enumerate(sizes, start=1) if i != ARM_RUNNER.fast_memory_arena]
    dmap = _map(pte)
    assert dmap.method == method["name"]
    arenas = dmap.item("arenas")
    assert arenas is not None and arenas.exact
    align = ARM_RUNNER.align
    assert arenas.bytes == sum(-(-s // align) * align for s in slow)
    pool = next(p for p in dmap.pools if p.option.endswith("METHOD_ALLOCATOR_POOL_SIZE"))
    # Inputs without a plan (the LLM's start position) the runner allocates from the same pool.
    unplanned = dmap.item("unplanned_inputs")
    assert pool.exact_bytes == arenas.bytes + (unplanned.bytes if unplanned else 0)
    planned_io = {t["value"]: t["nbytes"] for t in method["tensors"]}
    inputs = next(p for p in arenas.parts if p.key == "inputs")
    assert inputs.bytes <= sum(planned_io.values())
