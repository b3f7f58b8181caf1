"""Where the command stream does something Vela's estimate prices another way.

The adapter's estimate (perf.py) follows Vela's performance model (ethos-u-vela 5.2.0, regor)
operation by operation, but it prices the commands the stream actually holds, while Vela prices
its own scheduled operations before it lowers them to commands. Where the two part, for reasons
found in Vela's source, every operation concerned gets `vela_cycles` (what Vela charges for it;
for a group of commands the last one carries the group's price and the others 0), `vela_kind`
and `vela_note` with both numbers, and the partition a line per kind (`partition_notes`):

- transpose: the Ethos-U55 has no transpose; Vela lowers one into 1x1 average pools that write
  with swapped strides (a whole-volume pass, or one depth-1 slice per row or column), and prices
  the Transpose from its memory traffic alone (EthosU55Performance::MeasureCycleCost, the
  Compound operator: "TODO: Measure variable-implementation ops"). We price the pools with the
  pooling model Vela uses for any other pooling.
- scales: with its weights copied to SRAM by a DMA, an operation reads its scales from that
  copy (the SCALE_BASE register says so); Vela charges scale reads to the constant memory and
  its scale channel all the same (MeasureAccessCycles).
- matmul: the Ethos-U55 carries out a MatMul as an elementwise multiply into an int32 buffer and
  a reduce-sum, per output column; Vela prices that from compute alone (EstimateMatMulCycles)
  and counts the intermediate in elements, not bytes; we also bound each by its memory traffic.
- repeat: a command issued again with no register written in between runs again; Vela prices
  its operation once.
- dma: how much of a weight DMA the kernels before it hide depends on what those kernels cost;
  with them priced Vela's way, the visible part changes.
- buffering: an operation whose weights a DMA copied to SRAM is priced with the slacks Vela's
  weight-buffering estimate recorded, where they differ from the stream (vela_buffering.py).
"""

from __future__ import annotations

import itertools
import math

from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.delegates.ethosu.perf_memory import (
    add_transfer,
    channel_bandwidth,
    memory_totals,
)
from pte_adapter.delegates.ethosu.perf_shapes import ceil_div
from pte_adapter.delegates.ethosu.perf_target import CH_SCALE, OpEstimate, Target
from pte_adapter.delegates.ethosu.perf_timeline import StreamEvent, replay
from pte_adapter.delegates.ethosu.vela_buffering import buffered_weights
from pte_adapter.wording import shape_compact

KINDS = ("transpose", "buffering", "scales", "matmul", "repeat", "lut", "dma")


def _set(est: OpEstimate, kind: str, cycles: float, note: str) -> None:
    est.vela_cycles, est.vela_kind, est.vela_note = cycles, kind, note


# --- transposes the Ethos-U55 carries out as pooling -------------------------------------------


def _transpose_write(op: NpuOperation, target: Target) -> bool:
    """An Ethos-U55/U65 1x1 average pool that writes its OFM with height and width strides
    swapped: how Vela lowers a Transpose there (the hardware has no transpose)."""
    ofm, ifm = op.ofm, op.ifm
    return (
        not target.is_u85
        and op.name == "NPU_OP_POOL"
        and op.mode == "AVERAGE"
        and op.kernel == (1, 1)
        and op.stride == (1, 1)
        and ofm is not None
        and ifm is not None
        and ofm.format == "NHWC"
        and ofm.height > 1
        and ofm.width > 1
        and ofm.shape == ifm.shape
        and 0 < ofm.stride_y < ofm.stride_x
    )


def _same_transpose(a: NpuOperation, b: NpuOperation) -> bool:
    """Consecutive slices of one transpose: the same shapes and strides, the next addresses."""
    fa, fb = a.ofm, b.ofm
    ia, ib = a.ifm, b.ifm
    assert fa is not None and fb is not None and ia is not None and ib is not None
    return (
        fa.shape == fb.shape
        and (fa.stride_x, fa.stride_y, fa.stride_c) == (fb.stride_x, fb.stride_y, fb.stride_c)
        and fa.region == fb.region
        and ia.region == ib.region
        and fb.base != fa.base
    )


