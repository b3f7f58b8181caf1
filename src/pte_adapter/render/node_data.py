"""Measured time as Model Explorer node data: the colour overlay.

The format is Model Explorer's own (`model_explorer/node_data_builder.py`): a JSON object keyed by
graph id, each value a `GraphNodeData` — `results` maps a node id to `{"value": number}`, and a
`gradient` colours nodes from the smallest value (stop 0) to the largest (stop 1). The UI's
"Add per-node data" button loads such a file, and `model-explorer model.pte --extensions=pte_adapter
--node_data_paths=model.nodedata.json` opens the model with it applied.

Values are median milliseconds over the runs, on the instruction nodes of each method graph and on
each partition's pinned group node, so a partition shows its total time and every operator its
own. Node ids are the renderer's (`render/model_explorer.py`), so the overlay lands on the graph the
adapter draws.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from pte_adapter.profile.join import MethodProfile, ProgramProfile, partition_time
from pte_adapter.profile.stats import Stats
from pte_adapter.profile.summary import NS_PER_MS, delegate_inner_times, instruction_times
from pte_adapter.render.model_explorer import delegate_graph_id, node_id

# Pale yellow (cheap) to deep red (expensive): readable under the black labels of Model Explorer.
GRADIENT: Final = [
    {"stop": 0, "bgColor": "#fff7bc"},
    {"stop": 0.5, "bgColor": "#fd8d3c"},
    {"stop": 1, "bgColor": "#bd0026"},
]


def partition_node_id(partition_index: int) -> str:
    """Id of the node pinned to the top of a partition's group (see the renderer)."""
    return f"p{partition_index}"


def delegate_node_id(op_id: str) -> str:
    """Id of a decoded delegate operation's node in its view (see the renderer's delegate_graph)."""
    return f"op_{op_id}"


def method_node_data(mp: MethodProfile, tick_ns: float = 1.0) -> dict[str, Any]:
    results: dict[str, dict[str, float]] = {}
    for index, t in instruction_times(mp, tick_ns).items():
        if not math.isnan(t.stats.median):
            results[node_id(index)] = {"value": round(t.stats.median, 6)}
    scale = tick_ns / NS_PER_MS
    for part in mp.partitions.partitions:
        median = Stats.of([partition_time(mp, r, part.index) * scale for r in mp.runs]).median
        if not math.isnan(median):
            results[partition_node_id(part.index)] = {"value": round(median, 6)}
    return {
        "name": "measured time (median ms)",
        "results": results,
        "gradient": GRADIENT,
    }


def delegate_node_data(mp: MethodProfile, tick_ns: float = 1.0) -> dict[str, dict[str, Any]]:
    """Node data for the decoded delegate views whose nodes the delegate's events were placed on
    (XNNPACK: one event per runtime operator), keyed by the view's graph id."""
    out: dict[str, dict[str, Any]] = {}
    for part in mp.partitions.delegate_partitions:
        inner = delegate_inner_times(mp, part, tick_ns)
        if inner is None:
            continue
        graph, times, _ = inner
        results = {
            delegate_node_id(node): {"value": round(Stats.of(v).median, 6)}
            for node, v in sorted(times.items())
        }
        out[delegate_graph_id(mp.method.name, part.name, graph.name)] = {
            "name": "measured time (median ms)",
            "results": results,
            "gradient": GRADIENT,
        }
    return out


def model_node_data(profile: ProgramProfile, tick_ns: float = 1.0) -> dict[str, Any]:
    """Node data for every method graph that has runs, keyed by graph id (the method name), and
    for the delegate views whose nodes got times."""
    out: dict[str, Any] = {}
    for mp in profile.methods:
        if mp.runs:
            out[mp.method.name] = method_node_data(mp, tick_ns)
            out.update(delegate_node_data(mp, tick_ns))
    return out


def node_data_json(profile: ProgramProfile, tick_ns: float = 1.0) -> str:
    return json.dumps(model_node_data(profile, tick_ns), indent=1)
