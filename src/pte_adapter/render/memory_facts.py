"""The memory picture in words (`analysis/memory.py`): the peak of live arena bytes, the tensors live
there with their producers and layers, and each NPU partition's scratch beside it. Shared by the
Model Explorer attributes, `summary` text and the HTML report, so all say it the same way."""

from __future__ import annotations

from pte_adapter.analysis.deployment import REGION_NAMES, DeploymentMap
from pte_adapter.analysis.memory import Scratch, TensorLife
from pte_adapter.analysis.partitions import Partition
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.render.facts import instruction_label
from pte_adapter.wording import bytes_short, bytes_text, shape_text

MAX_LIVE_SHOWN = 12  # tensors listed at the peak; the rest are counted


def producer_text(ma: MethodAnalysis, t: TensorLife) -> str:
    """Who writes the tensor: `instruction 3 aten::avg_pool3d.out in CPU island 2
    (features.4 LocalResponseNorm)`, or what it is when no instruction does."""
    if t.producer is None:
        return {"input": "method input", "input and output": "method input", "state": "state"}.get(
            t.kind, "not written by any instruction (a view of another tensor)"
        )
    method, parts = ma.method, ma.partitions
    part = parts.partitions[parts.partition_of[t.producer]]
    text = f"instruction {t.producer} {instruction_label(method, method.instructions[t.producer])}"
    text += f" in {part.name}"
    src = ma.source.instructions.get(t.producer) if ma.source else None
    if src is not None and src.modules:
        m = src.modules[0]
        text += f" ({m.path or '(root)'} {m.short_cls})"
    return text


def tensor_life_text(ma: MethodAnalysis, t: TensorLife) -> str:
    """One planned tensor: `%12 [1, 24, 56, 56] int8, 73.5 KiB, arena 1 @ 0, live 3..5, from ...`."""
    tensor = ma.method.tensor(t.value)
    what = f"{shape_text(tensor.sizes)} {tensor.dtype}" if tensor else "?"
    return (
        f"%{t.value} {what}, {bytes_short(t.nbytes)}, arena {t.arena} @ {t.offset}, "
        f"live {t.first}..{t.last}, {t.kind}, from {producer_text(ma, t)}"
    )


def peak_text(ma: MethodAnalysis) -> str:
    m = ma.memory
    if m.peak_at < 0:
        return "no instruction"
    part = ma.partitions.partitions[ma.partitions.partition_of[m.peak_at]]
    arenas = ", ".join(
        f"arena {a.arena} {bytes_short(a.peak_bytes)} of {bytes_short(a.size)}" for a in m.arenas
    )
    return (
        f"{bytes_text(m.peak_live_bytes)} live at instruction {m.peak_at} ({part.name}), "
        f"{len(m.live_at_peak)} tensor(s); {arenas}"
    )


def scratch_text(ma: MethodAnalysis, s: Scratch) -> str:
    part = ma.partitions.partitions[s.partition]
    return (
        f"{part.name}: {bytes_text(s.scratch_bytes)} scratch in the {s.home} during the call, "
        f"beside {bytes_short(s.planned_live_bytes)} of planned arena live (its inputs and "
        f"outputs {bytes_short(s.io_bytes)})"
    )


def memory_facts(ma: MethodAnalysis) -> dict[str, str]:
    """The method's memory attributes: `memory_peak`, `memory_live_at_peak`, `npu_scratch`."""
    m = ma.memory
    if not m.tensors and not m.scratch:
        return {}
    out = {"memory_peak": peak_text(ma)}
    shown = [tensor_life_text(ma, t) for t in m.live_at_peak[:MAX_LIVE_SHOWN]]
    more = len(m.live_at_peak) - len(shown)
    out["memory_live_at_peak"] = "\n".join(shown + ([f"... and {more} more"] if more > 0 else []))
    if m.scratch:
        out["npu_scratch"] = "\n".join(scratch_text(ma, s) for s in m.scratch) + (
            f"\nthe {m.scratch[0].home} must hold at least {bytes_text(m.peak_scratch_bytes)} "
            "(it is reset after every instruction)"
        )
    if m.problems:
        out["memory_problems"] = "\n".join(m.problems)
    return out


def partition_memory_facts(ma: MethodAnalysis, part: Partition) -> dict[str, str]:
    """`planned_live_peak` and, for a partition with a scratch, `scratch`."""
    m = ma.memory
    if not m.tensors:
        return {}
    out = {"planned_live_peak": bytes_text(m.partition_peaks[part.index])}
    s = m.scratch_by_partition.get(part.index)
    if s is not None:
        out["scratch"] = (
            f"{bytes_text(s.scratch_bytes)} in the {s.home} during the call, beside "
            f"{bytes_short(s.planned_live_bytes)} of planned arena live"
        )
    return out


def fit_facts(dmap: DeploymentMap | None, method: str) -> dict[str, str]:
    """The one Graph info line of the method the runner loads: `deployment_memory`."""
    if dmap is None or dmap.method != method:
        return {}
    regions = ", ".join(
        f"{REGION_NAMES[r]} {bytes_short(n)}" for r, n in dmap.region_bytes().items()
    )
    pools = ", ".join(
        f"{p.what} {bytes_short(p.suggested_bytes)}"
        + (f" (of which {bytes_short(p.estimated_bytes)} estimated)" if p.estimated_bytes else "")
        for p in dmap.pools
    )
    return {"deployment_memory": f"{regions}; pools: {pools} (pte-adapter fit)"}
