"""What a fix would buy: for each CPU island with a compute kernel, the fix the reasons point to
and the partitioning, boundary traffic and NPU time predicted if its kernels ran on the
neighbouring delegate; and the same with every fixable island fixed at once.

The fix (`fix`, stable in `summary --json`), from the island's reasons (`why.py`):
- `remove_check`: supported; a partitioner check kept it off (the partitioner's report says so);
- `quantize`: computes in floating point on an INT-only spec, on values never quantized;
- `quantize_or_remove_check`: either of the two; the `.pte` cannot tell which;
- `other_target`: the pinned rules accept it on another target of the backend (Ethos-U55 → U85);
- `replace_operator`: no lowering for this spec (or a rank or dtype it cannot take): the layer
  must be written with operators it lowers;
- `unknown`: nothing in the file says what would let the partitioner take it;
- `mixed`: the island's kernels need different fixes (each is said).

The partitioning after: the island's instructions (glue included) join the delegate partitions
around it, and consecutive partitions of one backend that only absorbed islands separated become
one, as the partitioner's fusion of adjacent supported nodes makes them (the instructions are in
a topological order, so a contiguous run is a valid partition). Crossings are recounted with the
one definition of `partitions.py`. NPU time after: the merged partitions' own estimates plus the
island's kernels priced by the backend's `price_operators` hook; a kernel it cannot price is
named and the total is then a lower bound. A backend without a cost model gets the partitioning
only; CPU time removed comes only from a measurement (an ETDump).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.partitions import MethodPartitions, Partition, kernel_names
from pte_adapter.analysis.source import PartitionSource
from pte_adapter.analysis.what_if_merge import (
    MethodFlow,
    crossings_removed,
    kept_on_cpu,
    merge_plan,
)
from pte_adapter.analysis.why import Reason
from pte_adapter.backends import backend_info
from pte_adapter.delegates import hooks
from pte_adapter.delegates.hooks import FUSED, OperatorPrice
from pte_adapter.operator_names import target_base
from pte_adapter.program.cached import cached
from pte_adapter.program.delegate_graph import DelegateEstimate
from pte_adapter.program.model import (
    KERNEL,
    Method,
)
from pte_adapter.wording import plural

_FIX_OF_REASON = {
    "additional_check": "remove_check",
    "supported": "quantize_or_remove_check",
    "not_quantized_or_check": "quantize_or_remove_check",
    "not_quantized": "quantize",
    "u55": "replace_operator",  # "other_target" when another target accepts it
    "not_listed": "replace_operator",
    "rank": "replace_operator",
    "int64": "replace_operator",
    "dtype": "replace_operator",  # Vulkan: a dtype its registry does not take
    "check": "unknown",
    "unknown": "unknown",
}
# Fixes an export setting alone makes (quantize the layer, drop a partitioner check): what
# `check --max-fixable-islands` counts.
EASY_FIXES = frozenset({"remove_check", "quantize", "quantize_or_remove_check"})
FIXES = (
    "remove_check",
    "quantize",
    "quantize_or_remove_check",
    "other_target",
    "replace_operator",
    "unknown",
    "mixed",
)


@dataclass
class WhatIf:
    """One scenario: one island fixed (`partition` its index), or every fixable one (None)."""

    partition: int | None
    islands: list[int]  # the islands whose kernels would run on the neighbouring delegate
    fix: str
    text: str
    groups: list[list[int]]  # partitions (and islands) that become one partition, each a group
    npu_partitions_after: int
    delegate_calls_removed: int
    crossings_removed: int
    boundary_bytes_removed: int
    glue_kernels_removed: int
    npu_cycles_before: int | None = None
    npu_cycles_after: int | None = None
    npu_cycles_after_as_compiler: int | None = None
    compiler: str = ""  # whose prices `npu_cycles_after_as_compiler` follows ("Vela")
    npu_time_after_us: float | None = None
    island_cycles: int | None = None  # the island's kernels priced on the NPU
    # The layout work at the boundaries the merge makes internal (NCHW for the caller, NHWC
    # inside), which the merged partition would not do.
    boundary_cycles_removed: int | None = None
    not_priced: list[str] = field(default_factory=list)  # "aten.avg_pool3d: why"
    # How a compute kernel was priced: "aten.avg_pool3d as CONV 1x1 64->64".
    priced_as: list[str] = field(default_factory=list)
    lower_bound: bool = False  # some kernel could not be priced
    cpu_time_removed_us: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def merges(self) -> list[int]:
        return sorted({i for g in self.groups for i in g})


# Islands (with a compute kernel) a method may have and still get a scenario each; past this many
# each island gets its fix only (`IslandFix`), and the scenario of all of them fixed at once is
# still predicted. A long method has a thousand islands; a scenario costs a few of its neighbours'
# partitions and crossings.
MAX_ISLAND_SCENARIOS = 2_000


@dataclass(frozen=True)
class IslandFix:
    """An island's fix without its scenario (a method past `MAX_ISLAND_SCENARIOS`)."""

    partition: int
    fix: str
    text: str
    merges: bool  # a delegate partition lies beside it


