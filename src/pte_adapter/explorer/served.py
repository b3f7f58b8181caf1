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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, cast, overload

from model_explorer import graph_builder as gb


def served(graphs: list[gb.Graph]) -> list[gb.Graph]:
    """Shallow copies of `graphs` whose `nodes` serialise by `ServedNodes` (see the module)."""
    return [
        dataclasses.replace(g, nodes=cast(list[gb.GraphNode], ServedNodes(g.nodes))) for g in graphs
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
        return [as_plain(node, made) for node in self._nodes]


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
