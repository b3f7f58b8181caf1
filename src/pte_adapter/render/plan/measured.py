"""Measured time (an ETDump) on the planned graphs, on the same node ids the plan drew:

- every profiled instruction node: median, min/max and share of the run;
- every partition (its group's attributes): median with p10/p90 and share of the run, and for a
  delegate what it logged about its own operators;
- the method (graph attributes, shown when nothing is selected): latency over the runs and the
  measured split between delegates, CPU compute, glue, control flow and runtime overhead;
- the decoded delegate operations, wherever they were drawn (inside the partition's group, or in
  a graph of their own in a method folded into blocks), where the delegate's events could be placed
  on them (XNNPACK: `delegates/xnnpack/profile_events.py`), and those fused into another's operator.

A corrupt or foreign ETDump adds one `measured profile problem` attribute to each method graph and
never stops the `.pte` from opening.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.plan.graph import Graph, MethodPlacement, Node
from pte_adapter.render.time_facts import SPLIT_LABELS, scale_text, time_format
from pte_adapter.wording import TimeFormat, plural

if TYPE_CHECKING:  # the profile's modules are imported when an ETDump is there
    from pte_adapter.analysis.profile.report_types import DriftJSON, PartitionTimes
    from pte_adapter.analysis.profile.stats import Stats  # the type of measured statistics

PROBLEM_KEY: Final = "measured profile problem"


def _partition_text(p: PartitionTimes, t: TimeFormat) -> str:
    return (
        f"median {t.value(p['median'])} (p10 {t.value(p['p10'])}, p90 {t.value(p['p90'])}), "
        f"{p['share']:.1%} of the run"
    )


def inner_op_times(
    ma: MethodAnalysis, placement: MethodPlacement
) -> dict[tuple[str, str], tuple[Stats | None, str]]:
    """(graph id, node id) -> (its time's statistics, "") for each decoded delegate operation with
    a time, and -> (None, node id of the operation it was fused into) for fused ones."""
    out: dict[tuple[str, str], tuple[Stats | None, str]] = {}
    if ma.measured is None:
        return out
    drawn_at: dict[int, dict[str, str]] = {}  # a view shared by a delegate's calls: made once
    for index, inner in ma.measured.inner.items():
        part = ma.partitions.partitions[index]
        where = placement.views.get((part.instructions[0], inner.graph.name))
        if where is None or len(where.node_ids) != len(inner.graph.nodes):
            continue
        drawn = drawn_at.get(id(where))
        if drawn is None:
            drawn = drawn_at[id(where)] = {
                op.id: where.node_ids[pos] for pos, op in enumerate(inner.graph.nodes)
            }
        for op, stats in inner.stats.items():
            out[(where.graph_id, drawn[op])] = (stats, "")
        for op, owner in inner.fused.items():
            out[(where.graph_id, drawn[op])] = (None, drawn[owner])
    return out


def _method_attrs(
    graph: Graph,
    ma: MethodAnalysis,
    etdump_name: str,
    t: TimeFormat,
    scale: str,
    placement: MethodPlacement,
) -> None:
    assert ma.measured is not None
    summary = ma.measured.summary
    nodes = {n.id: n for n in graph.nodes}
    ids = ma.instruction_ids
    for index, it in ma.measured.instruction_times.items():
        node = nodes.get(ids[index]) if 0 <= index < len(ids) else None
        if node is not None:
            node.attrs.update(
                {
                    "measured median": t.value(it.stats.median),
                    "measured min / max": t.pair(it.stats.min, it.stats.max),
                    "measured share of run": f"{it.share:.1%}",
                    "measured runs": f"{it.runs} runs, {it.calls} calls",
                }
            )
    groups = graph.group_attrs if graph.group_attrs is not None else {}
    for p in summary["partitions"]:
        attrs = {"measured time": _partition_text(p, t)}
        if p.get("delegate_operators"):
            attrs["measured inside the delegate"] = (
                f"{p['delegate_operators']} operators logged: compute "
                f"{t.value(p['inside_compute']['median'])}, convert/transpose/copy "
                f"{t.value(p['inside_glue']['median'])}, outside them "
                f"{t.value(p['outside_logged_ops']['median'])} (medians)"
            )
        index = p["index"]
        group = placement.groups[index] if 0 <= index < len(placement.groups) else p["name"]
        groups.setdefault(group, {}).update(attrs)
    lat, split = summary["latency"], summary["split"]
    groups.setdefault("", {}).update(
        {
            "measured profile": f"{etdump_name}, {summary['runs']} runs",
            "measured time scale": scale,
            "measured latency": (
                f"median {t.value(lat['median'])} (p10 {t.value(lat['p10'])}, "
                f"p90 {t.value(lat['p90'])}, min {t.value(lat['min'])}, max {t.value(lat['max'])})"
                + ("; over two regimes: see measured drift" if summary["drift"]["where"] else "")
            ),
            "measured split": ", ".join(
                f"{label} {split[k]['share']:.1%}"
                for k, label in SPLIT_LABELS.items()
                if k in split
            ),
            **drift_attrs(summary["drift"]),
        }
    )
    _partition_drift(groups, ma, placement, t)
    graph.group_attrs = groups


def drift_attrs(drift: DriftJSON) -> dict[str, str]:
    """The runs over time on the graph: the sentence, and the warm-up and onset apart."""
    out = {"measured drift": drift["text"]}
    if drift["warmup_runs"]:
        n = drift["warmup_runs"]
        out["measured warm-up"] = f"{plural(n, 'run')} left out of the drift's figures"
    if drift["onset_run"] is not None:
        out["measured drift onset"] = (
            f"run {drift['onset_run']} (0-based) of {drift['runs']}: {drift['change_pct']:+.1f} %"
        )
    return out


def _partition_drift(
    groups: dict[str, dict[str, str]], ma: MethodAnalysis, placement: MethodPlacement, t: TimeFormat
) -> None:
    """Each partition's time before the onset and from it, on its group."""
    assert ma.measured is not None
    drift = ma.measured.summary["drift"]
    where = drift["where"]
    if where is None:
        return
    drawn = {
        p.name: placement.groups[p.index] if p.index < len(placement.groups) else p.name
        for p in ma.partitions.partitions
    }
    for part in where["partitions"]:
        groups.setdefault(drawn.get(part["name"], part["name"]), {})["measured drift"] = (
            f"{t.value(part['before'])} -> {t.value(part['after'])} from run "
            f"{drift['onset_run']} ({part['change']:+.3f}; share {part['share_before']:.1%} -> "
            f"{part['share_after']:.1%})"
        )


def _inner_attrs(
    graphs: dict[str, Graph], ma: MethodAnalysis, placement: MethodPlacement, t: TimeFormat
) -> None:
    """Times on the decoded delegate operations, in whichever graph they were drawn."""
    nodes: dict[tuple[str, str], Node] = {
        (gid, n.id): n for gid, g in graphs.items() for n in g.nodes
    }
    for (gid, nid), (st, owner) in inner_op_times(ma, placement).items():
        node = nodes.get((gid, nid))
        if node is None:
            continue
        if st is not None:
            node.attrs.update(
                {
                    "measured median": t.value(st.median),
                    "measured min / max": t.pair(st.min, st.max),
                }
            )
        else:
            owner_node = nodes.get((gid, owner))
            label = owner_node.label if owner_node is not None else owner
            node.attrs.update({"measured": f"fused into {owner} ({label}) at run time"})


def add_measured(
    result: ProgramAnalysis, graphs: list[Graph], placements: dict[str, MethodPlacement]
) -> None:
    """Add the ETDump's measurements to the planned graphs; a bad ETDump becomes a graph
    attribute of each method graph."""
    by_id = {g.id: g for g in graphs}
    if result.profile_error is not None:
        for ma in result.methods:
            graph = by_id[placements[ma.name].graph_id]
            groups = graph.group_attrs if graph.group_attrs is not None else {}
            groups.setdefault("", {})[PROBLEM_KEY] = str(result.profile_error)
            graph.group_attrs = groups
        return
    if result.profile is None or result.profile_summary is None:
        return
    t, scale = time_format(result.profile_summary), scale_text(result.profile_summary)
    for ma in result.methods:
        if ma.measured is not None:
            placement = placements[ma.name]
            _method_attrs(
                by_id[placement.graph_id], ma, result.profile.etdump.name, t, scale, placement
            )
            _inner_attrs(by_id, ma, placement, t)
