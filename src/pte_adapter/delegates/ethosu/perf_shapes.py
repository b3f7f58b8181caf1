"""Shapes, blocks and bursts of an NPU operation, as its registers give them.

The OFM as written (an Ethos-U85 OFM transpose permutes it; Vela prices the operation on that
shape with the block the registers name), the micro-block, the IFM block that feeds an OFM block
and the contiguous run a block of a feature map moves in (what decides burst losses). These are
regor's rules (ethos-u-vela 5.2.0: EthosU55/U85 GetArchIFMBlockSize, EstimateMemoryTransfer).
"""

from __future__ import annotations

import math
from dataclasses import replace

from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation
from pte_adapter.delegates.ethosu.perf_target import SUBKERNEL, Target


def bits_of(fm: FeatureMap | None) -> int:
    return fm.elem_size * 8 if fm is not None else 8


def ceil_div(a: float, b: float) -> int:
    return max(math.ceil(a / b), 0) if b else 0


def ublock(op: NpuOperation, target: Target) -> tuple[int, int, int]:
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


def is_reduce_sum(op: NpuOperation) -> bool:
    """A pooling command in reduce-sum mode: it sums over the IFM depth, so it walks the depth
    like a convolution (Vela's own operator kind)."""
    return op.name == "NPU_OP_POOL" and op.mode == "REDUCE_SUM"


def ifm_block_depth(op: NpuOperation, target: Target, cin: int, ub_depth: int) -> int:
    bits = bits_of(op.ifm)
    part_kernel = op.traversal == "PART_KERNEL_FIRST" and op.name == "NPU_OP_CONV"
    if target.is_u85:
        if part_kernel:
            return 16
        if bits == 32 or (target.macs in (128, 256) and ub_depth == 16):
            return 32
        return 64
    if bits == 16:
        return ceil_div(min(cin, 16), 4) * 4
    return ceil_div(min(cin, 16 if part_kernel else 32), 8) * 8


def transposed(op: NpuOperation, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    """Dimensions as written when the U85 OFM is transposed (WCH: out = in W, C, H)."""
    order = op.ofm_transpose
    if len(order) != 3 or set(order) != {"H", "W", "C"} or order == "HWC":
        return dims
    pick = {"H": dims[0], "W": dims[1], "C": dims[2]}
    return pick[order[0]], pick[order[1]], pick[order[2]]


def written(op: NpuOperation) -> FeatureMap:
    """The OFM as the operation writes it. An Ethos-U85 OFM transpose permutes the shape the
    OFM registers give; the block registers already describe the written frame (Vela chooses
    the block for it), and Vela prices the operation on that shape."""
    ofm = op.ofm
    assert ofm is not None
    h, w, c = transposed(op, (max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1)))
    if (h, w, c) == (ofm.height, ofm.width, ofm.depth):
        return ofm
    return replace(ofm, height=h, width=w, depth=c)


def clipped_block(op: NpuOperation, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    block = op.block or dims
    return min(block[0], dims[0]), min(block[1], dims[1]), min(block[2], dims[2])


def ifm_block_for(
    op: NpuOperation, target: Target, block: tuple[int, int, int]
) -> tuple[int, int, int]:
    """The IFM block that feeds one OFM block: grown by the (sub-)kernel, rounded to micro-blocks;
    a convolution's holds the hardware's IFM block depth, the others the OFM block's."""
    ifm = op.ifm
    assert ifm is not None
    if op.name in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE") or op.kernel is None:
        return block
    ub = ublock(op, target)
    kw, kh = op.kernel
    sx, sy = op.stride or (1, 1)
    if op.dilation is not None:
        kw, kh = (kw - 1) * op.dilation[0] + 1, (kh - 1) * op.dilation[1] + 1
    h = ceil_div((block[0] - 1) * sy + min(kh, SUBKERNEL), ub[0]) * ub[0]
    w = ceil_div((block[1] - 1) * sx + min(kw, SUBKERNEL), ub[1]) * ub[1]
    if op.name == "NPU_OP_CONV" or is_reduce_sum(op):
        d = ifm_block_depth(op, target, max(ifm.depth, 1), ub[2])
    else:
        d = block[2]
    return h, w, d


def burst_run(fm: FeatureMap, block: tuple[int, int, int], write: bool, cores: int) -> int:
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


def stored_elements(fm: FeatureMap, fmt: str) -> int:
    """The feature map's elements, its depth rounded as a tensor stored in `fmt` is."""
    depth = ceil_div(fm.depth, 16) * 16 if fmt == "NHCWB16" else fm.depth
    return max(fm.height, 1) * max(fm.width, 1) * max(depth, 1)


def padded_elements(fm: FeatureMap) -> int:
    depth = ceil_div(fm.depth, 16) * 16 if fm.format == "NHCWB16" else fm.depth
    return max(fm.height, 1) * max(fm.width, 1) * max(depth, 1)
