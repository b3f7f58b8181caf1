"""How long each NPU operation takes: an estimate from the decoded command stream alone.

Per operation the estimate is the larger of two bounds, both Vela's own model (ethos-u-vela
5.2.0, regor: EthosU55Performance / EthosU85Performance) applied to the commands the stream holds:

- compute (perf_compute.py): MAC and output-unit cycles per OFM block over the blocks, held back
  by the command issue rate, plus the first IFM block read and the last OFM block write;
- memory (perf_memory.py): the bytes moved in each memory, as Vela counts them, over what the
  memory (on Ethos-U85, each AXI channel) delivers per NPU cycle.

The stream is then replayed on a timeline (perf_timeline.py): kernels one after another, DMAs
alongside, a DMA costing what the stream waits for it. The numbers (clocks, bandwidths,
micro-blocks, cycles per element) come from _generated/perf_data.py, which
scripts/gen_ethosu_perf_data.py regenerates from the pinned ethos-u-vela; shapes and blocks are
in perf_shapes.py, targets and the records in perf_target.py. Where the stream does work Vela's
estimate prices another way, vela_prices.py says so on the operation with both numbers. What the
command stream does not say is approximated and listed in `ASSUMPTIONS`.
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
    p_est.chained_ao = extra
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
