"""Compare two programs: "did the fix work?" per method, as typed data for `pte-adapter diff`.

Methods are paired by name, partitions by role (`roles.py`): the island before the first NPU
partition in one export is the island before the first NPU partition in the other, whatever the
instruction indices. Numbers come from the two analyses (`MethodSummary`, the size breakdown), so a
diff never disagrees with `summary` or `size`.

A *regression* is growth in something that costs at run time on the CPU or across boundaries:
delegate partitions, CPU islands, CPU compute kernel calls, or bytes crossing a delegate/CPU
boundary. `--fail-on-regression` exits 1 naming each.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Generic, TypeVar

from pte_adapter.analysis.measured_diff import MeasuredDiff, measured_diff
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.size import SizeReport
from pte_adapter.analysis.summary import MethodSummary, PartitionSummary
from pte_adapter.backends import CPU

# Method numbers compared, in display order.
METRICS = (
    "instructions",
    "delegate_partitions",
    "cpu_islands",
    "cpu_kernel_calls",
    "cpu_compute_calls",
    "cpu_glue_calls",
    "crossing_tensors",
    "crossing_bytes",
    "handoff_tensors",
    "handoff_bytes",
    "delegate_inner_ops",
    "npu_ops",
    "cmd_bytes",
    "weight_bytes",
    "scratch_bytes",
)
REGRESSION_KEYS = ("delegate_partitions", "cpu_islands", "cpu_compute_calls", "crossing_bytes")

# Leaf kinds of the size breakdown that are constant data (weights, biases, scales, tables).
CONSTANT_KINDS = frozenset(
    {
        "constant_tensor",
        "mutable_tensor",
        "named_data",
        "npu_weights",
        "npu_scales",
        "npu_constant_feature_map",
        "npu_dma_other",
        "xnnpack_constant",
        "tosa_constant",
        "vgf_constant",
        "spirv_constant",
    }
)

T = TypeVar("T", int, int | None)


@dataclass
class Change(Generic[T]):
    before: T
    after: T

    @property
    def delta(self) -> int | None:
        if isinstance(self.before, int) and isinstance(self.after, int):
            return self.after - self.before
        return None


@dataclass
class CountsChange:
    """Tensors and their bytes in one direction, before and after."""

    before: tuple[int, int]
    after: tuple[int, int]


@dataclass
class PartitionPair:
    role: str
    status: str  # "same role" | "removed" | "added"
    before: PartitionSummary | None
    after: PartitionSummary | None


@dataclass
class MethodDiff:
    name: str
    status: str  # "both" | "removed" (only before) | "added" (only after)
    numbers: dict[str, Change[int | None]]  # METRICS
    delegate_calls: dict[str, Change[int]]
    cpu_compute_ops_added: dict[str, int]
    cpu_compute_ops_removed: dict[str, int]
    cpu_glue_ops_added: dict[str, int]
    cpu_glue_ops_removed: dict[str, int]
    crossings: dict[str, CountsChange]
    handoffs: dict[str, CountsChange]
    partitions: list[PartitionPair]


@dataclass
class Regression:
    method: str
    metric: str  # one of REGRESSION_KEYS
    before: int
    after: int


@dataclass
class SizeDiff:
    file_size: Change[int]
    constant_bytes: Change[int]
    external_bytes: Change[int]
    by_kind: dict[str, Change[int]]


@dataclass
class ProgramDiff:
    before: str  # file names
    after: str
    methods: list[MethodDiff]
    size: SizeDiff
    delegates_size: tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]
    regressions: list[Regression] = field(default_factory=list)
    # With an ETDump beside either program: what the change saved, measured (measured_diff.py).
    measured: MeasuredDiff | None = None


def _stat_sum(s: MethodSummary, key: str) -> int | None:
    values = [p.delegate_stats.get(key) for p in s.partitions if p.backend != CPU]
    nums = [int(v) for v in values if isinstance(v, (int, float))]
    return sum(nums) if nums else None


def method_numbers(s: MethodSummary) -> dict[str, int | None]:
    inner = [p.inner_ops for p in s.partitions if p.backend != CPU]
    return {
        "instructions": s.instructions,
        "delegate_partitions": s.delegate_partitions,
        "cpu_islands": s.cpu_islands,
        "cpu_kernel_calls": s.cpu_kernel_calls,
        "cpu_compute_calls": s.cpu_compute_calls,
        "cpu_glue_calls": s.cpu_glue_calls,
        "crossing_tensors": sum(s.crossings.values()),
        "crossing_bytes": sum(s.crossing_bytes.values()),
        "handoff_tensors": sum(s.handoffs.values()),
        "handoff_bytes": sum(s.handoff_bytes.values()),
        "delegate_inner_ops": None if any(i is None for i in inner) else sum(i or 0 for i in inner),
        "npu_ops": _stat_sum(s, "npu_ops"),
        "cmd_bytes": _stat_sum(s, "cmd_bytes"),
        "weight_bytes": _stat_sum(s, "weight_bytes"),
        "scratch_bytes": _stat_sum(s, "scratch_bytes"),
    }


def _counter_diff(before: dict[str, int], after: dict[str, int]) -> tuple[dict[str, int], ...]:
    b, a = Counter(before), Counter(after)
    return dict(sorted((a - b).items())), dict(sorted((b - a).items()))


def _pair_partitions(mb: MethodAnalysis | None, ma: MethodAnalysis | None) -> list[PartitionPair]:
    """Partitions of both sides in execution order, paired by role."""
    rb, ra = (mb.roles if mb else []), (ma.roles if ma else [])
    before = mb.summary.partitions if mb else []
    after = ma.summary.partitions if ma else []
    out: list[PartitionPair] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=rb, b=ra, autojunk=False).get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out.append(PartitionPair(rb[i], "same role", before[i], after[j]))
            continue
        out.extend(PartitionPair(rb[i], "removed", before[i], None) for i in range(i1, i2))
        out.extend(PartitionPair(ra[j], "added", None, after[j]) for j in range(j1, j2))
    return out


def _by_key(before: dict[str, int], after: dict[str, int]) -> dict[str, Change[int]]:
    return {k: Change(before.get(k, 0), after.get(k, 0)) for k in sorted({*before, *after})}


def _directions(
    counts: tuple[dict[str, int], dict[str, int]], sizes: tuple[dict[str, int], dict[str, int]]
) -> dict[str, CountsChange]:
    return {
        d: CountsChange(
            (counts[0].get(d, 0), sizes[0].get(d, 0)), (counts[1].get(d, 0), sizes[1].get(d, 0))
        )
        for d in sorted({*counts[0], *counts[1]})
    }


def diff_method(name: str, mb: MethodAnalysis | None, ma: MethodAnalysis | None) -> MethodDiff:
    sb = mb.summary if mb else None
    sa = ma.summary if ma else None
    nb = method_numbers(sb) if sb else {}
    na = method_numbers(sa) if sa else {}

    def field_of(s: MethodSummary | None, key: str) -> dict[str, int]:
        return dict(getattr(s, key)) if s else {}

    added, removed = _counter_diff(field_of(sb, "cpu_compute_ops"), field_of(sa, "cpu_compute_ops"))
    glue_added, glue_removed = _counter_diff(
        field_of(sb, "cpu_glue_ops"), field_of(sa, "cpu_glue_ops")
    )
    return MethodDiff(
        name=name,
        status="both" if sb and sa else ("removed" if sb else "added"),
        numbers={k: Change(nb.get(k), na.get(k)) for k in METRICS},
        delegate_calls=_by_key(field_of(sb, "delegate_calls"), field_of(sa, "delegate_calls")),
        cpu_compute_ops_added=added,
        cpu_compute_ops_removed=removed,
        cpu_glue_ops_added=glue_added,
        cpu_glue_ops_removed=glue_removed,
        crossings=_directions(
            (field_of(sb, "crossings"), field_of(sa, "crossings")),
            (field_of(sb, "crossing_bytes"), field_of(sa, "crossing_bytes")),
        ),
        handoffs=_directions(
            (field_of(sb, "handoffs"), field_of(sa, "handoffs")),
            (field_of(sb, "handoff_bytes"), field_of(sa, "handoff_bytes")),
        ),
        partitions=_pair_partitions(mb, ma),
    )


def _size_diff(before: SizeReport, after: SizeReport) -> SizeDiff:
    tb, ta = before.totals(), after.totals()

    def constant(t: dict[str, int]) -> int:
        return sum(v for k, v in t.items() if k in CONSTANT_KINDS)

    return SizeDiff(
        file_size=Change(before.file_size, after.file_size),
        constant_bytes=Change(constant(tb), constant(ta)),
        external_bytes=Change(
            sum(e.referenced_bytes for e in before.external),
            sum(e.referenced_bytes for e in after.external),
        ),
        by_kind=_by_key(tb, ta),
    )


def regressions(methods: list[MethodDiff]) -> list[Regression]:
    out = []
    for m in methods:
        if m.status != "both":
            continue
        for key in REGRESSION_KEYS:
            c = m.numbers[key]
            delta = c.delta
            if delta is not None and delta > 0 and c.before is not None and c.after is not None:
                out.append(Regression(m.name, key, c.before, c.after))
    return out


def diff_programs(before: ProgramAnalysis, after: ProgramAnalysis) -> ProgramDiff:
    """Everything `pte-adapter diff` reports."""
    names = list(dict.fromkeys([m.name for m in before.methods] + [m.name for m in after.methods]))
    methods = [diff_method(n, before.method(n), after.method(n)) for n in names]
    size_b, size_a = before.size(), after.size()
    return ProgramDiff(
        before=size_b.file,
        after=size_a.file,
        methods=methods,
        size=_size_diff(size_b, size_a),
        delegates_size=(size_b.delegate_totals(), size_a.delegate_totals()),
        regressions=regressions(methods),
        measured=measured_diff(
            before,
            after,
            {m.name: m.cpu_compute_ops_removed for m in methods if m.status == "both"},
        ),
    )
