"""A Model Explorer node-data overlay: estimated cycles per NPU operation as a colour gradient.

Built from the exported graph JSON itself (every node carrying an `est_cycles` attribute, keyed
by its graph and node id), so it matches whatever the renderer produced. Load the file in Model
Explorer's node data panel next to the graph (`pte-adapter export model.pte -o g.json
--npu-overlay overlay.json`).
"""

from __future__ import annotations

from typing import Any

from model_explorer import node_data_builder as ndb

NAME = "estimated NPU cycles"
# Light to dark orange (the Ethos-U partition colour): slow operations stand out.
GRADIENT = (
    ndb.GradientItem(stop=0, bgColor="#fff5eb"),
    ndb.GradientItem(stop=1, bgColor="#d94801"),
)


def npu_overlay(graphs_json: dict[str, Any]) -> ndb.ModelNodeData:
    """Node data for every graph that has estimated NPU operations."""
    data: dict[str, ndb.GraphNodeData] = {}
    for graph in graphs_json.get("graphs", []):
        results: dict[str, ndb.NodeDataResult] = {}
        for node in graph.get("nodes", []):
            for attr in node.get("attrs", []):
                if attr.get("key") == "est_cycles" and str(attr.get("value", "")).isdigit():
                    results[node["id"]] = ndb.NodeDataResult(value=int(attr["value"]))
        if results:
            data[graph["id"]] = ndb.GraphNodeData(
                results=results, name=NAME, gradient=list(GRADIENT)
            )
    return ndb.ModelNodeData(graphsData=data)
