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

from pte_adapter.delegates.ethosu import vela_prices
from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.delegates.ethosu.perf_compute import ao_per_element, compute_bound
from pte_adapter.delegates.ethosu.perf_memory import dma_copy, memory_traffic
from pte_adapter.delegates.ethosu.perf_target import (
    ASSUMPTIONS,
    Memory,
    OpEstimate,
    Target,
    Transfer,
    target_for,
)
from pte_adapter.delegates.ethosu.perf_timeline import StreamEvent, replay

__all__ = [
    "ASSUMPTIONS",
    "Memory",
    "OpEstimate",
    "StreamEvent",
    "Target",
    "Transfer",
    "estimate_operations",
    "replay",
    "target_for",
]


def _keep(op: NpuOperation, prefix: str) -> int:
    text = op.mode.removeprefix(prefix)
    return int(text) if op.mode.startswith(prefix) and text.isdigit() else 0


def _chained_input(op: NpuOperation) -> bool:
    return any(fm is not None and fm.chained for fm in (op.ifm, op.ifm2))


_Producer = tuple[NpuOperation, OpEstimate, float]  # the last kernel, AO cycles chained to it


def _kernel(op: NpuOperation, target: Target) -> OpEstimate:
    """A compute operation costed alone; raises ValueError when its registers do not say enough."""
    if op.ofm is None or op.ifm is None:
        raise ValueError("no feature maps decoded")
    if op.name not in ("NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE") and (
        op.kernel is None or op.stride is None
    ):
        raise ValueError("no kernel decoded")
    est = OpEstimate(op.index, op.label)
    compute_bound(op, target, est)
    memory_traffic(op, target, est)
    return est


def _chain(op: NpuOperation, est: OpEstimate, producer: _Producer, target: Target) -> _Producer:
    """An Ethos-U85 operation chained behind the producer runs in its pass: its output-unit
    cycles add to the producer's per element (Vela's operation groups), its memory traffic
    becomes the producer's, and it costs nothing of its own."""
    p_op, p_est, extra = producer
    extra += ao_per_element(op, target)
    again = OpEstimate(p_op.index, p_op.label)
    compute_bound(p_op, target, again, extra)
    p_est.compute_cycles, p_est.block_cycles = again.compute_cycles, again.block_cycles
    p_est.transfers += est.transfers
    est.transfers, est.compute_cycles, est.bound = [], 0.0, "compute"
    est.note = f"chained: runs in the pass of NPU operation {p_op.index}"
    return p_op, p_est, extra


def estimate_operations(ops: list[NpuOperation], target: Target) -> list[OpEstimate]:
    """One estimate per compute operation and per DMA, in stream order.

    Each kernel is costed alone (compute and memory bounds), chained operations fold into their
    producer, and the stream is replayed on a timeline (`replay`): kernels run one after
    another, DMAs alongside them. The sum of the estimates' cycles is the partition's time.
    Then every operation Vela prices another way gets its note (vela_prices).

    Never raises for odd register contents: an operation the model does not cover is returned
    with covered=False and a note, and costs nothing in the sums."""
    out: list[OpEstimate] = []
    events: list[StreamEvent] = []
    producer: _Producer | None = None
    for op in ops:
        if op.name == "NPU_OP_DMA_START" and op.dma is not None:
            est = OpEstimate(op.index, f"DMA {op.dma.length} bytes")
            dma_copy(op, target, est)
            out.append(est)
            events.append(StreamEvent("dma", est))
        elif op.name in ("NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT"):
            kind, prefix = ("dma_wait", "k=") if "DMA" in op.name else ("kernel_wait", "n=")
            events.append(StreamEvent(kind, keep=_keep(op, prefix)))
        elif op.is_compute:
            try:
                est = _kernel(op, target)
                if _chained_input(op) and producer is not None:
                    producer = _chain(op, est, producer, target)
                    out.append(est)
                    continue
            except (ValueError, ArithmeticError, IndexError, KeyError, AssertionError) as e:
                out.append(
                    OpEstimate(op.index, op.label, covered=False, note=f"not estimated: {e}")
                )
                producer = None
                continue
            out.append(est)
            events.append(StreamEvent("kernel", est))
            producer = (op, est, 0.0)
    for index, (cycles, waited) in replay(events, target).items():
        dma = next(e for e in out if e.index == index)
        dma.cycles, dma.serial_dma = cycles, waited
    vela_prices.note_differences(ops, out, events, target)
    return out
