"""The NPU and system an Ethos-U estimate is for, and the records the estimate fills in.

`target_for` turns Vela's names (accelerator config, system config, memory mode) into numbers
from `_generated/perf_data.py`, which scripts/gen_ethosu_perf_data.py regenerates from the pinned
ethos-u-vela: clocks, the memory behind each region with its bandwidth, burst and latencies, the
accelerator's micro-blocks and cycles per element.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pte_adapter.delegates.ethosu._generated import perf_data

ASSUMPTIONS = (
    "regions: 0 (weights) lives in the memory mode's constant area, 1 (scratch) in its arena, "
    "2 (fast scratch) in its staging cache, as ExecuTorch's Ethos-U runtime binds them",
    "IFM block depth is the hardware default for the traversal (not in the command stream)",
    "kernels run one at a time (no overlap between operations beyond the command issue rate); "
    "a DMA runs under the kernel issued before it and costs what the stream waits for it",
    "an Ethos-U85 operation chained behind another runs in that operation's pass",
    "Vela's per-operation model (ethos-u-vela 5.2.0, regor) applied to the commands; where "
    "Vela prices them another way the operation and the partition say so (estimate_notes)",
)

# AXI channels of the Ethos-U85 and their index in the accelerator's read-buffer table.
CH_MEM2MEM, CH_IFM_STREAM, CH_WEIGHT, CH_IFM, CH_SCALE = 0, 1, 2, 4, 5
CH_WRITE = -1
SUBKERNEL = 8  # the MAC array walks kernels in pieces of at most 8x8
DERATE = 0.8  # fraction of the theoretical outstanding-transaction throughput reached


@dataclass(frozen=True)
class Memory:
    name: str
    bandwidth: float  # bytes per NPU cycle
    burst: int  # longest burst, bytes
    read_latency: int
    write_latency: int
    max_reads: int
    max_writes: int
    ports: int


@dataclass(frozen=True)
class Target:
    """The NPU and system an estimate is for."""

    accelerator: str  # ethos-u85-256
    system_config: str
    memory_mode: str
    clock_hz: float
    macs: int
    cores: int
    ofm_ublocks: tuple[tuple[int, int, int], ...]
    output_cycles: tuple[float, ...]
    activation_cycles: tuple[float, ...]
    channel_read_buffers: tuple[int, ...] | None  # U85 only
    resize_cycles: tuple[tuple[float, ...], tuple[float, ...]] | None
    regions: dict[int, Memory]
    assumed: tuple[str, ...] = ()  # defaults used because the compile spec did not say

    @property
    def is_u85(self) -> bool:
        return self.accelerator.startswith("ethos-u85")

    def memory(self, region: int) -> Memory:
        return self.regions.get(region, self.regions[1])

    def describe(self) -> str:
        mems = ", ".join(
            f"region {r} {m.name} {m.bandwidth * self.clock_hz / 1e9:.2f} GB/s"
            for r, m in sorted(self.regions.items())
        )
        return (
            f"{self.accelerator} at {self.clock_hz / 1e6:g} MHz, {self.system_config} / "
            f"{self.memory_mode}: {mems}"
        )


def _memory(system_config: str, sysc: dict[str, Any], name: str) -> Memory:
    """One memory of a system config, with regor's defaults for what vela.ini leaves out."""
    rules = perf_data.MEMORY_RULES
    # regor's rule: an 8-byte AXI port for the U55 system configs, 16 bytes otherwise.
    width = (
        rules["axi_bytes_per_cycle_u55_system"]
        if system_config.startswith("Ethos_U55")
        else rules["axi_bytes_per_cycle_other"]
    )
    p = {**rules["memory_defaults"], **sysc["memories"].get(name, {})}
    return Memory(
        name=name,
        bandwidth=float(p["clock_scale"]) * width * int(p["ports_used"]),
        burst=max(int(p["burst_length"]), 1),
        read_latency=max(int(p["read_latency"]), 0),
        write_latency=max(int(p["write_latency"]), 0),
        max_reads=max(int(p["max_reads"]), 1),
        max_writes=max(int(p["max_writes"]), 1),
        ports=max(int(p["ports_used"]), 1),
    )