def _vela_transpose_cycles(group: list[NpuOperation], target: Target) -> float:
    """How Vela prices a Transpose on the Ethos-U55 (regor, EthosU55Performance, the Compound
    operator: "TODO: Measure variable-implementation ops (default estimation based on memory
    access)"): the tensor read once and written once at the memories' bandwidths, with the
    burst losses of its block configuration; not the pooling its command stream does.

    The transpose's depths come from the slices (InsertTransposeCommand): one pooling over the
    whole volume swaps height and width (depth kept); depth-1 slices of h x w swap an axis with
    the channels, so the input's depth is w and the output's h. Vela's block for it is the
    input depth rounded to the micro-block (at most 128), its IFM block depth at most 32."""
    first = group[0]
    assert first.ifm is not None and first.ofm is not None
    es = first.ofm.elem_size
    nbytes = sum(math.prod(op.ofm.shape) * op.ofm.elem_size for op in group if op.ofm is not None)
    if first.ofm.depth == 1:
        d_in, d_out = first.ofm.width, first.ofm.height
    else:
        d_in = d_out = first.ofm.depth
    ub_d = target.ofm_ublocks[0][2]
    ofm_block = min(ceil_div(d_in, ub_d) * ub_d, 128)
    ifm_block = ceil_div(min(d_in, 32), ub_d) * ub_d
    src, dst = target.memory(first.ifm.region), target.memory(first.ofm.region)
    read_run = 1 << 30 if d_in * es == ifm_block else ifm_block * es
    if ofm_block <= 16 and d_out * es == ofm_block:
        write_run = 1 << 30
    else:
        write_run = min(64, 16 * es * target.cores, ofm_block * es)
    read = nbytes * src.burst / min(read_run, src.burst)
    write = nbytes * dst.burst / min(write_run, dst.burst)
    npu = max(read / src.bandwidth + src.read_latency, write / dst.bandwidth + dst.write_latency)
    if src.name == dst.name:
        return max(npu, (read + write) / src.bandwidth)
    return max(npu, read / src.bandwidth, write / dst.bandwidth)


def _transposes(ops: list[NpuOperation], estimates: dict[int, OpEstimate], target: Target) -> None:
    groups: list[list[NpuOperation]] = []
    previous: NpuOperation | None = None
    for op in ops:
        if not op.is_compute:
            continue
        if not _transpose_write(op, target) or op.index not in estimates:
            previous = None
            continue
        if previous is not None and groups and _same_transpose(previous, op):
            groups[-1].append(op)
        else:
            groups.append([op])
        previous = op
    for group in groups:
        ours = sum(estimates[op.index].cycles for op in group)
        vela = _vela_transpose_cycles(group, target)
        first = group[0]
        assert first.ofm is not None
        shape = shape_compact(first.ofm.shape)
        kind = f"{len(group)} POOL slices of {shape}" if len(group) > 1 else f"one POOL of {shape}"
        note = (
            f"transpose carried out as {kind} (height/width strides swapped on write): ours "
            f"{round(ours):,} cycles by the pooling model; Vela prices a transpose from its "
            f"memory traffic alone, {round(vela):,} cycles"
        )
        for k, op in enumerate(group):
            _set(estimates[op.index], "transpose", vela if k == len(group) - 1 else 0.0, note)


# --- scales read from a staged copy ----------------------------------------------------------


