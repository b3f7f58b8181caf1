"""Measured time as Model Explorer node data: the colour overlay.

The format is Model Explorer's own (`model_explorer/node_data_builder.py`): a JSON object keyed by
graph id, each value a `GraphNodeData` — `results` maps a node id to `{"value": number}`, and a
`gradient` colours nodes from the smallest value (stop 0) to the largest (stop 1). The UI's
"Add per-node data" button loads such a file, and `model-explorer model.pte --extensions=pte_adapter
--node_data_paths=model.nodedata.json` opens the model with it applied.

Values are medians over the runs (milliseconds, or cycles for an ETDump in cycles), on the node ids the plan drew (`render/plan/`):
every profiled instruction, and the decoded delegate operations, wherever they were drawn (inside
the partition's group, or in a graph of their own in a folded method), where the delegate's events
could be placed on them (XNNPACK). Model Explorer sums a group's children, so a
DelegateCall whose operations carry their own times gets only the part of the call outside them:
the group's sum is then the call's time, not twice it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

from pte_adapter.analysis.lowering_map import EtRecordAnalysis, GraphRuns, StepRun
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.plan.graph import MethodPlacement, ProgramPlan
from pte_adapter.render.plan.measured import inner_op_times

NAME: Final = "measured time (median {unit})"
# Pale yellow (cheap) to deep red (expensive): readable under the black labels of Model Explorer.
GRADIENT: Final = [
    {"stop": 0, "bgColor": "#fff7bc"},
    {"stop": 0.5, "bgColor": "#fd8d3c"},
    {"stop": 1, "bgColor": "#bd0026"},
]


def method_node_data(
    ma: MethodAnalysis, placement: MethodPlacement, unit: str = "ms"
) -> dict[str, dict[str, Any]]:
    """The overlay of one method, per graph id: its method graph, and any graph of its own that
    holds timed delegate operations (values in the profile's `unit`)."""
    inner = inner_op_times(ma, placement)
    ids, gid = ma.instruction_ids, placement.graph_id
    timed = [nid for (g, nid), (st, _) in inner.items() if st is not None and g == gid]
    per_graph: dict[str, dict[str, dict[str, float]]] = {gid: {}}
    times = ma.measured.instruction_times if ma.measured else {}
    outside = ma.measured.outside_ops if ma.measured else {}
    for index, t in times.items():
        # A call whose operations carry their own times in its group keeps only its time
        # outside them: Model Explorer sums a group's children.
        mapped = any(k.startswith(f"{ids[index]}.") for k in timed)
        value = outside.get(index, math.nan) if mapped else t.stats.median
        if not math.isnan(value):
            per_graph[gid][ids[index]] = {"value": round(value, 6)}
    for (g, nid), (st, _) in inner.items():
        if st is not None:
            per_graph.setdefault(g, {})[nid] = {"value": round(st.median, 6)}
    name = NAME.format(unit=unit)
    return {g: {"name": name, "results": r, "gradient": GRADIENT} for g, r in per_graph.items()}


def model_node_data(result: ProgramAnalysis, plan: ProgramPlan) -> dict[str, Any]:
    """Node data for every graph with measured times, keyed by graph id (a method's graph id is
    its name)."""
    out: dict[str, Any] = {}
    unit = result.profile_summary["unit"] if result.profile_summary else "ms"
    for ma in result.methods:
        if ma.measured is not None:
            out.update(method_node_data(ma, plan.methods[ma.name], unit))
    return out


def recorded_node_values(
    runs: GraphRuns,
    value: Callable[[StepRun], float | None],
    shown: Callable[[float], float] = lambda v: round(v, 6),
) -> dict[str, dict[str, float]]:
    """Node data results for a graph of the ETRecord: every node that ran gets `value` of its
    runtime step (the step's measured median; any other per-step figure, e.g. the numeric gap of
    the step's outputs, goes through the same function), as `shown` rounds it. A step's nodes
    share its value: the ETDump times steps, not the nodes inside a delegate call."""
    values = [value(step) for step in runs.steps]
    return {
        name: {"value": shown(v)}
        for name, step in runs.node_step.items()
        if (v := values[step]) is not None and not math.isnan(v)
    }


def etrecord_node_data(view: EtRecordAnalysis) -> dict[str, Any]:
    """Measured time on the ETRecord's graphs, keyed by graph id (its ETRecord entry), for the
    graphs whose nodes ran in the program it belongs to and whose steps were timed."""
    summary = view.program.profile_summary if view.program is not None else None
    if summary is None:
        return {}
    name = NAME.format(unit=summary["unit"])
    out: dict[str, Any] = {}
    for part, runs in view.runs.items():
        results = recorded_node_values(runs, lambda step: step.measured_median)
        if results:
            out[part] = {"name": name, "results": results, "gradient": GRADIENT}
    return out


def node_data_json(result: ProgramAnalysis, plan: ProgramPlan) -> str:
    return json.dumps(model_node_data(result, plan), indent=1)