def _names(
    accelerator: str, system_config: str | None, memory_mode: str | None
) -> tuple[str, str, list[str]]:
    """The system config and memory mode, Vela's defaults where the compile spec names none."""
    family = accelerator.lower().rsplit("-", 1)[0]
    assumed: list[str] = []
    if not system_config:
        system_config = perf_data.DEFAULTS[family]["system_config"]
        assumed.append(
            f"system config {system_config} (Vela's default; the compile spec names none)"
        )
    if not memory_mode:
        memory_mode = perf_data.DEFAULTS[family]["memory_mode"]
        assumed.append(f"memory mode {memory_mode} (Vela's default; the compile spec names none)")
    return system_config, memory_mode, assumed


def target_for(
    accelerator: str, system_config: str | None = None, memory_mode: str | None = None
) -> Target:
    """Resolve Vela's names into numbers; raises ValueError naming what is unknown."""
    accel = perf_data.ACCELERATORS.get(accelerator.lower())
    if accel is None:
        raise ValueError(f"unknown accelerator config {accelerator!r}")
    system_config, memory_mode, assumed = _names(accelerator, system_config, memory_mode)
    sysc = perf_data.SYSTEM_CONFIGS.get(system_config)
    if sysc is None:
        raise ValueError(f"system config {system_config!r} is not in Vela's default vela.ini")
    mode = perf_data.MEMORY_MODES.get(memory_mode)
    if mode is None:
        raise ValueError(f"memory mode {memory_mode!r} is not in Vela's default vela.ini")
    ports = {"Axi0": sysc["axi0_port"], "Axi1": sysc["axi1_port"]}
    regions = {
        region: _memory(system_config, sysc, ports[mode[area]])
        for region, area in ((0, "const_mem_area"), (1, "arena_mem_area"), (2, "cache_mem_area"))
    }
    rbs = accel.get("channel_read_buffers")
    resize = None
    if "resize_cycles_low" in accel:
        resize = (tuple(accel["resize_cycles_low"]), tuple(accel["resize_cycles_high"]))
    return Target(
        accelerator=accelerator.lower(),
        system_config=system_config,
        memory_mode=memory_mode,
        clock_hz=float(sysc["core_clock"]),
        macs=int(accel["macs"]),
        cores=int(accel["cores"]),
        ofm_ublocks=tuple(tuple(u) for u in accel["ofm_ublocks"]),
        output_cycles=tuple(accel["output_cycles"]),
        activation_cycles=tuple(accel["activation_cycles"]),
        channel_read_buffers=tuple(rbs) if rbs else None,
        resize_cycles=resize,
        regions=regions,
        assumed=tuple(assumed),
    )


@dataclass
class Transfer:
    memory: str
    what: str  # ifm, ifm2, ofm, weights, scales, dma read, dma write
    bytes: int  # payload bytes
    cycles: float  # at the memory's (or channel's) rate, after burst losses
    moved: float = 0.0  # bytes on the bus, burst losses included
    channel: int = CH_WRITE


@dataclass
class OpEstimate:
    index: int
    label: str
    covered: bool = True
    note: str = ""  # why not covered, or what was approximated
    macs: int = 0
    compute_cycles: float = 0.0
    transfers: list[Transfer] = field(default_factory=list)
    # Transfers of DMAs running meanwhile: they compete for the same memories (not its bytes).
    shared: list[Transfer] = field(default_factory=list)
    memory_cycles: dict[str, float] = field(default_factory=dict)
    cycles: float = 0.0  # what the operation adds to the partition's time
    bound: str = ""  # "compute" or the name of the memory that sets the time
    serial_dma: bool = False  # a DMA the stream waits for
    block_cycles: float = 0.0  # first IFM block read + last OFM block write (in compute_cycles)
    chained_ao: float = 0.0  # Ethos-U85: output-unit cycles per element of the chained operations
    duration: float = 0.0  # a DMA's own transfer time (cycles is the part nothing hides)
    # Where the command stream does something Vela's estimate prices another way: what Vela
    # would charge for this operation (for a group of operations, the first carries it all and
    # the others 0) and why, with both numbers.
    vela_cycles: float | None = None
    vela_note: str = ""
    vela_kind: str = ""  # which difference (vela_prices.KINDS)

    @property
    def cycles_as_vela(self) -> float:
        return self.cycles if self.vela_cycles is None else self.vela_cycles

    def bytes_by_memory(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.transfers:
            out[t.memory] = out.get(t.memory, 0) + t.bytes
        return out
