"""The shapes of `pte-adapter profile`'s numbers (its JSON, docs/profiling.md), as TypedDicts: what
`summary.py` builds and the profile text, plot and Model Explorer attributes read. Times in ms."""

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


class MethodTimes(TypedDict):
    name: str
    runs: int
    latency_ms: list[float]
    latency: StatsJSON
    split: dict[str, SharedStats]  # delegates, cpu_compute, glue, control, runtime
    partitions: list[PartitionTimes]
    top_cpu_ops: list[TopCpuOp]


class LoadEvent(TypedDict):
    name: str
    ms: float


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
    tick_ns: float
    methods: list[MethodTimes]
    load: list[LoadEvent]
    unplaced: list[UnplacedEvent]
    problems: list[str]
