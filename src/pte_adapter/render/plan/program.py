"""The plan of a whole program: one graph per method, then the graphs its nodes open."""

from __future__ import annotations

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.render.plan.graph import Colour, Graph, MethodPlacement, ProgramPlan
from pte_adapter.render.plan.inputs import show_inputs
from pte_adapter.render.plan.instructions import OUTPUTS_ID
from pte_adapter.render.plan.measured import add_measured
from pte_adapter.render.plan.method import method_plan
from pte_adapter.render.plan.numerics import add_numerics
from pte_adapter.render.plan.views import view_graph


def program_plan(result: ProgramAnalysis) -> ProgramPlan:
    """One graph per method (first, so Model Explorer lists them first), then the graphs its nodes
    link to. Every delegate view of a small method is drawn inside its method graph, so a method
    graph always has more nodes than any other graph: Model Explorer opens the graph with the most
    nodes, and that is the method's partitions. Measured time, when an ETDump was given, and the
    numeric gap, when one was computed, are on the same nodes."""
    graphs: list[Graph] = []
    extra: list[Graph] = []
    placements: dict[str, MethodPlacement] = {}
    for ma in result.methods:
        graph, separate, placement = method_plan(result, ma, ma.name)
        graphs.append(graph)
        extra.extend(separate)
        placements[ma.name] = placement
    plan = ProgramPlan(graphs + extra, placements)
    for graph in plan.graphs:
        # A method's constant outputs are attributes of their own (`output<k>`).
        show_inputs(graph, keep_edgeless=frozenset({OUTPUTS_ID}))
    add_measured(result, plan.graphs, placements)
    add_numerics(result, plan.graphs, placements)
    return plan


def views_plan(views: list[DelegateGraph], colours: Colour) -> list[Graph]:
    """Views that stand alone (a bare `.tosa` file's blocks), one graph each."""
    ids = {v.name: v.name for v in views}
    graphs = [view_graph(v, v.name, ids, colours)[0] for v in views]
    for graph in graphs:
        show_inputs(graph)
    return graphs


__all__ = ["program_plan", "views_plan"]