def _staged_scales(
    ops: list[NpuOperation], estimates: dict[int, OpEstimate], target: Target
) -> None:
    const = target.regions[0]
    for op in ops:
        est = estimates.get(op.index)
        if est is None or est.vela_kind or op.name not in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
            continue
        scales = [w for w in op.weights if w.kind == "scales"]
        if not scales or all(target.memory(w.region).name == const.name for w in scales):
            continue
        # Vela's way: the same transfers, but the scales read from the constant memory.
        theirs = OpEstimate(op.index, op.label, compute_cycles=est.compute_cycles)
        theirs.transfers = [t for t in est.transfers if t.what != "scales"]
        theirs.shared = est.shared
        refetch = max(
            (
                t.bytes // w.length
                for t, w in zip(
                    [t for t in est.transfers if t.what == "scales"], scales, strict=False
                )
                if w.length
            ),
            default=1,
        )
        for w in scales:
            add_transfer(theirs, target, 0, "scales", w.length * refetch, 1 << 30, CH_SCALE)
        memory_totals(theirs, target)
        vela = max([theirs.compute_cycles, *theirs.memory_cycles.values()])
        if abs(vela - est.cycles) <= max(0.005 * est.cycles, 1.0):
            continue
        where = target.memory(scales[0].region).name
        bw = channel_bandwidth(const, CH_SCALE, target)
        _set(
            est,
            "scales",
            vela,
            f"scales read from the copy a DMA put in {where}; Vela charges scale reads to the "
            f"constant memory ({const.name}, scale channel {bw:.2f} bytes/cycle): ours "
            f"{round(est.cycles):,} cycles, Vela's way {round(vela):,}",
        )


# --- MatMul on the Ethos-U55 ---------------------------------------------------------------


def _matmuls(ops: list[NpuOperation], estimates: dict[int, OpEstimate], target: Target) -> None:
    if target.is_u85:
        return
    compute = [op for op in ops if op.is_compute]
    for mul, red in itertools.pairwise(compute):
        if not (
            mul.name == "NPU_OP_ELEMENTWISE"
            and mul.mode == "MUL"
            and red.name == "NPU_OP_POOL"
            and red.mode == "REDUCE_SUM"
            and mul.ofm is not None
            and red.ifm is not None
            and mul.ofm.elem_size == 4
            and (mul.ofm.region, mul.ofm.base) == (red.ifm.region, red.ifm.base)
        ):
            continue
        for op in (mul, red):
            est = estimates.get(op.index)
            if est is None or est.vela_kind:
                continue
            _set(
                est,
                "matmul",
                est.compute_cycles,
                f"MatMul column ({'multiply' if op is mul else 'reduce-sum'}): ours "
                f"{round(est.cycles):,} cycles, bound by its int32 intermediate's memory "
                f"traffic; Vela prices a MatMul from compute alone, {round(est.compute_cycles):,}",
            )


# --- commands issued twice ---------------------------------------------------------------------


def _repeats(ops: list[NpuOperation], estimates: dict[int, OpEstimate]) -> None:
    previous: NpuOperation | None = None
    for op in ops:
        est = estimates.get(op.index)
        if (
            est is not None
            and previous is not None
            and previous.is_compute
            and op.name == previous.name
            and op.offset == previous.offset + 4
        ):
            _set(
                est,
                "repeat",
                0.0,
                f"{op.name} issued again with no register written since NPU operation "
                f"{previous.index}: the NPU runs it twice, ours {round(est.cycles):,} "
                "cycles; Vela prices the operation once",
            )
        previous = op


# --- LUT table loads ----------------------------------------------------------------------------


def _lut_loads(ops: list[NpuOperation], out: list[OpEstimate]) -> None:
    """A DMA into the NPU's internal memory loads an activation's lookup table. The stream
    waits for it before the operation that uses it; Vela (NetworkPerformance, "LUT Transfer")
    adds a table's transfer to that operation only beyond the slack of the operation before it,
    and nothing when the table already sits in the memory it is read from."""
    by_index = {e.index: e for e in out}
    for op in ops:
        est = by_index.get(op.index)
        if op.dma is None or not op.dma.dst_internal or est is None or est.vela_kind:
            continue
        if est.cycles > 1.0:
            _set(
                est,
                "lut",
                0.0,
                f"lookup-table load of {op.dma.length:,} bytes ({round(est.duration):,} cycles): "
                f"ours {round(est.cycles):,} cycles, the stream waiting for it; Vela 0, it hides "
                "a table's transfer under the operation before it",
            )


