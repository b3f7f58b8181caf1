"""The graphs as the adapter hands them to Model Explorer's server: the same JSON, made cheaper.

The server turns each graph into dicts with `dataclasses.asdict` and sends `json.dumps` of them
(`model_explorer.utils.convert_adapter_response`). `asdict` walks every object it is given and
makes a new dict for each dataclass it meets, however often the same object comes back: the
builder shares one key/value, one style, one port-metadata list among many nodes (issue 36), so on
a 48-layer program it visits 54 objects per node of which 20 are distinct, and it was a third of
a request's instructions (docs/benchmarks.md, issue 49).

`asdict` hands anything that is not a dataclass, list, tuple or dict to `copy.deepcopy`
(documented: "other objects are copied with copy.deepcopy()"). So each graph's `nodes` is handed
over as `ServedNodes`, a read-only sequence of the same nodes (iterating, indexing and `len` work
as on the list) whose `__deepcopy__` returns the nodes as dicts made once per distinct object:
the same keys in the same order, the same values, so `json.dumps` writes the same bytes
(tests/e2e/test_served_json.py checks it, and the golden outputs on every example, through Model
Explorer's own `convert_adapter_response`). The graphs the cache keeps are untouched; each request wraps them
anew. The price: a `copy.deepcopy` of the response gives the nodes as those dicts, not as
`GraphNode`s; Model Explorer (0.1.34: `utils.py`, `config.py`) only ever deep-copies them through
`asdict`.

Three more things make the same bytes cheaper (issue 49). On the 192-layer XNNPACK program they
take the server's `asdict` from 680 to 170 ms (CPU, medians):
- **The cycle collector is paused while a graph's node dicts are made** (680 → 380 ms). They are
  tens of thousands of new containers, none in a cycle, made while the kept graphs are alive,
  and each of the collector's runs walked them again.
- **A node's fields are spelled out** (`node_as_plain`) rather than looked up per object, for
  nodes built the way the builder builds them.
- **The group attributes** (`ServedGroups`) are copied a group's dict at a time, where `asdict`
  copies each string through `copy.deepcopy`. With the spelled-out nodes: 380 → 170 ms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast, overload

from model_explorer import graph_builder as gb

from pte_adapter import no_cycle_collection
from pte_adapter.render.model_explorer import EDGE_FIELDS, NODE_FIELDS, PAIR_FIELDS, PORT_FIELDS


def served(graphs: list[gb.Graph]) -> list[gb.Graph]:
    """Shallow copies of `graphs` whose `nodes` serialise by `ServedNodes` and whose group
    attributes by `ServedGroups` (see the module)."""
    return [
        dataclasses.replace(
            g,
            nodes=cast(list[gb.GraphNode], ServedNodes(g.nodes)),
            groupNodeAttributes=cast(gb.GroupNodeAttributes, ServedGroups(g.groupNodeAttributes))
            if type(g.groupNodeAttributes) is dict
            else g.groupNodeAttributes,
        )
        for g in graphs
    ]


class ServedNodes(Sequence[gb.GraphNode]):
    """A graph's nodes, read-only; `copy.deepcopy` (what `asdict` calls) gives them as dicts."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: list[gb.GraphNode]) -> None:
        self._nodes = nodes

    @overload
    def __getitem__(self, index: int) -> gb.GraphNode: ...

    @overload
    def __getitem__(self, index: slice) -> list[gb.GraphNode]: ...

    def __getitem__(self, index: int | slice) -> gb.GraphNode | list[gb.GraphNode]:
        return self._nodes[index]

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[gb.GraphNode]:
        return iter(self._nodes)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        made: dict[int, Any] = {}
        with no_cycle_collection():  # tens of thousands of new dicts, none in a cycle
            return [node_as_plain(node, made) for node in self._nodes]


class ServedGroups(Mapping[str, dict[str, str]]):
    """A graph's group attributes, read-only; `copy.deepcopy` gives them as new dicts. `asdict`
    would copy each of their thousands of strings by `copy.deepcopy`, one call each; here each
    group's dict is copied at once, its strings shared (they cannot change)."""

    __slots__ = ("_groups",)

    def __init__(self, groups: dict[str, dict[str, str]]) -> None:
        self._groups = groups

    def __getitem__(self, name: str) -> dict[str, str]:
        return self._groups[name]

    def __len__(self) -> int:
        return len(self._groups)

    def __iter__(self) -> Iterator[str]:
        return iter(self._groups)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        made: dict[int, Any] = {}
        return {
            name: dict(attrs) if _all_strings(attrs) else as_plain(attrs, made)
            for name, attrs in self._groups.items()
        }


def _all_strings(attrs: Any) -> bool:
    """A dict of strings to strings (what the builder makes; anything else is left to
    `as_plain`)."""
    return type(attrs) is dict and all(type(k) is str and type(v) is str for k, v in attrs.items())


