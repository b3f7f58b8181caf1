"""Recover which NPU operation feeds which from the feature-map address ranges.

The command stream has no tensors, only addresses: an operation reads its IFM from a byte range of
a region and writes its OFM to another. Replaying the operations in order and remembering who last
wrote each range gives the producer of every read (a later write over the same bytes replaces the
earlier one). DMA copies carry a producer from their source range to their destination range. The
network inputs are the first writers of their scratch ranges; whoever last wrote an output's range
produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.delegates.ethosu.binstream import VelaIO
from pte_adapter.delegates.ethosu.commands import NpuOperation

# A producer is an operation index, or ("input", i) for a network input.
Producer = int | tuple[str, int]


@dataclass
class _Write:
    region: int
    lo: int
    hi: int
    producer: Producer


@dataclass
class NpuDataflow:
    # op index -> producers of each operand ("ifm", "ifm2", "src") in first-seen order
    reads: dict[int, dict[str, list[Producer]]] = field(default_factory=dict)
    # output index -> producers
    outputs: dict[int, list[Producer]] = field(default_factory=dict)
    forgotten_writes: int = 0  # writes dropped by the MAX_LIVE_WRITES bound


MAX_LIVE_WRITES = 1024


class _Memory:
    def __init__(self) -> None:
        self.writes: list[_Write] = []
        self.forgotten = 0

    def write(self, region: int, lo: int, hi: int, producer: Producer) -> None:
        # The new write owns [lo, hi) from now on: earlier writes keep only what lies outside it
        # (e.g. the other half of a concatenation), so a later read sees the true last writer.
        kept: list[_Write] = []
        for w in self.writes:
            if w.region != region or w.hi <= lo or hi <= w.lo:
                kept.append(w)
                continue
            if w.lo < lo:
                kept.append(_Write(region, w.lo, lo, w.producer))
            if hi < w.hi:
                kept.append(_Write(region, hi, w.hi, w.producer))
        kept.append(_Write(region, lo, hi, producer))
        # Real streams reuse a few scratch areas, so few writes stay live; a garbage stream of
        # disjoint writes would make every later write and read scan all of them. Forget the
        # oldest beyond a bound (their readers then show no producer).
        self.forgotten += max(0, len(kept) - MAX_LIVE_WRITES)
        self.writes = kept[-MAX_LIVE_WRITES:]

    def read(self, region: int, lo: int, hi: int) -> list[Producer]:
        found: list[Producer] = []
        # The most recent overlapping write of each producer, newest first.
        for w in reversed(self.writes):
            if w.region == region and w.lo < hi and lo < w.hi and w.producer not in found:
                found.append(w.producer)
        return found


def _io_range(io: VelaIO) -> tuple[int, int]:
    return io.offset, io.offset + max(io.nbytes, 1)


def trace(ops: list[NpuOperation], inputs: list[VelaIO], outputs: list[VelaIO]) -> NpuDataflow:
    memory = _Memory()
    flow = NpuDataflow()
    for io in inputs:
        memory.write(io.region, *_io_range(io), ("input", io.index))
    chained: Producer | None = None  # U85: the operation whose OFM feeds the next one directly
    for op in ops:
        if op.is_compute and op.ofm is not None:
            reads: dict[str, list[Producer]] = {}
            for role, fm in (("ifm", op.ifm), ("ifm2", op.ifm2)):
                if fm is None:
                    continue
                if fm.chained:
                    reads[role] = [chained] if chained is not None else []
                else:
                    reads[role] = memory.read(fm.region, *fm.address_range)
            flow.reads[op.index] = reads
            if op.ofm.chained:
                chained = op.index
            else:
                chained = None
                memory.write(op.ofm.region, *op.ofm.address_range, op.index)
        elif op.dma is not None and op.dma.length > 0:
            d = op.dma
            src = memory.read(d.src_region, d.src, d.src + d.length)
            if src:
                # Only a copy of a feature map carries dataflow; weight prefetches do not.
                flow.reads[op.index] = {"src": src}
                memory.write(d.dst_region, d.dst, d.dst + d.length, op.index)
    for io in outputs:
        flow.outputs[io.index] = memory.read(io.region, *_io_range(io))
    flow.forgotten_writes = memory.forgotten
    return flow