# --- DMAs under kernels priced Vela's way ---------------------------------------------------------


def _dmas(out: list[OpEstimate], events: list[StreamEvent], target: Target) -> None:
    kernels = {e.index: e.cycles_as_vela for e in out if e.covered and e.vela_cycles is not None}
    if not kernels:
        return
    theirs = replay(events, target, kernels)
    for e in out:
        if e.index not in theirs or e.vela_kind:
            continue
        stall = theirs[e.index][0]
        if abs(stall - e.cycles) > 1.0:
            _set(
                e,
                "dma",
                stall,
                f"DMA of {e.label.removeprefix('DMA ')} ({round(e.duration):,} cycles): ours, "
                f"the stream waits {round(e.cycles):,} beyond the kernels before it; with those "
                f"kernels priced Vela's way it would wait {round(stall):,}",
            )


def note_differences(
    ops: list[NpuOperation], out: list[OpEstimate], events: list[StreamEvent], target: Target
) -> None:
    """Mark every operation Vela prices differently (see the module docstring)."""
    covered = {e.index: e for e in out if e.covered and not e.label.startswith("DMA")}
    _repeats(ops, covered)
    _transposes(ops, covered, target)
    _matmuls(ops, covered, target)
    _staged_scales(ops, covered, target)
    _lut_loads(ops, out)
    _dmas(out, events, target)
    buffered_weights(ops, out, target)


_LINES = {
    "transpose": "{n} command(s) of {groups} transpose(s) the Ethos-U55 carries out as pooling "
    "(it has no transpose): ours {ours:,} cycles by the pooling model; Vela prices the "
    "transposes from their memory traffic alone, {vela:,}",
    "buffering": "{groups} operation(s) read weights a DMA copied to SRAM: ours {ours:,} cycles "
    "with their copies; Vela counts each copy in its operation with the slacks its "
    "weight-buffering estimate recorded, which differ from the stream (each operation says "
    "why), {vela:,}",
    "scales": "{n} operation(s) read their scales from the SRAM copy a DMA made; Vela charges "
    "those reads to the constant memory: ours {ours:,} cycles, Vela's way {vela:,}",
    "matmul": "{n} MatMul command(s) (multiply and reduce-sum per column): ours {ours:,} cycles "
    "with their int32 intermediate's memory traffic; Vela prices them from compute alone, "
    "{vela:,}",
    "repeat": "{n} command(s) issued twice with no register change: ours {ours:,} cycles for the "
    "repeats; Vela prices each operation once",
    "lut": "{n} lookup-table load(s) the stream waits for: ours {ours:,} cycles; Vela hides a "
    "table's transfer under the operation before it, {vela:,}",
    "dma": "{n} DMA(s) hidden under kernels Vela prices differently: ours {ours:,} cycles "
    "visible, Vela's way {vela:,}",
}


def partition_notes(estimates: list[OpEstimate]) -> tuple[list[str], float]:
    """One line per kind of difference, with both numbers, and the partition's cycles with every
    noted operation priced Vela's way."""
    covered = [e for e in estimates if e.covered]
    lines = []
    for kind in KINDS:
        marked = [e for e in covered if e.vela_kind == kind]
        if not marked:
            continue
        lines.append(
            _LINES[kind].format(
                n=len(marked),
                groups=sum(1 for e in marked if e.vela_cycles),
                ours=round(sum(e.cycles for e in marked)),
                vela=round(sum(e.vela_cycles or 0.0 for e in marked)),
            )
        )
    as_vela = sum(e.cycles_as_vela for e in covered)
    if lines:
        lines.append(f"with Vela's prices the partition is {round(as_vela):,} cycles")
    return lines, as_vela