# Field names per dataclass, in declaration order (what `asdict` writes, in that order).
_FIELDS: dict[type, tuple[str, ...]] = {}


def as_plain(obj: Any, made: dict[int, Any]) -> Any:
    """What `dataclasses.asdict` makes of `obj` (dataclasses and dicts as dicts, lists and tuples as
    such), each object made once and shared wherever it recurs (`made`, by id: every object stays
    alive in the graphs meanwhile). Strings, numbers, booleans and None are returned as they are
    (`deepcopy` returns them unchanged too)."""
    kind = type(obj)
    if kind is str or obj is None:  # most of what is handed over: tested first
        return obj
    got = made.get(id(obj))
    if got is not None:
        return got
    names = _FIELDS.get(kind)
    if names is None and dataclasses.is_dataclass(obj):
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(obj))
    if names is not None:
        got = {name: as_plain(getattr(obj, name), made) for name in names}
    elif kind is list or kind is tuple:
        got = kind(as_plain(v, made) for v in obj)
    elif kind is dict:
        got = {as_plain(k, made): as_plain(v, made) for k, v in obj.items()}
    elif kind is int or kind is float or kind is bool:
        return obj
    else:  # nothing the builder makes; as `asdict` would
        import copy

        return copy.deepcopy(obj)
    made[id(obj)] = got
    return got


# The fields of a node and of what it holds, in the order `node_as_plain` writes them (the
# builder's: render/model_explorer.py). A Model Explorer that declares them otherwise is served by
# `as_plain` alone, which reads the order from the classes.
_NODE_SHAPES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (gb.GraphNode, NODE_FIELDS),
    (gb.KeyValue, PAIR_FIELDS),
    (gb.IncomingEdge, EDGE_FIELDS),
    (gb.MetadataItem, PORT_FIELDS),
)
SPELLED_OUT = all(
    tuple(f.name for f in dataclasses.fields(kind)) == names for kind, names in _NODE_SHAPES
)


def node_as_plain(node: Any, made: dict[int, Any]) -> Any:
    """`as_plain` of one node, its fields spelled out: a node's dict is most of what the server
    makes, and `as_plain` finds each field's kind by a look-up and a call (a third of the
    serialisation's time went into that). Anything not made the way the builder makes it (a
    field of another type, a subclass) is left to `as_plain`, so the dicts are the same either
    way (tests/e2e/test_served_json.py)."""
    if not SPELLED_OUT or type(node) is not gb.GraphNode:
        return as_plain(node, made)
    ident, label, namespace = node.id, node.label, node.namespace
    if type(ident) is not str or type(label) is not str or type(namespace) is not str:
        return as_plain(node, made)
    return {
        "id": ident,
        "label": label,
        "namespace": namespace,
        "subgraphIds": as_plain(node.subgraphIds, made),
        "attrs": _shared(node.attrs, made, _pair),
        "incomingEdges": _edges(node.incomingEdges, made),
        "outputsMetadata": _shared(node.outputsMetadata, made, _port),
        "inputsMetadata": _shared(node.inputsMetadata, made, _port),
        "style": as_plain(node.style, made),
        "config": as_plain(node.config, made),
    }


def _pair(kv: Any, made: dict[int, Any]) -> Any:
    """A key/value's dict (most are shared among nodes: `_shared`)."""
    key = kv.key if type(kv) is gb.KeyValue else None
    if type(key) is not str:
        return as_plain(kv, made)
    value = kv.value
    return {"key": key, "value": value if type(value) is str else as_plain(value, made)}


def _shared(items: Any, made: dict[int, Any], plain: Callable[[Any, dict[int, Any]], Any]) -> Any:
    """A list of objects the builder shares among nodes, each made into its dict once (`made`,
    as `as_plain` keeps it); `plain` makes one."""
    if type(items) is not list:
        return as_plain(items, made)
    out = []
    for item in items:
        got = made.get(id(item))
        if got is None:
            got = made[id(item)] = plain(item, made)
        out.append(got)
    return out


def _edges(edges: Any, made: dict[int, Any]) -> Any:
    """A node's incoming edges (its own: never shared)."""
    if type(edges) is not list:
        return as_plain(edges, made)
    out = []
    for e in edges:
        if type(e) is gb.IncomingEdge:
            source, output, target = e.sourceNodeId, e.sourceNodeOutputId, e.targetNodeInputId
            if type(source) is str and type(output) is str and type(target) is str:
                out.append(
                    {
                        "sourceNodeId": source,
                        "sourceNodeOutputId": output,
                        "targetNodeInputId": target,
                    }
                )
                continue
        out.append(as_plain(e, made))
    return out


def _port(item: Any, made: dict[int, Any]) -> Any:
    """A port's metadata dict (an item is shared among ports alike: `_shared`)."""
    ident = item.id if type(item) is gb.MetadataItem else None
    if type(ident) is not str:
        return as_plain(item, made)
    return {"id": ident, "attrs": _shared(item.attrs, made, _pair)}
