"""The memory bound of an NPU operation: the bytes it moves in each memory, as Vela counts them
(regor MeasureElementAccess, ElementTransferToBytes, MeasureAccessCycles), over what the memory
delivers per NPU cycle; on Ethos-U85 each AXI channel is also limited by its read buffers and
outstanding transactions against the memory's latency. And a DMA's own transfer time
(MemToMemCycles).
"""

from __future__ import annotations

import math

from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.delegates.ethosu.perf_shapes import (
    burst_run,
    ceil_div,
    clipped_block,
    ifm_block_for,
    is_reduce_sum,
    padded_elements,
    stored_elements,
    written,
)
from pte_adapter.delegates.ethosu.perf_target import (
    CH_IFM,
    CH_IFM_STREAM,
    CH_MEM2MEM,
    CH_SCALE,
    CH_WEIGHT,
    CH_WRITE,
    DERATE,
    SUBKERNEL,
    Memory,
    OpEstimate,
    Target,
    Transfer,
)


def channel_bandwidth(mem: Memory, channel: int, target: Target) -> float:
    """Bytes per cycle one AXI channel can sustain (Ethos-U85: latency x outstanding bursts)."""
    if target.channel_read_buffers is None:
        return mem.bandwidth
    if channel == CH_WRITE:
        outstanding, latency, rb_limit = mem.max_writes, mem.write_latency, math.inf
    else:
        outstanding, latency = mem.max_reads, mem.read_latency
        rb_limit = target.channel_read_buffers[channel] / max(mem.burst // 16, 1)
    if latency <= 0:
        return mem.bandwidth
    in_flight = min(rb_limit, outstanding * mem.ports * DERATE)
    return min(mem.bandwidth, mem.burst * in_flight / latency * DERATE)


def add_transfer(
    est: OpEstimate, target: Target, region: int, what: str, nbytes: float, run: int, channel: int
) -> None:
    mem = target.memory(region)
    efficiency = min(max(run, 1), mem.burst) / mem.burst
    moved = nbytes / efficiency
    bw = channel_bandwidth(mem, channel, target)
    est.transfers.append(
        Transfer(mem.name, what, int(nbytes), moved / max(bw, 1e-9), moved=moved, channel=channel)
    )


def memory_traffic(op: NpuOperation, target: Target, est: OpEstimate) -> None:
    """Bytes per memory, as Vela counts them: a convolution or pooling reads, for every OFM
    block, the IFM block that feeds it at the IFM's full depth (once per sub-kernel); weights
    and scales once per spatial OFM block; the OFM once. Bursts are judged on the blocks the
    registers name."""
    ifm = op.ifm
    assert ifm is not None
    ofm = written(op)
    dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
    raw_block = op.block or dims
    block = clipped_block(op, dims)
    cores = 1 if target.is_u85 else target.cores
    elementwise = op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE")
    ifm_channel = CH_IFM_STREAM if elementwise else CH_IFM
    spatial_blocks = ceil_div(dims[0], block[0]) * ceil_div(dims[1], block[1])
    if not ifm.chained:
        if elementwise:
            # The OFM's elements (Ethos-U85: the operand's own), rounded as the IFM is stored.
            shape = ifm if op.name == "NPU_OP_RESIZE" or target.is_u85 else ofm
            ifm_elems = stored_elements(shape, ifm.format)
            ifm_block = raw_block
        else:
            assert op.kernel is not None
            ifm_block = ifm_block_for(op, target, raw_block)
            kw, kh = op.kernel
            if op.dilation is not None:
                kw, kh = (kw - 1) * op.dilation[0] + 1, (kh - 1) * op.dilation[1] + 1
            depth = ceil_div(ifm.depth, 16) * 16 if ifm.format == "NHCWB16" else ifm.depth
            blocks = spatial_blocks
            if op.name == "NPU_OP_CONV" or is_reduce_sum(op):
                blocks *= ceil_div(dims[2], block[2])
            subkernels = ceil_div(kw, SUBKERNEL) * ceil_div(kh, SUBKERNEL)
            fetch = min(ifm_block[0], max(ifm.height, 1)) * min(ifm_block[1], max(ifm.width, 1))
            ifm_elems = fetch * max(depth, 1) * subkernels * blocks
        run = burst_run(ifm, ifm_block, False, cores)
        add_transfer(est, target, ifm.region, "ifm", ifm_elems * ifm.elem_size, run, ifm_channel)
    if op.ifm2 is not None and not op.ifm2_scalar and not op.ifm2.chained:
        run = burst_run(op.ifm2, raw_block, False, cores)
        # A broadcast operand is read at its own size (Vela: MeasureElementAccess).
        source = op.ifm2 if op.ifm2_broadcast or target.is_u85 else ofm
        nbytes = stored_elements(source, ifm.format) * op.ifm2.elem_size
        add_transfer(est, target, op.ifm2.region, "ifm2", nbytes, run, CH_IFM_STREAM)
    if not ofm.chained:
        run = burst_run(ofm, raw_block, True, cores)
        add_transfer(
            est, target, ofm.region, "ofm", padded_elements(ofm) * ofm.elem_size, run, CH_WRITE
        )
    for ws in op.weights:
        channel = CH_WEIGHT if ws.kind == "weights" else CH_SCALE
        add_transfer(est, target, ws.region, ws.kind, ws.length * spatial_blocks, 1 << 30, channel)


def copy_cycles(target: Target, src_region: int, dst_region: int, length: int) -> tuple[int, int]:
    """A memory-to-memory copy's read and write times (Vela's MemToMemCycles is the slower):
    the bytes over the source's copy channel and the destination's write channel, each with
    its memory's latency."""
    src, dst = target.memory(src_region), target.memory(dst_region)
    read = int(length / channel_bandwidth(src, CH_MEM2MEM, target)) + src.read_latency
    write = int(length / channel_bandwidth(dst, CH_WRITE, target)) + dst.write_latency
    return read, write


def dma_copy(op: NpuOperation, target: Target, est: OpEstimate) -> None:
    """A memory-to-memory copy: the slower of reading the source and writing the destination,
    each with its latency."""
    d = op.dma
    assert d is not None
    add_transfer(est, target, d.src_region, "dma read", d.length, 1 << 30, CH_MEM2MEM)
    add_transfer(est, target, d.dst_region, "dma write", d.length, 1 << 30, CH_WRITE)
    read, write = copy_cycles(target, d.src_region, d.dst_region, d.length)
    est.duration = float(max(read, write))
    memory_totals(est, target)
    est.bound = (
        target.memory(d.src_region).name if read >= write else target.memory(d.dst_region).name
    )


def memory_totals(est: OpEstimate, target: Target) -> None:
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


def finish(est: OpEstimate, target: Target) -> None:
    memory_totals(est, target)
    est.cycles = est.compute_cycles
    est.bound = "compute"
    for name, cycles in est.memory_cycles.items():
        if cycles > est.cycles:
            est.cycles, est.bound = cycles, name
