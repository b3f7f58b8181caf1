"""How long each NPU operation takes: an estimate from the decoded command stream alone.

Per operation the estimate is the larger of two bounds:

- compute: the MAC array works on the OFM block the registers name (NPU_SET_OFM_BLK_*), split into
  the accelerator's micro-blocks; each micro-block takes a number of cycles per kernel element and
  per slice of input channels, never fewer than the weight decoder needs, and the output unit
  needs its cycles per element on top of that (whichever is slower sets the pace, the other adds
  one block at the end). Elementwise operations are output-unit bound.
- memory: the bytes the operation moves in each memory (the region's memory under the named
  system config and memory mode), divided by what that memory delivers per NPU cycle. Feature
  maps are re-read once per OFM block (the IFM block is the OFM block grown by the kernel),
  weights and scales once per spatial OFM block; a transfer whose contiguous runs are shorter
  than the memory's burst wastes the rest of the burst. On Ethos-U85 each AXI channel is also
  limited by its read buffers and outstanding transactions against the memory's latency.

A DMA the stream waits for before the next compute operation (NPU_OP_DMA_WAIT) is serial and
gets its own time; one that is not waited for overlaps the next compute operation and adds to its
memory bound. The structure follows Arm's published performance model in ethos-u-vela (regor);
the numbers (clocks, bandwidths, micro-blocks, cycles per element) come from perf_data.py, which
scripts/gen_ethosu_perf_data.py regenerates from the pinned ethos-u-vela. What the command stream
does not say (the IFM block depth, chained activation functions, the first-block latency) is
approximated and listed in `ASSUMPTIONS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from pte_adapter.delegates.ethosu._generated import perf_data
from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation

ASSUMPTIONS = (
    "regions: 0 (weights) lives in the memory mode's constant area, 1 (scratch) in its arena, "
    "2 (fast scratch) in its staging cache, as ExecuTorch's Ethos-U runtime binds them",
    "IFM block depth is the hardware default for the traversal (not in the command stream)",
    "no chained activation cost beyond the clip; first-block fill latency ignored",
    "a DMA the stream waits for before the next compute operation is serial, other DMAs overlap",
)

# AXI channels of the Ethos-U85 and their index in the accelerator's read-buffer table.
_CH_MEM2MEM, _CH_IFM_STREAM, _CH_WEIGHT, _CH_IFM, _CH_SCALE = 0, 1, 2, 4, 5
_CH_WRITE = -1
_SUBKERNEL = 8  # the MAC array walks kernels in pieces of at most 8x8
_DERATE = 0.8  # fraction of the theoretical outstanding-transaction throughput reached


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


def target_for(
    accelerator: str, system_config: str | None = None, memory_mode: str | None = None
) -> Target:
    """Resolve Vela's names into numbers; raises ValueError naming what is unknown."""
    accel = perf_data.ACCELERATORS.get(accelerator.lower())
    if accel is None:
        raise ValueError(f"unknown accelerator config {accelerator!r}")
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
    sysc = perf_data.SYSTEM_CONFIGS.get(system_config)
    if sysc is None:
        raise ValueError(f"system config {system_config!r} is not in Vela's default vela.ini")
    mode = perf_data.MEMORY_MODES.get(memory_mode)
    if mode is None:
        raise ValueError(f"memory mode {memory_mode!r} is not in Vela's default vela.ini")
    rules = perf_data.MEMORY_RULES
    # regor's rule: an 8-byte AXI port for the U55 system configs, 16 bytes otherwise.
    width = (
        rules["axi_bytes_per_cycle_u55_system"]
        if system_config.startswith("Ethos_U55")
        else rules["axi_bytes_per_cycle_other"]
    )
    ports = {"Axi0": sysc["axi0_port"], "Axi1": sysc["axi1_port"]}

    def memory(port: str) -> Memory:
        name = ports[port]
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

    regions = {
        0: memory(mode["const_mem_area"]),
        1: memory(mode["arena_mem_area"]),
        2: memory(mode["cache_mem_area"]),
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
    channel: int = _CH_WRITE


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


# --- compute --------------------------------------------------------------------------------


def _ublock(op: NpuOperation, target: Target) -> tuple[int, int, int]:
    if target.is_u85:
        elems = target.macs // 8
        if op.microblock.startswith("U") and "X" in op.microblock:
            h_s, w_s = op.microblock[1:].split("X", 1)
            h, w = int(h_s), int(w_s)
            for u in target.ofm_ublocks:
                if (u[0], u[1]) == (h, w):
                    return u
            return h, w, max(elems // max(h * w, 1), 1)
        return target.ofm_ublocks[-1]
    u = target.ofm_ublocks[0]
    ofm = op.ofm
    kernel_h = op.kernel[1] if op.kernel else 1
    # Two-row micro-blocks process a single output row four wide when the kernel is one row high.
    if (
        u[0] == 2
        and op.name == "NPU_OP_CONV"
        and ofm is not None
        and ofm.height == 1
        and ofm.width % 2 == 0
        and kernel_h == 1
    ):
        return 1, 4, u[2]
    return u


def _bits(fm: FeatureMap | None) -> int:
    return fm.elem_size * 8 if fm is not None else 8


def _ceil(a: float, b: float) -> int:
    return max(math.ceil(a / b), 0) if b else 0


def _ao_per_element(op: NpuOperation, target: Target) -> float:
    """Output-unit cycles per OFM element (the per-configuration table)."""
    out_bits = _bits(op.ofm)
    in_bits = _bits(op.ifm)
    oc = target.output_cycles
    if target.is_u85:
        if op.name == "NPU_OP_RESIZE" and target.resize_cycles is not None and op.ifm and op.ofm:
            ratio = min(
                (op.ofm.width + op.ifm.width // 2) // max(op.ifm.width, 1),
                (op.ofm.height + op.ifm.height // 2) // max(op.ifm.height, 1),
            )
            table = (
                target.resize_cycles[1] if ratio >= target.macs // 512 else target.resize_cycles[0]
            )
            return table[0 if in_bits == 8 else 1]
        if op.name == "NPU_OP_ELEMENTWISE" and op.mode == "DIV":
            return 33.0
        if out_bits == 64:
            index = 3
        elif op.name == "NPU_OP_ELEMENTWISE" and op.ifm2 is not None and in_bits == 32:
            index = 5 if out_bits == 32 else 4
        elif out_bits == 32:
            index = 2
        elif out_bits == 16:
            index = 1
        else:
            index = 0
        per_elem = oc[index]
        if op.ofm_transpose in ("WHC", "WCH", "CWH"):  # swapping H and W halves the throughput
            per_elem = max(per_elem, target.activation_cycles[1])
        return per_elem
    # Ethos-U55/U65 output table: 0/1 32-bit unary/binary elementwise, 2 32-bit multiply,
    # 3 multiply or 40-bit accumulator, 4/5 simple/advanced add-sub, 6 max pooling, 7 the rest.
    if op.name == "NPU_OP_ELEMENTWISE" and in_bits == 32:
        index = 1 if op.ifm2 is not None else 0
    elif op.name == "NPU_OP_ELEMENTWISE" and op.mode == "MUL":
        index = 2 if out_bits == 32 else 3
    elif op.name != "NPU_OP_ELEMENTWISE" and op.acc_format == "I40":
        index = 3
    elif op.name == "NPU_OP_ELEMENTWISE" and op.mode in ("ADD", "SUB"):
        index = 5
    elif op.name == "NPU_OP_POOL" and op.mode == "MAX":
        index = 6
    else:
        index = 7
    act = 2
    if op.activation in ("TANH", "SIGMOID") or op.activation.startswith("TABLE"):
        act = 0
    elif op.activation_range is not None and op.ofm is not None:
        lo, hi = op.activation_range
        full = (-(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1)
        if op.ofm.dtype.startswith("u"):
            full = (0, (1 << out_bits) - 1)
        if (lo, hi) != full and out_bits <= 16:
            act = 1  # a ReLU-style clip
    return max(oc[index], target.activation_cycles[act])


def _ifm_block_depth(op: NpuOperation, target: Target, cin: int, ub_depth: int) -> int:
    bits = _bits(op.ifm)
    part_kernel = op.traversal == "PART_KERNEL_FIRST" and op.name == "NPU_OP_CONV"
    if target.is_u85:
        if part_kernel:
            return 16
        if bits == 32 or (target.macs in (128, 256) and ub_depth == 16):
            return 32
        return 64
    if bits == 16:
        return _ceil(min(cin, 16), 4) * 4
    return _ceil(min(cin, 16 if part_kernel else 32), 8) * 8


def _reduce_sum(op: NpuOperation) -> bool:
    """A pooling command in reduce-sum mode: it sums over the IFM depth, so it walks the depth
    like a convolution (Vela's own operator kind)."""
    return op.name == "NPU_OP_POOL" and op.mode == "REDUCE_SUM"


def _mac_cycles_per_block(
    op: NpuOperation,
    target: Target,
    block: tuple[int, int, int],
    ub: tuple[int, int, int],
    cin: int,
    ib_depth: int,
) -> float:
    """MAC-array cycles for one OFM block (clipped to the OFM)."""
    assert op.kernel is not None
    ub_h, ub_w, ub_d = (_ceil(b, u) for b, u in zip(block, ub, strict=True))
    ub_wh = ub_h * ub_w
    bits = _bits(op.ifm)
    cores = target.cores
    wd = 32 * ub[2] // (8 * cores) if target.is_u85 else 32 * ub[2] // 8
    delay = 3 if (op.acc_format in ("I40", "I48") and target.macs <= 128) else 2
    kw, kh = op.kernel  # dilation spreads the taps out; it does not add any
    part_kernel = op.traversal == "PART_KERNEL_FIRST"
    ib_depth = min(ib_depth, cin)  # the block never holds more channels than the IFM has
    total = 0.0
    # The kernel is walked in sub-kernels of at most 8x8: full ones and the remainders. Counting
    # each distinct piece once keeps the work constant for any kernel size the registers hold.
    pieces_x = [(_SUBKERNEL, kw // _SUBKERNEL), (kw % _SUBKERNEL, 1)]
    pieces_y = [(_SUBKERNEL, kh // _SUBKERNEL), (kh % _SUBKERNEL, 1)]
    for (px, nx), (py, ny) in ((a, b) for a in pieces_x for b in pieces_y):
        if not (px and py and nx and ny):
            continue
        count = nx * ny
        elems = px * py
        if op.name == "NPU_OP_POOL" and op.mode != "REDUCE_SUM":
            steps = 1
            factor = 1 if (not target.is_u85 and target.macs == 32) else bits // 2
            cycles = max(4, elems) * ub_wh * ub_d * factor
        elif op.name == "NPU_OP_DEPTHWISE":
            steps = _ceil(elems, 4)
            cycles = max(wd, 4 * ub_wh * (bits // 8)) * steps * ub_d
        elif part_kernel and not _reduce_sum(op):
            steps = _ceil(elems, 2 if bits == 16 else 4)
            cycles = max(wd, 4 * ub_wh) * steps * ub_d * _ceil(ib_depth, 8)
        else:
            steps = elems
            per_step = (ib_depth // 8) * ub_wh * (bits // 8) if target.is_u85 else 4 * ub_wh
            cycles = max(wd, per_step) * steps * ub_d
        # A lone micro-block cannot hide the accumulator's turnaround between kernel steps.
        stall = 0
        if ub_wh == 1:
            if ub_d == 1:
                stall = delay * steps
            elif steps > 1:
                stall = delay * (steps - 1) * ub_d
        if part_kernel and op.name == "NPU_OP_CONV":
            stall *= _ceil(ib_depth, 8)
        total += (cycles + stall) * count
    if op.name == "NPU_OP_CONV" or _reduce_sum(op):
        total *= _ceil(cin, ib_depth)
    return total / (1 if target.is_u85 else cores)


def _transposed(op: NpuOperation, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    """Dimensions as written when the U85 OFM is transposed (WCH: out = in W, C, H)."""
    order = op.ofm_transpose
    if len(order) != 3 or set(order) != {"H", "W", "C"} or order == "HWC":
        return dims
    pick = {"H": dims[0], "W": dims[1], "C": dims[2]}
    return pick[order[0]], pick[order[1]], pick[order[2]]


def _written(op: NpuOperation) -> FeatureMap:
    """The OFM as the operation writes it. An Ethos-U85 OFM transpose permutes the shape the
    OFM registers give; the block registers already describe the written frame (Vela chooses
    the block for it), and Vela prices the operation on that shape."""
    ofm = op.ofm
    assert ofm is not None
    h, w, c = _transposed(op, (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1)))
    if (h, w, c) == (ofm.height, ofm.width, ofm.depth):
        return ofm
    return replace(ofm, height=h, width=w, depth=c)


def _clipped_block(op: NpuOperation, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    block = op.block or dims
    return min(block[0], dims[0]), min(block[1], dims[1]), min(block[2], dims[2])


def _ifm_block(
    op: NpuOperation, target: Target, block: tuple[int, int, int]
) -> tuple[int, int, int]:
    """The IFM block that feeds one OFM block: grown by the (sub-)kernel, rounded to micro-blocks;
    a convolution's holds the hardware's IFM block depth, the others the OFM block's."""
    ifm = op.ifm
    assert ifm is not None
    if op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE") or op.kernel is None:
        return block
    ub = _ublock(op, target)
    kw, kh = op.kernel
    sx, sy = op.stride or (1, 1)
    if op.dilation is not None:
        kw, kh = (kw - 1) * op.dilation[0] + 1, (kh - 1) * op.dilation[1] + 1
    h = _ceil((block[0] - 1) * sy + min(kh, _SUBKERNEL), ub[0]) * ub[0]
    w = _ceil((block[1] - 1) * sx + min(kw, _SUBKERNEL), ub[1]) * ub[1]
    if op.name == "NPU_OP_CONV" or _reduce_sum(op):
        d = _ifm_block_depth(op, target, max(ifm.depth, 1), ub[2])
    else:
        d = block[2]
    return h, w, d


def _transfer_bytes(
    fm: FeatureMap, block: tuple[int, int, int], write: bool, target: Target, nbytes: float
) -> float:
    """Bytes on the bus for `nbytes` of the feature map moved in blocks: a run shorter than the
    memory's burst wastes the rest of the burst."""
    mem = target.memory(fm.region)
    run = _burst_run(fm, block, write, 1 if target.is_u85 else target.cores)
    return nbytes * mem.burst / min(max(run, 1), mem.burst)


def _first_last_blocks(
    op: NpuOperation, target: Target, block: tuple[int, int, int], ifm_block: tuple[int, int, int]
) -> tuple[float, float]:
    """Cycles to read the first IFM block (every IFM operand; the slowest) and to write the last
    OFM block, latency included: what a pipeline cannot overlap with its own MAC work."""
    ifm, ofm = op.ifm, op.ofm
    assert ifm is not None and ofm is not None
    first = 0.0
    operands = [ifm]
    if op.ifm2 is not None and not op.ifm2_scalar:
        operands.append(op.ifm2)
    for fm in operands:
        if fm.chained:
            continue
        dims = (max(fm.height, 1), max(fm.width, 1), max(fm.depth, 1))
        elems = math.prod(min(a, b) for a, b in zip(dims, ifm_block, strict=True))
        mem = target.memory(fm.region)
        moved = _transfer_bytes(fm, ifm_block, False, target, elems * fm.elem_size)
        first = max(first, mem.read_latency + int(moved / mem.bandwidth))
    last = 0.0
    if not ofm.chained:
        ofm = _written(op)
        dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
        elems = math.prod(min(a, b) for a, b in zip(dims, block, strict=True))
        mem = target.memory(ofm.region)
        moved = _transfer_bytes(ofm, block, True, target, elems * ofm.elem_size)
        last = mem.write_latency + int(moved / mem.bandwidth)
    return first, last


def _compute(op: NpuOperation, target: Target, est: OpEstimate, extra_ao: float = 0.0) -> None:
    """The compute bound (Vela's per-operation formula): MAC and output-unit cycles per OFM
    block over the blocks, held back by the command issue rate, plus the first IFM block read
    and the last OFM block write. `extra_ao`: output-unit cycles per element of operations
    chained behind this one (Ethos-U85), which run in the same pass."""
    ifm = op.ifm
    assert ifm is not None
    # Like Vela, a transposing operation is costed on the shape it writes.
    ofm = _written(op)
    dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
    h, w, c = dims
    ao = _ao_per_element(op, target) + extra_ao
    block = _clipped_block(op, dims)
    raw_block = op.block or dims
    ifm_block = _ifm_block(op, target, raw_block)
    first, last = _first_last_blocks(op, target, raw_block, ifm_block)
    if op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"):
        # Output-unit bound, unless issuing the blocks is slower: each block waits for its
        # first IFM block or its OFM write, spread over four blocks in flight.
        depth = _ceil(c, 16) * 16 if ofm.format == "NHCWB16" else c
        elements = h * w * depth
        ao_cycles = math.ceil(ao * elements)
        full_block = op.block or dims
        per_block = max(math.prod(full_block), 1)
        issue = math.ceil((max(first, last) / per_block + ao) / 4 * elements)
        est.compute_cycles = max(ao_cycles, issue)
        return
    assert op.kernel is not None
    ub = _ublock(op, target)
    cin = max(ifm.depth, 1)
    kernel_elems = op.kernel[0] * op.kernel[1]
    if op.name == "NPU_OP_CONV" or _reduce_sum(op):
        est.macs = h * w * c * kernel_elems * cin
    else:
        est.macs = h * w * c * kernel_elems
    ib_depth = _ifm_block_depth(op, target, cin, ub[2])
    mac_blk = _mac_cycles_per_block(op, target, block, ub, cin, ib_depth)
    ao_blk = float(math.ceil(ao * block[0] * block[1] * block[2]))
    if op.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE") and op.weights:
        # Scales and biases are read per block; the first read waits for the memory.
        scale_mem = target.memory(op.weights[-1].region)
        ao_blk = max(ao_blk, 10 * block[2] * scale_mem.read_latency / 256)
    ub_in_block = math.prod(_ceil(b, u) for b, u in zip(block, ub, strict=True))
    ub_in_ofm = _ceil(h, ub[0]) * _ceil(w, ub[1]) * _ceil(c, ub[2])
    n_blocks = ub_in_ofm / max(ub_in_block, 1)
    # The command stream issues a block at a time; with four in flight, a block cannot take
    # less than a quarter of its MAC, output and memory-imbalance time.
    imbalance = abs(last - first) if n_blocks > 1 else 0.0
    issue_blk = (imbalance + mac_blk + ao_blk) / 4
    mac_b, ao_b = max(mac_blk, issue_blk), max(ao_blk, issue_blk)
    # Whichever unit is slower paces the blocks; the other adds its last block at the end.
    if mac_b > ao_b:
        cycles: float = math.floor(mac_b * n_blocks) + ao_b
    else:
        cycles = ao_b * n_blocks + mac_b
    est.block_cycles = first + last
    est.compute_cycles = cycles + first + last


# --- memory ---------------------------------------------------------------------------------


def _channel_bandwidth(mem: Memory, channel: int, target: Target) -> float:
    """Bytes per cycle one AXI channel can sustain (Ethos-U85: latency x outstanding bursts)."""
    if target.channel_read_buffers is None:
        return mem.bandwidth
    if channel == _CH_WRITE:
        outstanding, latency, rb_limit = mem.max_writes, mem.write_latency, math.inf
    else:
        outstanding, latency = mem.max_reads, mem.read_latency
        rb_limit = target.channel_read_buffers[channel] / max(mem.burst // 16, 1)
    if latency <= 0:
        return mem.bandwidth
    in_flight = min(rb_limit, outstanding * mem.ports * _DERATE)
    return min(mem.bandwidth, mem.burst * in_flight / latency * _DERATE)


def _burst_run(fm: FeatureMap, block: tuple[int, int, int], write: bool, cores: int) -> int:
    """Bytes moved per contiguous run for a block of the feature map."""
    es = fm.elem_size
    bw, bd = max(block[1], 1), max(block[2], 1)
    if fm.format == "NHCWB16":
        if fm.width * 16 * es == bd:  # whole brick rows
            return bw * bd * es
        return 16 * es * bw * (cores if write else 1)
    row = fm.depth * es
    if not write:
        return bw * bd * es if row == bd else bd * es
    if bd <= 16 and row == bd:
        return bw * bd * es
    return min(64, 16 * es * cores, bd * es)


def _stored_elements(fm: FeatureMap, fmt: str) -> int:
    """The feature map's elements, its depth rounded as a tensor stored in `fmt` is."""
    depth = _ceil(fm.depth, 16) * 16 if fmt == "NHCWB16" else fm.depth
    return max(fm.height, 1) * max(fm.width, 1) * max(depth, 1)


def _padded_elements(fm: FeatureMap) -> int:
    depth = _ceil(fm.depth, 16) * 16 if fm.format == "NHCWB16" else fm.depth
    return max(fm.height, 1) * max(fm.width, 1) * max(depth, 1)


def _add(
    est: OpEstimate, target: Target, region: int, what: str, nbytes: float, run: int, channel: int
) -> None:
    mem = target.memory(region)
    efficiency = min(max(run, 1), mem.burst) / mem.burst
    moved = nbytes / efficiency
    bw = _channel_bandwidth(mem, channel, target)
    est.transfers.append(
        Transfer(mem.name, what, int(nbytes), moved / max(bw, 1e-9), moved=moved, channel=channel)
    )


def _memory(op: NpuOperation, target: Target, est: OpEstimate) -> None:
    """Bytes per memory, as Vela counts them: a convolution or pooling reads, for every OFM
    block, the IFM block that feeds it at the IFM's full depth (once per sub-kernel); weights
    and scales once per spatial OFM block; the OFM once. Bursts are judged on the blocks the
    registers name."""
    ifm = op.ifm
    assert ifm is not None
    ofm = _written(op)
    dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
    raw_block = op.block or dims
    block = _clipped_block(op, dims)
    cores = 1 if target.is_u85 else target.cores
    elementwise = op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE")
    ifm_channel = _CH_IFM_STREAM if elementwise else _CH_IFM
    spatial_blocks = _ceil(dims[0], block[0]) * _ceil(dims[1], block[1])
    if not ifm.chained:
        if elementwise:
            # The OFM's elements (Ethos-U85: the operand's own), rounded as the IFM is stored.
            shape = ifm if op.name == "NPU_OP_RESIZE" or target.is_u85 else ofm
            ifm_elems = _stored_elements(shape, ifm.format)
            ifm_block = raw_block
        else:
            assert op.kernel is not None
            ifm_block = _ifm_block(op, target, raw_block)
            kw, kh = op.kernel
            if op.dilation is not None:
                kw, kh = (kw - 1) * op.dilation[0] + 1, (kh - 1) * op.dilation[1] + 1
            depth = _ceil(ifm.depth, 16) * 16 if ifm.format == "NHCWB16" else ifm.depth
            blocks = spatial_blocks
            if op.name == "NPU_OP_CONV" or _reduce_sum(op):
                blocks *= _ceil(dims[2], block[2])
            subkernels = _ceil(kw, _SUBKERNEL) * _ceil(kh, _SUBKERNEL)
            fetch = min(ifm_block[0], max(ifm.height, 1)) * min(ifm_block[1], max(ifm.width, 1))
            ifm_elems = fetch * max(depth, 1) * subkernels * blocks
        run = _burst_run(ifm, ifm_block, False, cores)
        _add(est, target, ifm.region, "ifm", ifm_elems * ifm.elem_size, run, ifm_channel)
    if op.ifm2 is not None and not op.ifm2_scalar and not op.ifm2.chained:
        run = _burst_run(op.ifm2, raw_block, False, cores)
        # A broadcast operand is read at its own size (Vela: MeasureElementAccess).
        source = op.ifm2 if op.ifm2_broadcast or target.is_u85 else ofm
        nbytes = _stored_elements(source, ifm.format) * op.ifm2.elem_size
        _add(est, target, op.ifm2.region, "ifm2", nbytes, run, _CH_IFM_STREAM)
    if not ofm.chained:
        run = _burst_run(ofm, raw_block, True, cores)
        _add(est, target, ofm.region, "ofm", _padded_elements(ofm) * ofm.elem_size, run, _CH_WRITE)
    for ws in op.weights:
        channel = _CH_WEIGHT if ws.kind == "weights" else _CH_SCALE
        _add(est, target, ws.region, ws.kind, ws.length * spatial_blocks, 1 << 30, channel)


# --- DMA --------------------------------------------------------------------------------------


def _dma(op: NpuOperation, target: Target, est: OpEstimate) -> None:
    """A memory-to-memory copy: the slower of reading the source and writing the destination,
    each with its latency."""
    d = op.dma
    assert d is not None
    _add(est, target, d.src_region, "dma read", d.length, 1 << 30, _CH_MEM2MEM)
    _add(est, target, d.dst_region, "dma write", d.length, 1 << 30, _CH_WRITE)
    src, dst = target.memory(d.src_region), target.memory(d.dst_region)
    read = int(d.length / _channel_bandwidth(src, _CH_MEM2MEM, target)) + src.read_latency
    write = int(d.length / _channel_bandwidth(dst, _CH_WRITE, target)) + dst.write_latency
    est.duration = float(max(read, write))
    _memory_totals(est, target)
    est.bound = src.name if read >= write else dst.name


def _memory_totals(est: OpEstimate, target: Target) -> None:
    """Per memory: all its bytes at the memory's rate, or (Ethos-U85) the busiest AXI channel
    into it at that channel's rate, whichever is slower."""
    total: dict[str, float] = {}
    channels: dict[tuple[str, int], float] = {}
    bandwidth = {m.name: m.bandwidth for m in target.regions.values()}
    for t in est.transfers + est.shared:
        total[t.memory] = total.get(t.memory, 0.0) + t.moved
        key = (t.memory, t.channel)
        channels[key] = channels.get(key, 0.0) + t.cycles
    est.memory_cycles = {}
    for name, moved in total.items():
        busiest = max(c for (m, _ch), c in channels.items() if m == name)
        est.memory_cycles[name] = max(moved / bandwidth[name], busiest)


def _finish(est: OpEstimate, target: Target) -> None:
    _memory_totals(est, target)
    est.cycles = est.compute_cycles
    est.bound = "compute"
    for name, cycles in est.memory_cycles.items():
        if cycles > est.cycles:
            est.cycles, est.bound = cycles, name


# --- the stream in order ------------------------------------------------------------------------


@dataclass
class StreamEvent:
    """What the timeline needs of one command: a DMA started, a wait, or a kernel."""

    kind: str  # "dma", "dma_wait", "kernel_wait", "kernel"
    est: OpEstimate | None = None
    keep: int = 0  # waits: how many DMAs / kernels may stay outstanding


def _keep(op: NpuOperation, prefix: str) -> int:
    text = op.mode.removeprefix(prefix)
    return int(text) if op.mode.startswith(prefix) and text.isdigit() else 0


def _chained_input(op: NpuOperation) -> bool:
    return any(fm is not None and fm.chained for fm in (op.ifm, op.ifm2))


def estimate_operations(ops: list[NpuOperation], target: Target) -> list[OpEstimate]:
    """One estimate per compute operation and per DMA, in stream order.

    Each kernel is costed alone (compute and memory bounds); an Ethos-U85 operation whose input
    is chained from the one before runs in that operation's pass (its output-unit work adds to
    it, as in Vela's operation groups). The stream is then replayed on a timeline (see
    `replay`): kernels run one after another, DMAs alongside them. The sum of the estimates'
    cycles is the partition's time.

    Never raises for odd register contents: an operation the model does not cover is returned
    with covered=False and a note, and costs nothing in the sums."""
    out: list[OpEstimate] = []
    events: list[StreamEvent] = []
    producer: tuple[NpuOperation, OpEstimate, float] | None = None  # last kernel, chained AO
    for op in ops:
        if op.name == "NPU_OP_DMA_START" and op.dma is not None:
            est = OpEstimate(op.index, f"DMA {op.dma.length} bytes")
            _dma(op, target, est)
            out.append(est)
            events.append(StreamEvent("dma", est))
            continue
        if op.name == "NPU_OP_DMA_WAIT":
            events.append(StreamEvent("dma_wait", keep=_keep(op, "k=")))
            continue
        if op.name == "NPU_OP_KERNEL_WAIT":
            events.append(StreamEvent("kernel_wait", keep=_keep(op, "n=")))
            continue
        if not op.is_compute:
            continue
        est = OpEstimate(op.index, op.label)
        try:
            if op.ofm is None or op.ifm is None:
                raise ValueError("no feature maps decoded")
            if (
                op.name != "NPU_OP_ELEMENTWISE"
                and op.name != "NPU_OP_RESIZE"
                and (op.kernel is None or op.stride is None)
            ):
                raise ValueError("no kernel decoded")
            _compute(op, target, est)
            _memory(op, target, est)
            if _chained_input(op) and producer is not None:
                p_op, p_est, extra = producer
                extra += _ao_per_element(op, target)
                again = OpEstimate(p_op.index, p_op.label)
                _compute(p_op, target, again, extra)
                p_est.compute_cycles, p_est.block_cycles = again.compute_cycles, again.block_cycles
                p_est.transfers += est.transfers
                est.transfers, est.compute_cycles = [], 0.0
                est.note = f"chained: runs in the pass of NPU operation {p_op.index}"
                est.bound = "compute"
                producer = (p_op, p_est, extra)
                out.append(est)
                continue
        except (ValueError, ArithmeticError, IndexError, KeyError, AssertionError) as e:
            out.append(OpEstimate(op.index, op.label, covered=False, note=f"not estimated: {e}"))
            producer = None
            continue
        out.append(est)
        events.append(StreamEvent("kernel", est))
        producer = (op, est, 0.0)
    stalls = replay(events, target)
    for dma in out:
        if dma.index in stalls:
            dma.cycles, dma.serial_dma = stalls[dma.index]
    from pte_adapter.delegates.ethosu import vela_prices  # it builds on this module

    vela_prices.note_differences(ops, out, events, target)
    return out


def replay(
    events: list[StreamEvent], target: Target, duration: dict[int, float] | None = None
) -> dict[int, tuple[float, bool]]:
    """Replay the stream on a timeline; per DMA, the cycles the stream waited for it and whether
    it was waited for.

    The NPU runs one kernel at a time; the command stream issues a kernel once the previous one
    has started, and a DMA as soon as it reaches it (one DMA at a time), so a DMA runs under
    the kernels issued before it. NPU_OP_DMA_WAIT k holds the stream until at most k DMAs are
    outstanding; NPU_OP_KERNEL_WAIT n until at most n kernels are. A DMA's cost is the time
    the stream stood waiting for it beyond the running kernel, which is what Vela calls the
    part of a weight transfer the previous operation's time does not hide.

    Without `duration` each kernel is finished here (its memory bound counts the transfers of
    the DMAs running meanwhile); with it (kernel index -> cycles) those cycles are used."""
    issue = npu_free = dma_free = 0.0
    kernel_ends: list[float] = []
    pending: list[tuple[OpEstimate, float]] = []
    out: dict[int, tuple[float, bool]] = {}
    for ev in events:
        est = ev.est
        if ev.kind == "dma" and est is not None:
            start = max(issue, dma_free)
            dma_free = start + est.duration
            pending.append((est, dma_free))
            out[est.index] = (0.0, False)
        elif ev.kind == "dma_wait":
            waited = pending[: max(len(pending) - ev.keep, 0)]
            pending = pending[len(waited) :]
            for dma, end in waited:
                stall = max(end - max(issue, npu_free), 0.0)
                out[dma.index] = (out[dma.index][0] + stall, True)
                issue = max(issue, end)
        elif ev.kind == "kernel_wait":
            if len(kernel_ends) > ev.keep:
                issue = max(issue, kernel_ends[len(kernel_ends) - 1 - ev.keep])
        elif ev.kind == "kernel" and est is not None:
            start = max(issue, npu_free)
            if duration is None:
                est.shared = [t for dma, end in pending if end > start for t in dma.transfers]
                _finish(est, target)
                cycles = est.cycles
            else:
                cycles = duration.get(est.index, est.cycles)
            npu_free = start + cycles
            kernel_ends.append(npu_free)
            issue = start
    end_all = max(npu_free, issue)
    for dma, end in pending:  # started but never waited for before the stream ends
        extra = max(end - end_all, 0.0)
        out[dma.index] = (out[dma.index][0] + extra, out[dma.index][1])
        end_all = max(end_all, end)
        if duration is None:
            dma.note = "DMA not waited for by any later operation"
    return out
