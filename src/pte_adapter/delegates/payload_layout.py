"""Where the bytes of a delegate payload go: byte-exact spans per backend, for `pte-adapter size`.

Each function returns `Span`s (absolute file offsets, as the payload's own offset is added) that do
not overlap; whatever they leave uncovered the caller labels as padding/structure. They reuse the
decoders' readers (Vela block framing and command stream, the XNNPACK header and constant table,
the TOSA reader) and never read constant bytes themselves.

Ethos-U `weight_data` is split by who reads it, from the decoded command stream: the weight and
scale streams of convolutions (read in place from region 0, or copied by a DMA from region 0 to the
region a later convolution reads them from), feature maps read from region 0 (constants Vela put
there, e.g. the zero channels of an LRN's padding), other DMA'd bytes (look-up tables ...), and
bytes no command refers to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.container.flatbuf import FlatBuffer
from pte_adapter.container.sources import DataSources
from pte_adapter.delegates import xnnpack
from pte_adapter.delegates.ethosu import decode_stream
from pte_adapter.delegates.ethosu.binstream import BLOCK_HEADER
from pte_adapter.delegates.ethosu.commands import NpuOperation
from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.delegates.tosa.reader import read_tosa
from pte_adapter.errors import PteFormatError

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


@dataclass
class PayloadSpan:
    kind: str
    name: str
    offset: int  # absolute in the .pte
    size: int
    children: list[PayloadSpan] = field(default_factory=list)
    detail: dict[str, str | int] = field(default_factory=dict)


@dataclass
class PayloadLayout:
    spans: list[PayloadSpan] = field(default_factory=list)
    filler_kind: str = "payload_structure"  # what the uncovered bytes are
    filler_name: str = "payload structure"
    # Named-data keys the payload refers to -> what uses them (e.g. "XNNPACK constant 3").
    named_keys: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def payload_layout(
    backend: str, payload: memoryview, base: int, sources: DataSources | None
) -> PayloadLayout:
    """The layout of one payload; a payload that cannot be read is one opaque span."""
    try:
        if backend == "EthosUBackend":
            return _ethosu(payload, base, sources)
        if backend == "XnnpackBackend":
            return _xnnpack(payload, base)
        if backend == "TOSABackend":
            return _tosa(payload, base)
        if backend == "VgfBackend":
            from pte_adapter.delegates.vgf.layout import payload_layout as vgf_layout

            return vgf_layout(payload, base, sources)
    except PteFormatError as e:
        return PayloadLayout(
            filler_kind="payload_opaque",
            filler_name=f"{backend} payload (unreadable, not broken down)",
            problems=[str(e)],
        )
    return PayloadLayout(
        filler_kind="payload_opaque", filler_name=f"{backend} payload (parts not broken down)"
    )


# -- Ethos-U ------------------------------------------------------------------------------------


def _ethosu(payload: memoryview, base: int, sources: DataSources | None) -> PayloadLayout:
    ctx = DecodeContext("EthosUBackend", sources=sources, payload_offset=base)
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


# -- XNNPACK ------------------------------------------------------------------------------------


def _xnnpack(payload: memoryview, base: int) -> PayloadLayout:
    part = "XNNPACK payload"
    header = xnnpack.read_header(payload, part, base)
    layout = PayloadLayout(filler_kind="padding", filler_name="payload padding")
    if header.flatbuffer_offset:
        length = int.from_bytes(payload[8:10], "little")
        layout.spans.append(PayloadSpan("payload_header", "XH00 header", base, length))
    layout.spans.append(
        PayloadSpan(
            "xnnpack_flatbuffer",
            "XNNPACK graph FlatBuffer",
            base + header.flatbuffer_offset,
            header.flatbuffer_size,
        )
    )
    fb = FlatBuffer(
        payload[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size],
        part,
        base=base + header.flatbuffer_offset,
    )
    root = fb.root()
    block = PayloadSpan(
        "xnnpack_constant_block",
        "constant data block",
        base + header.constant_offset,
        header.constant_size,
    )
    seen: set[tuple[int, int]] = set()
    slot = xnnpack._GRAPH["constant_data"].slot
    for idx, t in enumerate(root.iter_tables(slot, "constant_data")):
        rec = xnnpack.read_record(t, "ConstantDataOffset")
        size = xnnpack._int(rec.fields.get("size"))
        key = str(rec.fields.get("named_key") or "")
        offset = xnnpack._int(rec.fields.get("offset"))
        if key:
            layout.named_keys.setdefault(key, f"XNNPACK constant {idx}")
            continue
        if idx == 0 or offset == xnnpack.UINT64_MAX or size == 0:
            continue
        if offset + size > header.constant_size or (offset, size) in seen:
            continue  # the decoder reports bad offsets; a shared constant counts once
        seen.add((offset, size))
        block.children.append(
            PayloadSpan("xnnpack_constant", f"XNNPACK constant {idx}", block.offset + offset, size)
        )
    if header.constant_size:
        layout.spans.append(block)
    return layout


# -- TOSA ---------------------------------------------------------------------------------------


def _tosa(payload: memoryview, base: int) -> PayloadLayout:
    model = read_tosa(payload, "TOSABackend payload", base=base)
    layout = PayloadLayout(filler_kind="tosa_flatbuffer", filler_name="TOSA graph FlatBuffer")
    seen: set[int] = set()
    for block in model.blocks:
        for t in block.tensors.values():
            if t.data_offset is None or not t.data_size or t.data_offset in seen:
                continue
            seen.add(t.data_offset)
            shape = "x".join(str(d) for d in t.shape or [])
            layout.spans.append(
                PayloadSpan(
                    "tosa_constant",
                    f"TOSA constant {t.name}",
                    t.data_offset,
                    t.data_size,
                    detail={"shape": shape, "dtype": t.dtype},
                )
            )
    return layout
