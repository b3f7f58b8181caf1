"""The shapes of `pte-adapter profile`'s numbers (its JSON, docs/profiling.md), as TypedDicts: what
`summary.py` builds and the profile text, plot and Model Explorer attributes read. Every time is in
the summary's `unit`: "ms", or "cycles" for an ETDump in cycles (then `ms_per_unit` turns one into
time, when the clock is known; `latency_ms` and a load event's `ms` are always milliseconds, empty
or None when no clock was given)."""

from __future__ import annotations

from typing import TypedDict


class StatsJSON(TypedDict):
    """Run-to-run statistics (`Stats.as_dict`); None where there were no runs."""

    n: int
    median: float | None
    p10: float | None
    p90: float | None
    min: float | None
    max: float | None
    mean: float | None


class SharedStats(StatsJSON):
    share: float  # median over runs of the part's share of the run


class TopDelegateOp(StatsJSON):
    name: str  # the delegate's own event name ("Convolution (NHWC, QC8) IGEMM #1")


class InnerNodes(TypedDict):
    """A delegate's logged operations placed on its decoded graph."""

    graph: str
    matched: int
    of: int
    fused: dict[str, str]  # node id -> the node whose operator ran it
    times: dict[str, StatsJSON]


class _PartitionTimes(SharedStats):
    index: int
    name: str
    backend: str
    instructions: list[int]


class PartitionTimes(_PartitionTimes, total=False):
    """One partition's time; the delegate keys only for a delegate partition."""

    delegate_events: int
    delegate_operators: int
    inside_compute: StatsJSON
    inside_glue: StatsJSON
    outside_logged_ops: StatsJSON
    top_delegate_ops: list[TopDelegateOp]
    inner_nodes: InnerNodes


class TopCpuOp(SharedStats):
    instruction: int
    op: str
    partition: str


class DriftPart(TypedDict):
    """One part's time before the onset and from it (drift_where.py), in the unit."""

    kind: str  # latency | partition | split | operator
    name: str
    partition: str  # an operator's partition ("" for the others)
    before: float  # median over the runs before the onset (after the warm-up)
    after: float  # median over the runs from the onset on
    change: float  # after - before
    share_before: float  # median share of the run
    share_after: float


class DriftWhere(TypedDict):
    """Where the time went when the latency changed (drift_where.py)."""

    before_runs: list[int]  # [first, last] run of the regime before the onset
    after_runs: list[int]
    latency: DriftPart
    partitions: list[DriftPart]  # every partition, largest change first
    split: list[DriftPart]  # delegates, cpu_compute, glue, control, runtime
    operators: list[DriftPart]  # the operators whose time changed most


class DriftJSON(TypedDict):
    """Runs over time (drift.py). Every time is in `unit`: the `_ms` keys hold cycles in an
    ETDump in cycles (`unit` "cycles"), as every time of the profile does."""

    unit: str
    runs: int
    state: str  # steady | noisy | rose | fell | few_runs | one_run | identical | no_runs
    warmup_runs: int
    first_ms: float | None
    last_ms: float | None
    change_pct: float | None
    onset_run: int | None  # 0-based, as latency_runs
    shape: str | None  # with an onset: step | creep
    slope_ms_per_100_runs: float | None
    window: int  # runs each typical latency is the median of
    noise_ms: float | None  # run-to-run spread (a standard deviation for normal noise)
    threshold_ms: float | None  # the change a drift must exceed
    text: str
    where: DriftWhere | None  # with an onset: where the time went


class MethodTimes(TypedDict):
    name: str
    runs: int
    latency_ms: list[float]  # per run, in ms ([] for cycles without a clock)
    latency_runs: list[float]  # per run, in the unit
    latency: StatsJSON
    split: dict[str, SharedStats]  # delegates, cpu_compute, glue, control, runtime
    partitions: list[PartitionTimes]
    top_cpu_ops: list[TopCpuOp]
    drift: DriftJSON


class LoadEvent(TypedDict):
    name: str
    ms: float | None  # None for cycles without a clock
    time: float  # in the unit


class UnplacedEvent(TypedDict):
    run: int
    name: str
    chain: int
    instruction_id: int
    reason: str


class ProfileSummary(TypedDict):
    file: str
    etdump: str
    etdump_version: int
    tick_ns: float | None  # ns per tick; None for cycles without a clock
    time_scale: str  # what a tick counts: ns | us | ms | cycles
    clock_mhz: float | None  # the clock given with cycles
    unit: str  # the unit of every time below: ms | cycles
    ms_per_unit: float | None  # 1 for ms; 1 / (clock kHz) for cycles with a clock; else None
    methods: list[MethodTimes]
    load: list[LoadEvent]
    unplaced: list[UnplacedEvent]
    problems: list[str]
