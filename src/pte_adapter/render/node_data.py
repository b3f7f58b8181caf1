"""Measured time as Model Explorer node data: the colour overlay.

The format is Model Explorer's own (`model_explorer/node_data_builder.py`): a JSON object keyed by
graph id, each value a `GraphNodeData` — `results` maps a node id to `{"value": number}`, and a
`gradient` colours nodes from the smallest value (stop 0) to the largest (stop 1). The UI's
"Add per-node data" button loads such a file, and `model-explorer model.pte --extensions=pte_adapter
--node_data_paths=model.nodedata.json` opens the model with it applied.

Values are median milliseconds over the runs, on the renderer's node ids (`render/model_explorer.py`):
every profiled instruction, and the decoded operations drawn inside a delegate's group where the
delegate's events could be placed on them (XNNPACK). Model Explorer sums a group's children, so a
DelegateCall whose operations carry their own times gets only the part of the call outside them:
the group's sum is then the call's time, not twice it.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from pte_adapter.analysis.profile.stats import Stats
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.model_explorer import view_op_node_ids

# Pale yellow (cheap) to deep red (expensive): readable under the black labels of Model Explorer.
GRADIENT: Final = [
    {"stop": 0, "bgColor": "#fff7bc"},
    {"stop": 0.5, "bgColor": "#fd8d3c"},
    {"stop": 1, "bgColor": "#bd0026"},
]


def inner_op_times(ma: MethodAnalysis) -> dict[str, tuple[list[float], str]]:
    """Rendered node id -> (ms per run, "") for each decoded delegate operation with a time, and
    -> ([], rendered id of the operation it was fused into) for fused ones."""
    out: dict[str, tuple[list[float], str]] = {}
    if ma.measured is None:
        return out
    for index, inner in ma.measured.inner.items():
        part = ma.partitions.partitions[index]
        view = inner.graph
        ids = view_op_node_ids(ma, part.instructions[0], view.name)
        if ids is None or len(ids) != len(view.nodes):
            continue
        rendered = {op.id: ids[pos] for pos, op in enumerate(view.nodes)}
        for op, values in inner.times.items():
            out[rendered[op]] = (values, "")
        for op, owner in inner.fused.items():
            out[rendered[op]] = ([], rendered[owner])
    return out


def method_node_data(ma: MethodAnalysis) -> dict[str, Any]:
    """The overlay of one method graph (empty results when the method did not run)."""
    inner = inner_op_times(ma)
    ids = ma.instruction_ids
    timed = [k for k, (v, _) in inner.items() if v]
    results: dict[str, dict[str, float]] = {}
    times = ma.measured.instruction_times if ma.measured else {}
    outside = ma.measured.outside_ops if ma.measured else {}
    for index, t in times.items():
        # A call whose operations carry their own times keeps only its time outside them.
        mapped = any(k.startswith(f"{ids[index]}.") for k in timed)
        value = outside.get(index, math.nan) if mapped else t.stats.median
        if not math.isnan(value):
            results[ids[index]] = {"value": round(value, 6)}
    for nid, (values, _) in inner.items():
        if values:
            results[nid] = {"value": round(Stats.of(values).median, 6)}
    return {
        "name": "measured time (median ms)",
        "results": results,
        "gradient": GRADIENT,
    }


def model_node_data(result: ProgramAnalysis) -> dict[str, Any]:
    """Node data for every method graph that has runs, keyed by graph id (the method name)."""
    return {ma.name: method_node_data(ma) for ma in result.methods if ma.measured is not None}


def node_data_json(result: ProgramAnalysis) -> str:
    return json.dumps(model_node_data(result), indent=1)
