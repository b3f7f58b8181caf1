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

from pte_adapter.analysis.profile.join import MethodProfile, ProgramProfile
from pte_adapter.analysis.profile.stats import Stats
from pte_adapter.analysis.profile.summary import NS_PER_MS, delegate_inner_times, instruction_times
from pte_adapter.render.model_explorer import instruction_node_ids, view_op_node_ids

# Pale yellow (cheap) to deep red (expensive): readable under the black labels of Model Explorer.
GRADIENT: Final = [
    {"stop": 0, "bgColor": "#fff7bc"},
    {"stop": 0.5, "bgColor": "#fd8d3c"},
    {"stop": 1, "bgColor": "#bd0026"},
]


def inner_op_times(mp: MethodProfile, tick_ns: float = 1.0) -> dict[str, tuple[list[float], str]]:
    """Rendered node id -> (ms per run, "") for each decoded delegate operation with a time, and
    -> ([], rendered id of the operation it was fused into) for fused ones."""
    out: dict[str, tuple[list[float], str]] = {}
    for part in mp.partitions.delegate_partitions:
        inner = delegate_inner_times(mp, part, tick_ns)
        if inner is None or not part.instructions:
            continue
        view, times, fused = inner
        ids = view_op_node_ids(mp.method, mp.partitions, part.instructions[0], view.name)
        if ids is None or len(ids) != len(view.nodes):
            continue
        rendered = {op.id: ids[pos] for pos, op in enumerate(view.nodes)}
        for op, values in times.items():
            out[rendered[op]] = (values, "")
        for op, owner in fused.items():
            out[rendered[op]] = ([], rendered[owner])
    return out


def _outside_ops(mp: MethodProfile, index: int, scale: float) -> float:
    """Median over runs of a DelegateCall's time outside the operations its delegate logged."""
    values = [
        (run.instruction_time.get(index, 0) - sum(e.duration for e in events)) * scale
        for run in mp.runs
        if (events := run.delegate_events.get(index))
    ]
    return Stats.of(values).median


def method_node_data(mp: MethodProfile, tick_ns: float = 1.0) -> dict[str, Any]:
    scale = tick_ns / NS_PER_MS
    inner = inner_op_times(mp, tick_ns)
    ids = instruction_node_ids(mp.method, mp.partitions)
    timed = [k for k, (v, _) in inner.items() if v]
    results: dict[str, dict[str, float]] = {}
    for index, t in instruction_times(mp, tick_ns).items():
        # A call whose operations carry their own times keeps only its time outside them.
        mapped = any(k.startswith(f"{ids[index]}.") for k in timed)
        value = _outside_ops(mp, index, scale) if mapped else t.stats.median
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


def model_node_data(profile: ProgramProfile, tick_ns: float = 1.0) -> dict[str, Any]:
    """Node data for every method graph that has runs, keyed by graph id (the method name)."""
    return {mp.method.name: method_node_data(mp, tick_ns) for mp in profile.methods if mp.runs}


def node_data_json(profile: ProgramProfile, tick_ns: float = 1.0) -> str:
    return json.dumps(model_node_data(profile, tick_ns), indent=1)
