"""Where an Ethos-U partition's data lives on the device, and how much of it: the facts the
deployment memory map (`analysis/deployment.py`) places in the board's memories.

Vela compiles for a memory mode and a system config (vela.ini, regenerated into
`_generated/perf_data.py`): the memory mode says which AXI port each area uses — the constant area
(the command stream and weights, the runtime's region 0), the arena (the scratch, region 1) and
the staging cache (the fast scratch, region 2, `Dedicated_Sram` only) — and the system config
which memory sits behind each port (Sram, Dram, OffChipFlash, OnChipFlash).

The sizes are read from the payload: `cmd_data` and `weight_data` (region 0), `scratch_size`
(region 1). The fast scratch has no block of its own: its size is the highest address the
commands touch in region 2 (feature maps, DMA transfers, weight streams), which is what Vela
records as `scratch_fast_size`.
"""

from __future__ import annotations

import dataclasses

from pte_adapter.delegates.ethosu._generated import perf_data
from pte_adapter.delegates.ethosu.binstream import VelaBinStream
from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.program.delegate_graph import (
    DRAM,
    OFF_CHIP_FLASH,
    ON_CHIP_FLASH,
    SRAM,
    DelegateMemory,
)

REGION_CONST, REGION_SCRATCH, REGION_FAST_SCRATCH = 0, 1, 2
# Vela's memory names -> the device's memory regions.
REGION_OF_MEMORY = {
    "Sram": SRAM,
    "Dram": DRAM,
    "OnChipFlash": ON_CHIP_FLASH,
    "OffChipFlash": OFF_CHIP_FLASH,
}


def highest_address(ops: list[NpuOperation], region: int) -> int:
    """The end of the highest byte range the operations address in `region` (0: none)."""
    top = 0
    for op in ops:
        for fm in (op.ifm, op.ifm2, op.ofm):
            if fm is not None and fm.region == region:
                top = max(top, fm.address_range[1])
        for w in op.weights:
            if w.region == region:
                top = max(top, w.base + w.length)
        dma = op.dma
        if dma is not None:
            if dma.src_region == region:
                top = max(top, dma.src + dma.length)
            if dma.dst_region == region and not dma.dst_internal:
                top = max(top, dma.dst + dma.length)
    return top


def _block_size(stream: VelaBinStream, name: str) -> int:
    block = stream.block(name)
    return block.data.nbytes if block is not None and block.data is not None else 0


def _weights_source(stream: VelaBinStream) -> str:
    block = stream.block("weight_data")
    if block is None or not block.external:
        return ""
    return block.source if block.data is not None and block.source else "missing"


def _memories(
    system_config: str, memory_mode: str
) -> tuple[tuple[str | None, str | None, str | None], int | None, list[str]]:
    """(const, arena, cache) memories and the arena cache size; problems when a name is unknown."""
    sysc = perf_data.SYSTEM_CONFIGS.get(system_config)
    mode = perf_data.MEMORY_MODES.get(memory_mode)
    problems = []
    if sysc is None:
        problems.append(
            f"system config {system_config!r} is not in Vela's default vela.ini: which memory "
            "each Ethos-U area uses is unknown"
        )
    if mode is None:
        problems.append(
            f"memory mode {memory_mode!r} is not in Vela's default vela.ini: where the Ethos-U "
            "weights and scratch live is unknown"
        )
    if sysc is None or mode is None:
        return (None, None, None), None, problems
    ports = {"Axi0": str(sysc["axi0_port"]), "Axi1": str(sysc["axi1_port"])}
    areas = (ports[mode["const_mem_area"]], ports[mode["arena_mem_area"]])
    cache = ports[mode["cache_mem_area"]]
    size = mode.get("arena_cache_size")
    return (areas[0], areas[1], cache), (int(size) if size is not None else None), problems


def delegate_memory(
    stream: VelaBinStream,
    ops: list[NpuOperation],
    accelerator: str,
    system_config: str | None,
    memory_mode: str | None,
) -> DelegateMemory:
    """The partition's memory facts; names the compile spec leaves out are Vela's defaults."""
    family = accelerator.lower().rsplit("-", 1)[0]
    defaults = perf_data.DEFAULTS.get(family, {})
    assumed = []
    if not system_config:
        system_config = defaults.get("system_config", "")
        assumed.append(f"system config {system_config or '?'} (Vela's default)")
    if not memory_mode:
        memory_mode = defaults.get("memory_mode", "")
        assumed.append(f"memory mode {memory_mode or '?'} (Vela's default)")
    (const, arena, cache), cache_size, problems = _memories(system_config, memory_mode)
    fast = highest_address(ops, REGION_FAST_SCRATCH)
    memory = DelegateMemory(
        accelerator=accelerator.lower(),
        system_config=system_config,
        memory_mode=memory_mode,
        const_memory=const,
        arena_memory=arena,
        cache_memory=cache if fast or cache_size is not None else None,
        command_bytes=_block_size(stream, "cmd_data"),
        weight_bytes=_block_size(stream, "weight_data"),
        weights_source=_weights_source(stream),
        scratch_bytes=stream.scratch_size or 0,
        fast_scratch_bytes=fast,
        arena_cache_size=cache_size,
        assumed=tuple(assumed),
        problems=tuple(problems),
    )
    return dataclasses.replace(
        memory,
        const_region=REGION_OF_MEMORY.get(memory.const_memory or ""),
        arena_region=REGION_OF_MEMORY.get(memory.arena_memory or ""),
        cache_region=REGION_OF_MEMORY.get(memory.cache_memory or ""),
        compiler="Vela",
        compiler_summary=vela_memory_summary(memory),
    )


def vela_memory_summary(memory: DelegateMemory) -> dict[str, int]:
    """The partition's figures as Vela's summary CSV reports them, in bytes: what each memory
    holds (`sram_memory_used`, `dram_memory_used`, `on_chip_flash_memory_used`,
    `off_chip_flash_memory_used`).

    Vela counts the scratch in the arena's memory and the fast scratch in the cache's; the
    weights in the constant area's, except that weights on the SRAM port (`Sram_Only`) are
    reported as on-chip flash: read-only memory beside the SRAM. The command stream is not
    counted."""
    used = {"Sram": 0, "Dram": 0, "OnChipFlash": 0, "OffChipFlash": 0}
    if memory.arena_memory is not None:
        used[memory.arena_memory] += memory.scratch_bytes
    if memory.cache_memory is not None:
        used[memory.cache_memory] += memory.fast_scratch_bytes
    if memory.const_memory is not None:
        const = "OnChipFlash" if memory.const_memory == "Sram" else memory.const_memory
        used[const] += memory.weight_bytes
    return {
        "sram_memory_used": used["Sram"],
        "dram_memory_used": used["Dram"],
        "on_chip_flash_memory_used": used["OnChipFlash"],
        "off_chip_flash_memory_used": used["OffChipFlash"],
    }
