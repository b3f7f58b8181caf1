"""A Model Explorer node-data overlay: estimated cycles per NPU operation as a colour gradient.

Made from the decoded operations' estimates (`OpNode.cost_cycles`) on the node ids the plan drew
them with, so it matches the graphs exactly. Load the file in Model Explorer's node data panel next
to the graph (`pte-adapter export model.pte -o g.json --npu-overlay overlay.json`).
"""

from __future__ import annotations

from model_explorer import node_data_builder as ndb

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.render.plan.graph import ProgramPlan

NAME = "estimated NPU cycles"
# Light to dark orange (the Ethos-U partition colour): slow operations stand out.
GRADIENT = (
    ndb.GradientItem(stop=0, bgColor="#fff5eb"),
    ndb.GradientItem(stop=1, bgColor="#d94801"),
)


def npu_overlay(result: ProgramAnalysis, plan: ProgramPlan) -> ndb.ModelNodeData:
    """Node data for every graph that has estimated NPU operations, in the plan's graph order."""
    per_graph: dict[str, dict[str, ndb.NodeDataResult]] = {}
    for ma in result.methods:
        views: dict[tuple[int, str], DelegateGraph] = {}
        for ins in ma.method.instructions:
            d = ins.delegate_index
            if d is not None and 0 <= d < len(ma.method.delegates):
                for v in ma.method.delegates[d].decoded.graphs:
                    views[(ins.index, v.name)] = v
        seen: set[int] = set()  # a delegate called more than once is drawn once, shared
        for key, where in plan.methods[ma.name].views.items():
            view = views.get(key)
            if view is None or id(where) in seen:
                continue
            seen.add(id(where))
            for op, nid in zip(view.nodes, where.node_ids, strict=True):
                if op.cost_cycles is not None:
                    results = per_graph.setdefault(where.graph_id, {})
                    results[nid] = ndb.NodeDataResult(value=op.cost_cycles)
    data = {
        g.id: ndb.GraphNodeData(results=per_graph[g.id], name=NAME, gradient=list(GRADIENT))
        for g in plan.graphs
        if g.id in per_graph
    }
    return ndb.ModelNodeData(graphsData=data)
