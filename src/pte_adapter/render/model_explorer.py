"""Model Explorer graphs from the plan (`render/plan/`): a thin builder, nothing decided here.

`program_graphs(result)` plans the program and turns every planned graph into Model Explorer's
`graph_builder` objects, field for field; `graphs_to_json` is what Model Explorer's own JSON loader
opens (`pte-adapter export`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from model_explorer import graph_builder as gb

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.render.plan.graph import Colour, Graph, Node, NodeLink, Port
from pte_adapter.render.plan.program import program_plan


def _style(colours: Colour) -> gb.GraphNodeStyle:
    return gb.GraphNodeStyle(
        backgroundColor=colours[0], borderColor=colours[1], hoveredBorderColor=colours[1]
    )


# Model Explorer's side panel (`expandable-info-text`, `parseUrlInfo`) draws an attribute value as a
# link when the whole value is a markdown link `[text](url)`, starts with `http://` or `https://`,
# or with one of Google's short-link prefixes (then `http://` is put in front).
_MARKDOWN_LINK = re.compile(r"^\[([^\]]+)\]\(([^)]+)\)$")
_LINK_PREFIXES = ("http://", "https://", "go/", "b/", "cl/", "cs/", "google3/")
# Put in front of such a value: nothing is shown, and the value no longer starts like a link.
ZERO_WIDTH_SPACE = "\u200b"


def inert_attribute(value: str) -> str:
    """The value as shown, but never drawn as a link: names and compile specs come from the file,
    and a file could otherwise put `[download the fixed model](https://...)` in the side panel."""
    if value.startswith(_LINK_PREFIXES) or _MARKDOWN_LINK.match(value):
        return ZERO_WIDTH_SPACE + value
    return value


def _value(v: str | NodeLink) -> gb.NodeAttributeValue:
    if isinstance(v, NodeLink):
        return gb.NodeIdsNodeAttributeValue(nodeIds=list(v.node_ids))
    return inert_attribute(v)


def _ports(ports: list[Port]) -> list[gb.MetadataItem]:
    return [
        gb.MetadataItem(
            id=p.id,
            attrs=[gb.KeyValue(key=k, value=inert_attribute(v)) for k, v in p.attrs.items()],
        )
        for p in ports
    ]


def build_node(n: Node) -> gb.GraphNode:
    return gb.GraphNode(
        id=n.id,
        label=n.label,
        namespace=n.namespace,
        subgraphIds=list(n.subgraphs),
        attrs=[gb.KeyValue(key=k, value=_value(v)) for k, v in n.attrs.items()],
        incomingEdges=[
            gb.IncomingEdge(
                sourceNodeId=e.source,
                sourceNodeOutputId=e.source_output,
                targetNodeInputId=e.target_input,
            )
            for e in n.edges
        ],
        outputsMetadata=_ports(n.outputs),
        inputsMetadata=_ports(n.inputs),
        style=_style(n.colour) if n.colour is not None else None,
        config=gb.GraphNodeConfig(pinToGroupTop=True) if n.pinned else None,
    )


def build_graph(g: Graph) -> gb.Graph:
    graph = gb.Graph(id=g.id, nodes=[build_node(n) for n in g.nodes])
    graph.groupNodeAttributes = (
        {
            group: {k: inert_attribute(v) for k, v in attrs.items()}
            for group, attrs in g.group_attrs.items()
        }
        if g.group_attrs is not None
        else None
    )
    if g.group_styles is not None:
        graph.groupNodeConfigs = [
            gb.GroupNodeConfig(
                namespaceRegex=s.namespace_regex,
                backgroundColor=s.colour[0],
                borderColor=s.colour[1],
                textColor=s.colour[1],
            )
            for s in g.group_styles
        ]
    if g.keep_single_child_layers is not None:
        graph.layoutConfigs = gb.LayoutConfigs(
            keepLayersWithASingleChild=g.keep_single_child_layers
        )
    return graph


def program_graphs(result: ProgramAnalysis) -> list[gb.Graph]:
    """Every graph of the program, as Model Explorer takes them from an adapter."""
    return [build_graph(g) for g in program_plan(result).graphs]


def graphs_to_json(graphs: Iterable[gb.Graph], label: str = "program") -> dict[str, Any]:
    """A graph collection as JSON: what Model Explorer's built-in JSON loader opens.

    The loader accepts `{"label": ..., "graphs": [...]}` (a GraphCollection), not the
    `{"graphs": [...]}` that adapters return to the server.
    """
    return {"label": label, "graphs": [asdict(g) for g in graphs]}