@dataclass
class MethodWhatIf:
    islands: list[WhatIf]
    all: WhatIf | None  # every island with a fix (not `unknown`) fixed at once
    # Past MAX_ISLAND_SCENARIOS islands: no scenario each (`islands` is empty), only each fix.
    summarised: list[IslandFix] = field(default_factory=list)

    @cached
    def by_partition(self) -> dict[int | None, WhatIf]:
        """Each island's scenario by the island's partition index (one scenario per island): a
        view asks once per partition, and a long method has a thousand islands."""
        return {s.partition: s for s in self.islands}

    @cached
    def summarised_by_partition(self) -> dict[int, IslandFix]:
        return {f.partition: f for f in self.summarised}

    @cached
    def summarised_fixes(self) -> dict[str, int]:
        """How many of the summarised islands need each fix, the most needed first."""
        counts: dict[str, int] = {}
        for f in self.summarised:
            counts[f.fix] = counts.get(f.fix, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _kernel_fix(reasons: list[Reason]) -> tuple[str, Reason | None]:
    """(fix, the reason it follows) for one kernel from its reasons (several partitioners: the
    first)."""
    if not reasons:
        return "unknown", None
    r = reasons[0]
    fix = _FIX_OF_REASON.get(r.kind, "unknown")
    if r.accepted_on:
        fix = "other_target"
    return fix, r


def _fix_text(fix: str, subject: str, layer: str, reason: Reason | None = None) -> str:
    # Only the sentence asked for is formatted (a table of all six cost six per island).
    name = f"{subject} ({layer})" if layer else subject
    if fix == "remove_check":
        return f"{name} is supported: remove the partitioner check that refused it"
    if fix == "quantize":
        return f"quantize {name} (it computes in floating point on an INT-only target)"
    if fix == "quantize_or_remove_check":
        return (
            f"{name} computes in floating point between its dequantize and quantize: quantize it, "
            "or remove the partitioner check that refused it (the .pte cannot tell which)"
        )
    if fix == "other_target":
        return (
            f"{name} is refused on {reason.refused_on} only: {reason.accepted_on} takes it"
            if reason is not None
            else f"{name} is refused on this target only: another target of its backend takes it"
        )
    if fix == "replace_operator":
        return f"{name} has no lowering for this target: write the layer with operators it lowers"
    if fix == "unknown":
        return f"{name}: nothing in the file says what would let the partitioner take it"
    return f"{name}: {fix}"


def _island_fix(
    method: Method,
    island: Partition,
    by_instruction: dict[int, list[Reason]],
    source: PartitionSource | None,
    kernels: list[str],
) -> tuple[str, str]:
    """(fix, its sentence) of one island (`kernels`: each instruction's kernel operator)."""
    instructions = method.instructions
    kernel = KERNEL
    glue = island.glue_ops
    compute = [  # the island has sorted its kernels into glue and compute already
        i for i in island.instructions if instructions[i].kind is kernel and kernels[i] not in glue
    ]
    per_kernel = [(i, *_kernel_fix(by_instruction.get(i, []))) for i in compute]
    fixes = list(dict.fromkeys(f for _, f, _ in per_kernel))
    layer = source.layer if source is not None else ""
    subjects = ", ".join(
        dict.fromkeys(target_base(k) for k in dict.fromkeys(kernels[i] for i in compute))
    )
    if len(fixes) == 1:
        return fixes[0], _fix_text(fixes[0], subjects, layer, per_kernel[0][2])
    by_fix: dict[str, list[str]] = {}
    for i, f, _ in per_kernel:
        names = by_fix.setdefault(f, [])
        if (name := target_base(kernels[i])) not in names:
            names.append(name)
    reason_of = {f: r for _, f, r in reversed(per_kernel)}  # each fix's first reason
    parts = "; ".join(
        _fix_text(f, ", ".join(names), "", reason_of[f]) for f, names in by_fix.items()
    )
    return "mixed", f"its kernels need different fixes: {parts}"


def _prices(
    method: Method, parts: MethodPartitions, group: list[int], costs: _Costs
) -> list[OperatorPrice]:
    """The group's absorbed islands' kernels, priced by the group's backend (each island once
    per method: every scenario that absorbs it joins it to the same partition)."""
    delegates = [parts.partitions[i] for i in group if not parts.partitions[i].is_cpu]
    if not delegates:
        return []
    first = delegates[0]
    record = backend_info(first.backend)
    out: list[OperatorPrice] = []
    for k in group:
        if not parts.partitions[k].is_cpu:
            continue
        if k not in costs.prices:
            instructions = parts.partitions[k].instructions
            priced = None
            if record.price_operators is not None and first.delegate_index is not None:
                delegate = method.delegates[first.delegate_index]
                # None: the hook failed (a problem on the delegate): priced as without a model
                priced = hooks.price_operators(record, method, instructions, delegate)
            costs.prices[k] = (
                priced
                if priced is not None
                else [
                    OperatorPrice(i, target_base(method.kernel_operator(i)), (), None, "no model")
                    for i in instructions
                    if method.instructions[i].kind is KERNEL
                ]
            )
        out.extend(costs.prices[k])
    return out


def predict(
    method: Method,
    parts: MethodPartitions,
    islands: list[int],
    fix: str,
    text: str,
    partition: int | None,
    flow: MethodFlow,
    costs: _Costs,
) -> WhatIf:
    """The partitioning and NPU time if the given islands' kernels ran on their neighbours."""
    merged, stranded = merge_plan(parts, islands)
    before_calls = len(parts.delegate_partitions)
    after_calls = before_calls - sum(
        sum(not parts.partitions[i].is_cpu for i in g) - 1 for g in merged
    )
    kept = {i for g in merged for i in kept_on_cpu(method, parts, g, flow)}
    fewer_crossings, bytes_removed = crossings_removed(method, parts, merged, kept, flow)
    absorbed_glue = sum(
        sum(parts.partitions[i].glue_ops.values()) for i in islands if i not in stranded
    )
    glue = absorbed_glue - len(kept)
    out = WhatIf(
        partition=partition,
        islands=islands,
        fix=fix,
        text=text,
        groups=merged,
        npu_partitions_after=after_calls,
        delegate_calls_removed=before_calls - after_calls,
        crossings_removed=fewer_crossings,
        boundary_bytes_removed=bytes_removed,
        glue_kernels_removed=glue,
    )
    if stranded:
        out.notes.append(
            "nothing to merge with: "
            + ", ".join(parts.partitions[i].name for i in stranded)
            + " has no delegate partition beside it"
        )
    if _dynamic(method, parts, islands, flow):
        out.notes.append("dynamic shapes in the island: priced at their upper bounds")
    _price_scenario(method, parts, merged, out, costs)
    return out


def _dynamic(method: Method, parts: MethodPartitions, islands: list[int], flow: MethodFlow) -> bool:
    """Whether a tensor an island's kernels read or write has a dynamic shape."""
    if not flow.dynamic:
        return False
    return any(
        a in flow.dynamic
        for k in islands
        for i in parts.partitions[k].instructions
        for a in method.instructions[i].args
    )


def _estimate(method: Method, p: Partition) -> DelegateEstimate | None:
    d = p.delegate_index
    if d is None or not 0 <= d < len(method.delegates):
        return None
    return method.delegates[d].decoded.estimate


def _boundary_saved(
    method: Method, parts: MethodPartitions, groups: list[list[int]]
) -> tuple[int, int]:
    """(cycles, cycles as the compiler prices them) of the layout work at the boundaries a merge makes
    internal: every merged partition's input side but the first's, output side but the last's
    (`DelegateEstimate.boundary_*`)."""
    saved = saved_compiler = 0
    for g in groups:
        members = [parts.partitions[i] for i in g if not parts.partitions[i].is_cpu]
        for k, p in enumerate(members):
            est = _estimate(method, p)
            if est is None:
                continue
            if k > 0:
                saved += est.boundary_in_cycles
                saved_compiler += est.boundary_in_cycles_as_compiler
            if k < len(members) - 1:
                saved += est.boundary_out_cycles
                saved_compiler += est.boundary_out_cycles_as_compiler
    return saved, saved_compiler


@dataclass
class _Costs:
    """The method's partitions' estimates, summed once for every scenario."""

    backends: list[str]  # every delegate backend of the method
    estimated: int  # delegate partitions with an estimate
    accelerator: str
    clock_hz: float
    cycles: int
    cycles_as_compiler: int
    compiler: str  # whose prices `cycles_as_compiler` follows ("Vela"), "" when none
    # Island index -> its kernels priced by the partition it joins (filled as scenarios ask).
    prices: dict[int, list[OperatorPrice]] = field(default_factory=dict)

    @classmethod
    def of(cls, method: Method, parts: MethodPartitions) -> _Costs:
        rows = [e for p in parts.delegate_partitions if (e := _estimate(method, p)) is not None]
        return cls(
            sorted({p.backend for p in parts.delegate_partitions}),
            len(rows),
            rows[0].target.accelerator if rows else "",
            rows[0].target.clock_hz if rows else 0.0,
            sum(e.cycles for e in rows),
            sum(
                e.cycles_as_compiler if e.cycles_as_compiler is not None else e.cycles for e in rows
            ),
            ", ".join(dict.fromkeys(e.compiler for e in rows if e.compiler)),
        )


def _price_scenario(
    method: Method, parts: MethodPartitions, groups: list[list[int]], out: WhatIf, costs: _Costs
) -> None:
    if not costs.estimated:
        if costs.backends:
            out.notes.append(
                f"no cost model for {', '.join(costs.backends)}: time only from an ETDump"
            )
        return
    if out.fix == "other_target":
        out.notes.append(
            "NPU time on the other target not predicted: this file holds command streams for "
            f"{costs.accelerator} only"
        )
        return
    out.npu_cycles_before = costs.cycles
    island_cycles = 0
    for g in groups:
        for price in _prices(method, parts, g, costs):
            if price.cycles is None:
                out.not_priced.append(f"{price.operator}: {price.why_not}")
            else:
                island_cycles += price.cycles
                if price.operations == (FUSED,):
                    out.priced_as.append(f"{price.operator} fused into the operation before it")
                elif price.operations:
                    out.priced_as.append(f"{price.operator} as {' + '.join(price.operations)}")
    saved, saved_compiler = _boundary_saved(method, parts, groups)
    out.island_cycles = island_cycles
    out.boundary_cycles_removed = saved
    out.lower_bound = bool(out.not_priced)
    out.npu_cycles_after = costs.cycles + island_cycles - saved
    out.npu_cycles_after_as_compiler = costs.cycles_as_compiler + island_cycles - saved_compiler
    out.compiler = costs.compiler
    out.npu_time_after_us = round(out.npu_cycles_after / costs.clock_hz * 1e6, 1)
    if costs.estimated < len(parts.delegate_partitions):
        out.notes.append("some partitions have no estimate: the NPU time covers the others")


def method_what_if(
    method: Method,
    parts: MethodPartitions,
    reasons: list[Reason],
    sources: list[PartitionSource],
) -> MethodWhatIf | None:
    """A what-if per CPU island that holds a compute kernel, and all fixable ones at once; None
    for a method without delegate partitions or without such an island."""
    if not parts.delegate_partitions:
        return None
    by_instruction: dict[int, list[Reason]] = {}
    for r in reasons:
        by_instruction.setdefault(r.instruction, []).append(r)
    fixes: list[IslandFix] = []
    kernels = kernel_names(method)
    for p in parts.cpu_islands:
        if not p.compute_ops:
            continue
        source = sources[p.index] if p.index < len(sources) else None
        fix, text = _island_fix(method, p, by_instruction, source, kernels)
        fixes.append(IslandFix(p.index, fix, text, bool(merge_plan(parts, [p.index])[0])))
    if not fixes:
        return None
    flow = MethodFlow(method, parts, kernels)
    costs = _Costs.of(method, parts)
    summarised = fixes if len(fixes) > MAX_ISLAND_SCENARIOS else []
    scenarios = [
        predict(method, parts, [f.partition], f.fix, f.text, f.partition, flow, costs)
        for f in fixes
        if not summarised
    ]
    fixable = [f for f in fixes if f.fix != "unknown"]
    every: WhatIf | None = None
    if fixable:
        kinds = list(dict.fromkeys(f.fix for f in fixable))
        fix = kinds[0] if len(kinds) == 1 else "mixed"
        n = len(fixable)
        text = f"{plural(n, 'island')} fixed ({', '.join(kinds)})"
        islands = [f.partition for f in fixable]
        every = predict(method, parts, islands, fix, text, None, flow, costs)
    return MethodWhatIf(scenarios, every, summarised)


def fixable_islands(what_if: MethodWhatIf | None, names: list[str]) -> list[str]:
    """`CPU island 2: <fix sentence>` for each island an export setting alone would fix
    (`names`: the method's partition names by index)."""
    if what_if is None:
        return []
    found = [
        (s.partition, s.text)
        for s in what_if.islands
        if s.fix in EASY_FIXES and s.partition is not None and s.groups
    ]
    found += [(f.partition, f.text) for f in what_if.summarised if f.fix in EASY_FIXES and f.merges]
    return [f"{names[partition]}: {text}" for partition, text in found]


def add_measured_time(
    what_if: MethodWhatIf, parts: MethodPartitions, times_us: dict[int, float]
) -> None:
    """CPU time removed per scenario: the measured median time of the absorbed islands'
    instructions (`times_us`: instruction -> microseconds)."""
    for s in [*what_if.islands, *([what_if.all] if what_if.all else [])]:
        merged = {i for g in s.groups for i in g}
        absorbed = [i for i in s.islands if i in merged]
        instrs = [k for i in absorbed for k in parts.partitions[i].instructions]
        if instrs and all(k in times_us for k in instrs):
            s.cpu_time_removed_us = round(sum(times_us[k] for k in instrs), 3)
