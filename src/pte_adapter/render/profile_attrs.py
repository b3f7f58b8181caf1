"""Measured time as attributes on the Model Explorer graphs of a `.pte` with an ETDump beside it.

The renderer draws the program; this adds what the ETDump measured, on the same node ids:
- every profiled instruction node: median, min/max and share of the run;
- every partition (its group's attributes): median with p10/p90 and share of the run, and for a
  delegate what it logged about its own operators;
- the method (graph attributes, shown when nothing is selected): latency over the runs and the
  measured split between delegates, CPU compute, glue, control flow and runtime overhead;
- the decoded delegate operations drawn inside a partition, where the delegate's events could be
  placed on them (XNNPACK: `delegates/xnnpack/profile_events.py`), and those fused into another's
  operator.

A missing ETDump adds nothing; a corrupt or foreign one adds one `measured profile problem`
attribute to each method graph and never stops the `.pte` from opening.
"""

from __future__ import annotations

from typing import Any, Final

from model_explorer import graph_builder as gb

from pte_adapter.analysis.profile.stats import Stats
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.node_data import inner_op_times
from pte_adapter.render.profile_report import SPLIT_LABELS

PROBLEM_KEY: Final = "measured profile problem"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f} ms"


def _add(node: gb.GraphNode, attrs: dict[str, str]) -> None:
    node.attrs.extend(gb.KeyValue(key=k, value=v) for k, v in attrs.items())


def _partition_text(p: dict[str, Any]) -> str:
    return (
        f"median {_ms(p['median'])} (p10 {_ms(p['p10'])}, p90 {_ms(p['p90'])}), "
        f"{p['share']:.1%} of the run"
    )


def annotate_method(graph: gb.Graph, ma: MethodAnalysis, etdump_name: str) -> None:
    if ma.measured is None:
        return
    summary = ma.measured.summary
    nodes = {n.id: n for n in graph.nodes}
    ids = ma.instruction_ids
    for index, t in ma.measured.instruction_times.items():
        node = nodes.get(ids[index]) if 0 <= index < len(ids) else None
        if node is None:
            continue
        _add(
            node,
            {
                "measured median": _ms(t.stats.median),
                "measured min / max": f"{t.stats.min:.3f} / {t.stats.max:.3f} ms",
                "measured share of run": f"{t.share:.1%}",
                "measured runs": f"{t.runs} runs, {t.calls} calls",
            },
        )
    groups = graph.groupNodeAttributes if graph.groupNodeAttributes is not None else {}
    # A partition's group: its own name, or "<block>/<name>" in a method folded into blocks.
    in_block = {k.split("/")[1]: k for k in groups if k.count("/") == 1}
    for p in summary["partitions"]:
        attrs = {"measured time": _partition_text(p)}
        if p.get("delegate_operators"):
            attrs["measured inside the delegate"] = (
                f"{p['delegate_operators']} operators logged: compute "
                f"{_ms(p['inside_compute']['median'])}, convert/transpose/copy "
                f"{_ms(p['inside_glue']['median'])}, outside them "
                f"{_ms(p['outside_logged_ops']['median'])} (medians)"
            )
        groups.setdefault(in_block.get(p["name"], p["name"]), {}).update(attrs)
    lat = summary["latency"]
    split = summary["split"]
    groups.setdefault("", {}).update(
        {
            "measured profile": f"{etdump_name}, {summary['runs']} runs",
            "measured latency": (
                f"median {_ms(lat['median'])} (p10 {_ms(lat['p10'])}, p90 {_ms(lat['p90'])}, "
                f"min {_ms(lat['min'])}, max {_ms(lat['max'])})"
            ),
            "measured split": ", ".join(
                f"{label} {split[k]['share']:.1%}"
                for k, label in SPLIT_LABELS.items()
                if k in split
            ),
        }
    )
    graph.groupNodeAttributes = groups


def annotate_inner_ops(graph: gb.Graph, ma: MethodAnalysis) -> None:
    """Times on the decoded delegate operations drawn inside their partition's group."""
    nodes = {n.id: n for n in graph.nodes}
    for nid, (values, owner) in inner_op_times(ma).items():
        node = nodes.get(nid)
        if node is None:
            continue
        if values:
            st = Stats.of(values)
            _add(
                node,
                {
                    "measured median": _ms(st.median),
                    "measured min / max": f"{st.min:.3f} / {st.max:.3f} ms",
                },
            )
        else:
            label = nodes[owner].label if owner in nodes else owner
            _add(node, {"measured": f"fused into {owner} ({label}) at run time"})


def annotate_graphs(graphs: list[gb.Graph], result: ProgramAnalysis) -> None:
    """Add the ETDump's measurements to the method graphs; a bad ETDump becomes a graph attribute."""
    by_name = {m.name: m for m in result.methods}
    if result.profile_error is not None:
        for g in graphs:
            if g.id in by_name:
                groups = g.groupNodeAttributes if g.groupNodeAttributes is not None else {}
                groups.setdefault("", {})[PROBLEM_KEY] = str(result.profile_error)
                g.groupNodeAttributes = groups
        return
    if result.profile is None:
        return
    for g in graphs:
        ma = by_name.get(g.id)
        if ma is not None and ma.measured is not None:
            annotate_method(g, ma, result.profile.etdump.name)
            annotate_inner_ops(g, ma)
