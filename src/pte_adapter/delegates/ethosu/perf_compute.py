"""The compute bound of an NPU operation: Vela's per-operation formula (regor,
EthosU55/U85Performance::EstimateMacOpCycles and EstimateElementwiseCycles).

The MAC array works on the OFM block the registers name (NPU_SET_OFM_BLK_*), split into the
accelerator's micro-blocks; each micro-block takes cycles per kernel element and per slice of
input channels, never fewer than the weight decoder needs; the output unit needs its cycles per
element. Whichever is slower paces the blocks, held back by the command issue rate, and the
operation pays its first IFM block read and its last OFM block write on top. Elementwise
operations are output-unit bound or issue bound.
"""

from __future__ import annotations

import math

from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation
from pte_adapter.delegates.ethosu.perf_shapes import (
    bits_of,
    burst_run,
    ceil_div,
    clipped_block,
    ifm_block_depth,
    ifm_block_for,
    is_reduce_sum,
    ublock,
    written,
)
from pte_adapter.delegates.ethosu.perf_target import SUBKERNEL, OpEstimate, Target


def ao_per_element(op: NpuOperation, target: Target) -> float:
    """Output-unit cycles per OFM element (the per-configuration table)."""
    out_bits = bits_of(op.ofm)
    in_bits = bits_of(op.ifm)
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
    ub_h, ub_w, ub_d = (ceil_div(b, u) for b, u in zip(block, ub, strict=True))
    ub_wh = ub_h * ub_w
    bits = bits_of(op.ifm)
    cores = target.cores
    wd = 32 * ub[2] // (8 * cores) if target.is_u85 else 32 * ub[2] // 8
    delay = 3 if (op.acc_format in ("I40", "I48") and target.macs <= 128) else 2
    kw, kh = op.kernel  # dilation spreads the taps out; it does not add any
    part_kernel = op.traversal == "PART_KERNEL_FIRST"
    ib_depth = min(ib_depth, cin)  # the block never holds more channels than the IFM has
    total = 0.0
    # The kernel is walked in sub-kernels of at most 8x8: full ones and the remainders. Counting
    # each distinct piece once keeps the work constant for any kernel size the registers hold.
    pieces_x = [(SUBKERNEL, kw // SUBKERNEL), (kw % SUBKERNEL, 1)]
    pieces_y = [(SUBKERNEL, kh // SUBKERNEL), (kh % SUBKERNEL, 1)]
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
            steps = ceil_div(elems, 4)
            cycles = max(wd, 4 * ub_wh * (bits // 8)) * steps * ub_d
        elif part_kernel and not is_reduce_sum(op):
            steps = ceil_div(elems, 2 if bits == 16 else 4)
            cycles = max(wd, 4 * ub_wh) * steps * ub_d * ceil_div(ib_depth, 8)
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
            stall *= ceil_div(ib_depth, 8)
        total += (cycles + stall) * count
    if op.name == "NPU_OP_CONV" or is_reduce_sum(op):
        total *= ceil_div(cin, ib_depth)
    return total / (1 if target.is_u85 else cores)


def _transfer_bytes(
    fm: FeatureMap, block: tuple[int, int, int], write: bool, target: Target, nbytes: float
) -> float:
    """Bytes on the bus for `nbytes` of the feature map moved in blocks: a run shorter than the
    memory's burst wastes the rest of the burst."""
    mem = target.memory(fm.region)
    run = burst_run(fm, block, write, 1 if target.is_u85 else target.cores)
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
        ofm = written(op)
        dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
        elems = math.prod(min(a, b) for a, b in zip(dims, block, strict=True))
        mem = target.memory(ofm.region)
        moved = _transfer_bytes(ofm, block, True, target, elems * ofm.elem_size)
        last = mem.write_latency + int(moved / mem.bandwidth)
    return first, last


def compute_bound(op: NpuOperation, target: Target, est: OpEstimate, extra_ao: float = 0.0) -> None:
    """The compute bound (Vela's per-operation formula): MAC and output-unit cycles per OFM
    block over the blocks, held back by the command issue rate, plus the first IFM block read
    and the last OFM block write. `extra_ao`: output-unit cycles per element of operations
    chained behind this one (Ethos-U85), which run in the same pass."""
    ifm = op.ifm
    assert ifm is not None
    # Like Vela, a transposing operation is costed on the shape it writes.
    ofm = written(op)
    dims = (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1))
    h, w, c = dims
    ao = ao_per_element(op, target) + extra_ao
    block = clipped_block(op, dims)
    raw_block = op.block or dims
    ifm_block = ifm_block_for(op, target, raw_block)
    first, last = _first_last_blocks(op, target, raw_block, ifm_block)
    if op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"):
        # Output-unit bound, unless issuing the blocks is slower: each block waits for its
        # first IFM block or its OFM write, spread over four blocks in flight.
        depth = ceil_div(c, 16) * 16 if ofm.format == "NHCWB16" else c
        elements = h * w * depth
        ao_cycles = math.ceil(ao * elements)
        full_block = op.block or dims
        per_block = max(math.prod(full_block), 1)
        issue = math.ceil((max(first, last) / per_block + ao) / 4 * elements)
        est.compute_cycles = max(ao_cycles, issue)
        return
    assert op.kernel is not None
    ub = ublock(op, target)
    cin = max(ifm.depth, 1)
    kernel_elems = op.kernel[0] * op.kernel[1]
    if op.name == "NPU_OP_CONV" or is_reduce_sum(op):
        est.macs = h * w * c * kernel_elems * cin
    else:
        est.macs = h * w * c * kernel_elems
    ib_depth = ifm_block_depth(op, target, cin, ub[2])
    mac_blk = _mac_cycles_per_block(op, target, block, ub, cin, ib_depth)
    ao_blk = float(math.ceil(ao * block[0] * block[1] * block[2]))
    if op.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE") and op.weights:
        # Scales and biases are read per block; the first read waits for the memory.
        scale_mem = target.memory(op.weights[-1].region)
        ao_blk = max(ao_blk, 10 * block[2] * scale_mem.read_latency / 256)
    ub_in_block = math.prod(ceil_div(b, u) for b, u in zip(block, ub, strict=True))
    ub_in_ofm = ceil_div(h, ub[0]) * ceil_div(w, ub[1]) * ceil_div(c, ub[2])
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
