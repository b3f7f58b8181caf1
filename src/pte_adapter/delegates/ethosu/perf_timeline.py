"""The command stream replayed on a timeline: kernels one after another, DMAs alongside.

What a DMA costs depends on what runs while it copies: the stream issues a kernel once the
previous one has started and a DMA as soon as it reaches it, so a DMA runs under the kernel
issued before it, and NPU_OP_DMA_WAIT holds the stream until the copy is done. This is how the
estimate prices the overlap Vela's network estimate describes as the 'slack' of the previous
operation (NetworkPerformance::EstimateFullOpPerformance).
"""

from __future__ import annotations

from dataclasses import dataclass

from pte_adapter.delegates.ethosu.perf_memory import finish
from pte_adapter.delegates.ethosu.perf_target import OpEstimate, Target


@dataclass
class StreamEvent:
    """What the timeline needs of one command: a DMA started, a wait, or a kernel."""

    kind: str  # "dma", "dma_wait", "kernel_wait", "kernel"
    est: OpEstimate | None = None
    keep: int = 0  # waits: how many DMAs / kernels may stay outstanding


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
                finish(est, target)
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
