"""Where the bytes of an Ethos-U payload go (`Backend.layout`): the Vela block framing, and
`weight_data` split by who reads it, from the decoded command stream: the weight and scale streams
of convolutions (read in place from region 0, or copied by a DMA from region 0 to the region a
later convolution reads them from), feature maps read from region 0 (constants Vela put there, e.g.
the zero channels of an LRN's padding), other DMA'd bytes (look-up tables ...), and bytes no
command refers to.
"""

from __future__ import annotations

from pte_adapter.backends import ETHOSU
from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.ethosu.binstream import BLOCK_HEADER
from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.delegates.ethosu.decode import decode_stream
from pte_adapter.delegates.hooks import DecodeContext, PayloadLayout, PayloadSpan

WEIGHT_REGION = 0  # region ExecuTorch's Ethos-U runtime binds to the weight_data block

# Byte kinds inside an Ethos-U weight_data block, strongest claim first (a byte two readers claim
# is counted once, by the first kind here).
NPU_WEIGHT_KINDS = ("npu_weights", "npu_scales", "npu_constant_feature_map", "npu_dma_other")

VELA_BLOCK_KINDS = {
    "cmd_data": "npu_command_stream",
    "weight_data": "npu_weight_data",
    "scratch_data": "npu_scratch_data",
    "scratch_size": "npu_io_description",
    "inputs": "npu_io_description",
    "outputs": "npu_io_description",
}


def payload_layout(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    ctx = DecodeContext(ETHOSU.id, sources=sources, payload_offset=base)
    stream, _config, commands, problems = decode_stream(payload, ctx)
    layout = PayloadLayout(filler_kind="padding", filler_name="block padding", problems=problems)
    ops = commands.operations if commands is not None else []
    for b in stream.blocks:
        layout.spans.append(
            PayloadSpan(
                "vela_block_header",
                f"block header {b.name!r}",
                base + b.header_offset,
                BLOCK_HEADER.size,
            )
        )
        at = base + b.header_offset + BLOCK_HEADER.size
        if b.size == 0:
            continue
        if b.external:
            where = f" -> {b.source}" if b.source else " (not found)"
            layout.spans.append(
                PayloadSpan(
                    "external_key", f"{b.name} key{where}", at, b.size, detail={"key": b.key or ""}
                )
            )
            if b.key:
                layout.named_keys[b.key] = f"Ethos-U {b.name} block"
            continue
        kind = VELA_BLOCK_KINDS.get(b.name, "npu_other_block")
        span = PayloadSpan(kind, b.name, at, b.size)
        if b.name == "weight_data":
            span.children = [
                PayloadSpan(k, k.removeprefix("npu_").replace("_", " "), at + lo, hi - lo)
                for lo, hi, k in classify_weight_data(ops, b.size)
            ]
        layout.spans.append(span)
    return layout


def _weight_data_claims(ops: list[NpuOperation]) -> list[tuple[int, int, str]]:
    """[start, end) ranges of the weight_data block each command reads, with their kind."""
    claims: list[tuple[int, int, str]] = []
    streams_by_region: dict[int, list[tuple[int, int, str]]] = {}
    for op in ops:
        for w in op.weights:
            kind = "npu_weights" if w.kind == "weights" else "npu_scales"
            if w.region == WEIGHT_REGION:
                claims.append((w.base, w.base + w.length, kind))
            else:
                streams_by_region.setdefault(w.region, []).append((w.base, w.length, kind))
        for fm in (op.ifm, op.ifm2):
            if fm is not None and fm.region == WEIGHT_REGION and not fm.chained:
                lo, hi = fm.address_range
                claims.append((lo, hi, "npu_constant_feature_map"))
    for op in ops:
        dma = op.dma
        if dma is None or dma.src_region != WEIGHT_REGION or dma.length <= 0:
            continue
        claims.append((dma.src, dma.src + dma.length, "npu_dma_other"))
        # A stream read where this DMA wrote it came from these source bytes.
        for s_base, s_len, kind in streams_by_region.get(dma.dst_region, []):
            lo = max(s_base, dma.dst)
            hi = min(s_base + s_len, dma.dst + dma.length)
            if lo < hi:
                claims.append((dma.src + lo - dma.dst, dma.src + hi - dma.dst, kind))
    return claims


def classify_weight_data(ops: list[NpuOperation], size: int) -> list[tuple[int, int, str]]:
    """Split [0, size) into contiguous (start, end, kind) runs; unclaimed bytes are
    "npu_unreferenced". A sweep over the claim boundaries: O(n log n) in the number of claims."""
    rank = {k: i for i, k in enumerate(NPU_WEIGHT_KINDS)}
    events: list[tuple[int, int, int]] = []  # (position, +1/-1, rank)
    for lo, hi, kind in _weight_data_claims(ops):
        lo, hi = max(lo, 0), min(hi, size)
        if lo < hi:
            events.append((lo, 1, rank[kind]))
            events.append((hi, -1, rank[kind]))
    events.sort()
    active = [0] * len(NPU_WEIGHT_KINDS)
    runs: list[tuple[int, int, str]] = []
    pos = 0
    i = 0
    while pos < size:
        while i < len(events) and events[i][0] <= pos:
            active[events[i][2]] += events[i][1]
            i += 1
        nxt = events[i][0] if i < len(events) else size
        nxt = min(max(nxt, pos + 1), size)
        kind = next(
            (NPU_WEIGHT_KINDS[r] for r, n in enumerate(active) if n > 0), "npu_unreferenced"
        )
        if runs and runs[-1][2] == kind and runs[-1][1] == pos:
            runs[-1] = (runs[-1][0], nxt, kind)
        else:
            runs.append((pos, nxt, kind))
        pos = nxt
    return runs
