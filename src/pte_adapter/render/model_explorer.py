"""Model Explorer graphs from the plan (`render/plan/`): a thin builder, nothing decided here.

`program_graphs(result)` plans the program and turns every planned graph into Model Explorer's
`graph_builder` objects, field for field; `graphs_to_json` is what Model Explorer's own JSON loader
opens (`pte-adapter export`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from typing import Any, TypeVar

from model_explorer import graph_builder as gb

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.render.plan.graph import Colour, Graph, Node, NodeLink, Port
from pte_adapter.render.plan.program import program_plan

# Model Explorer's side panel (`expandable-info-text`, `parseUrlInfo`) draws an attribute value as a
# link when the whole value is a markdown link `[text](url)`, starts with `http://` or `https://`,
# or with one of Google's short-link prefixes (then `http://` is put in front).
_MARKDOWN_LINK = re.compile(r"^\[([^\]]+)\]\(([^)]+)\)$")
_LINK_PREFIXES = ("http://", "https://", "go/", "b/", "cl/", "cs/", "google3/")
# Put in front of such a value: nothing is shown, and the value no longer starts like a link.
ZERO_WIDTH_SPACE = "\u200b"


# Put in front of a label or a layer name that looks like a link: the graph itself draws labels
# and layer names with an ASCII-only font (a zero-width space would show as "?"), where a space
# shows as nothing.
LABEL_SPACE = " "
# The first component of a namespace that starts like a link ("https://x" splits into "https:",
# "", "x"; "go/x" into "go", "x").
_LINK_STEMS = frozenset(prefix.rstrip("/") for prefix in _LINK_PREFIXES)


def _looks_like_link(value: str) -> bool:
    return value.startswith(_LINK_PREFIXES) or (
        value[:1] == "[" and _MARKDOWN_LINK.match(value) is not None
    )


def inert_attribute(value: str) -> str:
    """The value as shown, but never drawn as a link: names and compile specs come from the file,
    and a file could otherwise put `[download the fixed model](https://...)` in the side panel."""
    # _looks_like_link, inlined: every attribute of a large program passes here.
    if value.startswith(_LINK_PREFIXES) or (
        value[:1] == "[" and _MARKDOWN_LINK.match(value) is not None
    ):
        return ZERO_WIDTH_SPACE + value
    return value


def inert_label(label: str) -> str:
    """A node's label (an operator's name, from the file), shown in the same panel as its
    attributes and drawn on the graph: never a link there (issue 44: a CPU kernel named
    `https://...` was one)."""
    return LABEL_SPACE + label if _looks_like_link(label) else label


def inert_namespace(namespace: str) -> str:
    """A node's namespace (its layers, "/"-separated) as shown, with no part drawn as a link: the
    panel shows the whole namespace and each layer's name. A layer name cannot hold "/", so only
    one starting with "[" can be a markdown link; the whole namespace starts like a link only when
    its first layer is "https:", "go" and the like. Those layers get a space in front, the same in
    every namespace they are part of, so the layer stays one layer."""
    if "[" not in namespace and namespace.partition("/")[0] not in _LINK_STEMS:
        return namespace
    parts = namespace.split("/")
    for i, part in enumerate(parts):
        if part.startswith("[") or (i == 0 and part in _LINK_STEMS):
            parts[i] = LABEL_SPACE + part
    return "/".join(parts)


_T = TypeVar("_T")


def positional(cls: type[_T], names: tuple[str, ...]) -> Callable[..., _T]:
    """`cls` itself when its first fields are `names`, in that order: a positional call then sets
    what the keywords would, at less than half the cost (Python 3.11 matches every keyword by
    name, and the builder makes one object per node, edge, port and new attribute). Otherwise
    (a Model Explorer that reordered them) a function that passes them as keywords."""
    if tuple(f.name for f in fields(cls))[: len(names)] == names:  # type: ignore[arg-type]
        return cls

    def by_keyword(*args: Any) -> _T:
        return cls(**dict(zip(names, args, strict=True)))

    return by_keyword


# The fields of Model Explorer's node objects in its declaration order (0.1.34): the builder makes
# them by position in this order, and explorer/served.py writes their dicts in it.
NODE_FIELDS = (
    "id",
    "label",
    "namespace",
    "subgraphIds",
    "attrs",
    "incomingEdges",
    "outputsMetadata",
    "inputsMetadata",
    "style",
    "config",
)
EDGE_FIELDS = ("sourceNodeId", "sourceNodeOutputId", "targetNodeInputId")
PAIR_FIELDS = ("key", "value")
PORT_FIELDS = ("id", "attrs")

_GraphNode = positional(gb.GraphNode, NODE_FIELDS)
_IncomingEdge = positional(gb.IncomingEdge, EDGE_FIELDS)
_KeyValue = positional(gb.KeyValue, PAIR_FIELDS)
_MetadataItem = positional(gb.MetadataItem, PORT_FIELDS)


class _Builder:
    """Builds Model Explorer objects, sharing every one that repeats within a conversion.

    What Model Explorer's server keeps between requests (explorer/cache.py) is these objects, and
    every full collection of Python's cycle collector walks each of them, as does the interpreter's
    exit: a key/value pair, a port's metadata or a colour that recurs (`dtype: float32` on
    thousands of ports) is made once and shared, and a node without subgraphs, edges or inputs
    shares one empty list. The graphs are read-only once built (Model Explorer only serialises
    them, with `dataclasses.asdict`, which copies), so sharing changes nothing a reader sees."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], gb.KeyValue] = {}
        self._ports: dict[tuple[object, ...], gb.MetadataItem] = {}
        self._styles: dict[Colour, gb.GraphNodeStyle] = {}
        self._namespaces: dict[str, str] = {}
        self._labels: dict[str, str] = {}
        self._empty: list[Any] = []

    def _new_pair(self, item: tuple[str, str | NodeLink]) -> gb.KeyValue:
        key, value = item
        if isinstance(value, NodeLink):  # never shared: rare, and its list is its own
            return gb.KeyValue(
                key=key, value=gb.NodeIdsNodeAttributeValue(nodeIds=list(value.node_ids))
            )
        kv = self._pairs[item] = _KeyValue(key, inert_attribute(value))  # type: ignore[index]
        return kv

    def pairs(self, attrs: dict[str, str] | dict[str, str | NodeLink]) -> list[gb.KeyValue]:
        """The shared pair of each attribute, in order (the items' own tuples are the keys: most pairs
        are made once, and a node has about ten)."""
        if not attrs:
            return self._empty
        known = self._pairs
        out = []
        for item in attrs.items():
            kv = known.get(item)  # type: ignore[arg-type]
            out.append(kv if kv is not None else self._new_pair(item))
        return out

    def ports(self, ports: list[Port]) -> list[gb.MetadataItem]:
        if not ports:
            return self._empty
        out = []
        for p in ports:
            shape = (p.id, *p.attrs.items())
            item = self._ports.get(shape)
            if item is None:
                item = self._ports[shape] = _MetadataItem(p.id, self.pairs(p.attrs))
            out.append(item)
        return out

    def style(self, colours: Colour) -> gb.GraphNodeStyle:
        style = self._styles.get(colours)
        if style is None:
            style = self._styles[colours] = gb.GraphNodeStyle(
                backgroundColor=colours[0], borderColor=colours[1], hoveredBorderColor=colours[1]
            )
        return style

    def namespace(self, namespace: str) -> str:
        shown = self._namespaces.get(namespace)
        if shown is None:
            shown = self._namespaces[namespace] = inert_namespace(namespace)
        return shown

    def node(self, n: Node) -> gb.GraphNode:
        # The shared things looked up here, each method called only for a new one: a call per
        # lookup would cost more than the lookup, on every node.
        namespace = self._namespaces.get(n.namespace)
        if namespace is None:
            namespace = self.namespace(n.namespace)
        label = self._labels.get(n.label)
        if label is None:
            label = self._labels[n.label] = inert_label(n.label)
        style = None
        if n.colour is not None:
            style = self._styles.get(n.colour)
            if style is None:
                style = self.style(n.colour)
        empty = self._empty
        return _GraphNode(
            n.id,
            label,
            namespace,
            list(n.subgraphs) if n.subgraphs else empty,
            self.pairs(n.attrs) if n.attrs else empty,
            [_IncomingEdge(e.source, e.source_output, e.target_input) for e in n.edges]
            if n.edges
            else empty,
            self.ports(n.outputs) if n.outputs else empty,
            self.ports(n.inputs) if n.inputs else empty,
            style,
            gb.GraphNodeConfig(pinToGroupTop=True) if n.pinned else None,
        )

    def graph(self, g: Graph) -> gb.Graph:
        graph = gb.Graph(id=g.id, nodes=[self.node(n) for n in g.nodes])
        graph.groupNodeAttributes = (
            {
                # inert_attribute only where it could change a value (thousands of groups).
                self.namespace(group): {
                    k: inert_attribute(v) if v[:1] == "[" or v.startswith(_LINK_PREFIXES) else v
                    for k, v in attrs.items()
                }
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


def build_graphs(graphs: Iterable[Graph]) -> list[gb.Graph]:
    """Model Explorer graphs of planned ones, sharing what repeats across all of them."""
    builder = _Builder()
    return [builder.graph(g) for g in graphs]


def program_graphs(result: ProgramAnalysis) -> list[gb.Graph]:
    """Every graph of the program, as Model Explorer takes them from an adapter."""
    return build_graphs(program_plan(result).graphs)


def graphs_to_json(graphs: Iterable[gb.Graph], label: str = "program") -> dict[str, Any]:
    """A graph collection as JSON: what Model Explorer's built-in JSON loader opens.

    The loader accepts `{"label": ..., "graphs": [...]}` (a GraphCollection), not the
    `{"graphs": [...]}` that adapters return to the server.
    """
    return {"label": label, "graphs": [asdict(g) for g in graphs]}
