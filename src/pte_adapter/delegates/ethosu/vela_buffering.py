"""Weights a DMA copies to SRAM: how Vela prices the operation that reads them.

Vela (ethos-u-vela 5.2.0, regor: NetworkPerformance::EstimateFullOpPerformance) charges an
operation whose weights it buffers

    max(full copy - previous slack + own slack, its cycles + max(first copy - previous slack, 0))

where the full copy is MemToMemCycles of all its encoded weights and scales, the first copy that
of the first range, and a "slack" is a number the scheduler recorded when it chose the buffering
(Scheduler::ProposeOperatorBuffering, ProposeSlicedWeightBuffering): for an operation without
buffered weights its cycles in the reference schedule, for one with them the cycles of its last
weight slice as the buffering estimate (EstimateSlicedOpPerformance) computed them.

The second term is what the stream's timeline gives (the copy runs under the operation before,
the stream waits for the rest). The slacks are where Vela's price leaves the stream, and both
differences can be read from the commands:

- an Ethos-U85 operation that writes its OFM transposed: the buffering estimate takes the stripe's
  height and width in the written frame but the depth before the transpose (the OFM registers'
  depth), its IFM cut to what that stripe needs: its own slack is the operation on another shape
  (x1.5 or x0.5 of its cycles in the sweep), and when that exceeds what the copy leaves hidden,
  the first term sets Vela's price;
- feature maps the final schedule staged in the fast memory (region 2, where that is not the
  arena's memory, as in the Dedicated_Sram modes): Vela's reference schedule has them in the
  arena, so both slacks are the operations with their feature maps there.

Where neither applies, the slacks are the operations' own cycles and Vela's price is the second
term: nothing is noted. Where one applies and the price differs from ours, the operation gets
kind "buffering" with both numbers and Vela's price, and its copies are priced 0 (Vela counts
them in the operation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation
from pte_adapter.delegates.ethosu.perf_compute import compute_bound
from pte_adapter.delegates.ethosu.perf_memory import copy_cycles
from pte_adapter.delegates.ethosu.perf_shapes import written
from pte_adapter.delegates.ethosu.perf_target import OpEstimate, Target

STAGING_REGION, ARENA_REGION = 2, 1


@dataclass
class _Reference:
    """An operation as Vela's weight-buffering estimate prices it, and why that differs."""

    cycles: float
    reasons: list[str]


def _in_arena(fm: FeatureMap | None, target: Target) -> FeatureMap | None:
    """A feature map staged in region 2, put back in the arena where the two are different
    memories (Vela's reference schedule before it stages feature maps)."""
    if fm is None or fm.chained or fm.region != STAGING_REGION:
        return fm
    if target.memory(STAGING_REGION).name == target.memory(ARENA_REGION).name:
        return fm
    return replace(fm, region=ARENA_REGION)


def _untransposed_depth(op: NpuOperation) -> NpuOperation:
    """The shape EstimateSlicedOpPerformance gives an operation that writes its OFM transposed:
    the written frame's height and width with the OFM registers' depth, and the IFM cut to
    what that stripe needs (RequiredInputSize)."""
    ofm, ifm = op.ofm, op.ifm
    assert ofm is not None and ifm is not None
    frame = written(op)
    if frame is ofm:
        return op
    new_ofm = replace(ofm, height=frame.height, width=frame.width, depth=ofm.depth)
    new_ifm = ifm
    if op.kernel is not None:
        kw, kh = op.kernel
        if op.dilation is not None:
            kw, kh = (kw - 1) * op.dilation[0] + 1, (kh - 1) * op.dilation[1] + 1
        sx, sy = op.stride or (1, 1)
        height = min(ifm.height, (frame.height - 1) * sy + kh)
        width = min(ifm.width, (frame.width - 1) * sx + kw)
        new_ifm = replace(ifm, height=height, width=width)
    return replace(op, ofm=new_ofm, ifm=new_ifm, ofm_transpose="")


def reference_cycles(op: NpuOperation, est: OpEstimate, target: Target, own: bool) -> _Reference:
    """The operation's compute cycles as Vela's scheduler recorded them for weight buffering:
    its feature maps in the arena and, for the buffered operation itself (`own`), the shape
    of its buffering estimate."""
    ref, reasons = op, []
    if own:
        ref = _untransposed_depth(op)
        if ref is not op and ref.ofm is not None:
            shape = f"{ref.ofm.height}x{ref.ofm.width}x{ref.ofm.depth}"
            reasons.append(f"its transposed OFM priced as {shape}")
    moved = replace(
        ref,
        ifm=_in_arena(ref.ifm, target),
        ifm2=_in_arena(ref.ifm2, target),
        ofm=_in_arena(ref.ofm, target),
    )
    if (moved.ifm, moved.ifm2, moved.ofm) != (ref.ifm, ref.ifm2, ref.ofm):
        arena = target.memory(ARENA_REGION).name
        reasons.append(f"feature maps in the arena ({arena}), not where the stream staged them")
        ref = moved
    if ref is op:
        return _Reference(est.compute_cycles, [])
    again = OpEstimate(op.index, op.label)
    compute_bound(ref, target, again, est.chained_ao)
    if abs(again.compute_cycles - est.compute_cycles) < 0.5:
        return _Reference(est.compute_cycles, [])  # the same number: nothing to say
    return _Reference(again.compute_cycles, reasons)


def _writes_into(dma: NpuOperation, op: NpuOperation, target: Target) -> bool:
    """The DMA copies into a weight or scale stream the operation reads outside the constant
    memory."""
    d = dma.dma
    if d is None or d.dst_internal:
        return False
    const = target.memory(0).name
    return any(
        w.region == d.dst_region
        and target.memory(w.region).name != const
        and d.dst < w.base + w.length
        and w.base < d.dst + d.length
        for w in op.weights
    )


def _slack(op: NpuOperation, est: OpEstimate, target: Target) -> _Reference:
    """What an operation without buffered weights leaves for the next one's copy: its cycles in
    Vela's reference schedule (a Transpose the Ethos-U55 carries out as pooling: Vela's price
    of the Transpose, on the group's last command)."""
    if est.vela_kind == "transpose":
        return _Reference(est.vela_cycles or 0.0, [])
    return reference_cycles(op, est, target, own=False)


def _price(
    op: NpuOperation,
    est: OpEstimate,
    copies: list[tuple[NpuOperation, OpEstimate]],
    previous: _Reference,
    target: Target,
) -> _Reference:
    """Vela's price of a buffered operation and what its own slack is; notes it where a slack
    differs from the stream and the price from ours."""
    own = reference_cycles(op, est, target, own=True)
    first_dma = copies[0][0].dma
    assert first_dma is not None
    total = sum(d.dma.length for d, _e in copies if d.dma is not None)
    full = float(max(copy_cycles(target, first_dma.src_region, first_dma.dst_region, total)))
    first = copies[0][1].duration
    slack = previous.cycles
    npu = max(full - slack + own.cycles, est.compute_cycles + max(first - slack, 0.0))
    # Vela's operation is also bound by its memory traffic (Vela's way where already noted).
    base = est.vela_cycles if est.vela_kind == "scales" and est.vela_cycles else est.cycles
    vela = max(npu, base)
    without = base + sum(e.cycles_as_vela for _d, e in copies)
    reasons = own.reasons + [f"the previous operation's {r}" for r in previous.reasons]
    if not reasons or abs(vela - without) <= max(0.005 * without, 1.0):
        return own
    ours = est.cycles + sum(e.cycles for _d, e in copies)
    const = target.memory(0).name
    nbytes = sum(e.bytes_by_memory().get(const, 0) for _d, e in copies)
    formula = (
        f"NPU cycles max(full copy {round(full):,} - previous slack {round(slack):,} + own slack "
        f"{round(own.cycles):,}, cycles {round(est.compute_cycles):,} + unhidden first copy "
        f"{round(max(first - slack, 0.0)):,}) = {round(npu):,}"
    )
    if base > npu:
        way = " Vela's way (scales from the constant memory)" if est.vela_kind else ""
        formula += f", under its memory traffic{way} {round(base):,}"
    est.vela_cycles, est.vela_kind = vela, "buffering"
    est.vela_note = (
        f"weights copied to SRAM by a DMA ({nbytes:,} bytes from {const}, {round(full):,} "
        f"cycles): ours {round(ours):,} cycles with the copy's unhidden part; Vela "
        f"{round(vela):,}, the copy counted in the operation: {formula}; slacks from its "
        f"weight-buffering estimate ({'; '.join(reasons)})"
    )
    for _dma, e in copies:
        e.vela_cycles, e.vela_kind = 0.0, "buffering"
        e.vela_note = (
            f"copy of NPU operation {op.index}'s weights: ours {round(e.cycles):,} cycles the "
            "stream waits; Vela counts the copy in that operation's price"
        )
    return own


def buffered_weights(ops: list[NpuOperation], out: list[OpEstimate], target: Target) -> None:
    """Walk the stream's kernels with the slack Vela's scheduler gave each; price every
    operation whose weights a DMA copied Vela's way where its slacks differ from the stream
    (see the module docstring)."""
    by_index = {e.index: e for e in out}
    previous = _Reference(0.0, [])
    pending: list[NpuOperation] = []  # DMAs since the last kernel
    for op in ops:
        if op.name == "NPU_OP_DMA_START" and op.dma is not None:
            pending.append(op)
            continue
        est = by_index.get(op.index)
        if not op.is_compute or est is None or not est.covered:
            continue
        if est.note.startswith("chained"):
            continue  # runs in its producer's pass: a sub-operation, no slack of its own
        copies = [(d, by_index[d.index]) for d in pending if _writes_into(d, op, target)]
        pending = []
        if copies and all(e.covered for _d, e in copies) and est.vela_kind in ("", "scales"):
            previous = _price(op, est, copies, previous, target)
        else:
            previous = _slack(op, est, target)
