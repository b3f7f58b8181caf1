"""The structure of what a method returns, from its `container_meta_type` pytree spec.

ExecuTorch flattens a method's inputs and outputs (lists, tuples, dicts of values) into plain value
lists and records the structure as torch's `treespec_dumps` JSON: `[protocol, node]`, each node
`{"type": "builtins.list" | "builtins.tuple" | "builtins.dict" | ... | null (a leaf),
"context": <JSON text: a dict's keys, else "null">, "children_spec": [node, ...]}`. A constant
method returning `[2, 3]` is two Int values and the spec of a two-item list. Only that JSON is
read here (no torch); a spec that is not that shape reads as None and the flat values are shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Deeper or larger specs are not structures anyone exports; they are read as no structure.
MAX_DEPTH = 32
MAX_NODES = 100_000


@dataclass(frozen=True)
class TreeSpec:
    """One node of a pytree spec: a leaf (`type` None) or a container of `children`."""

    type: str | None  # torch's serialized type name, e.g. "builtins.list"; None for a leaf
    children: tuple[TreeSpec, ...] = ()
    keys: tuple[str, ...] = ()  # a dict's keys (as text), one per child

    @property
    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.leaves for c in self.children)


class _Malformed(Exception):
    pass


def _keys(context: Any, n: int) -> tuple[str, ...]:
    """A dict's keys from its context (JSON text of the key list); other contexts have none."""
    if not isinstance(context, str):
        return ()
    try:
        keys = json.loads(context)
    except (ValueError, RecursionError):
        return ()
    if isinstance(keys, list) and len(keys) == n:
        return tuple(k if isinstance(k, str) else json.dumps(k) for k in keys)
    return ()


def _node(raw: Any, depth: int, budget: list[int]) -> TreeSpec:
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0 or not isinstance(raw, dict):
        raise _Malformed
    kind, children = raw.get("type"), raw.get("children_spec", [])
    if (kind is not None and not isinstance(kind, str)) or not isinstance(children, list):
        raise _Malformed
    if kind is None:
        if children:
            raise _Malformed
        return TreeSpec(None)
    nodes = tuple(_node(c, depth + 1, budget) for c in children)
    keys = _keys(raw.get("context"), len(nodes)) if "dict" in kind.lower() else ()
    return TreeSpec(kind, nodes, keys)


def parse_treespec(text: str) -> TreeSpec | None:
    """The spec in `text` (`treespec_dumps` JSON), or None when there is none or it is malformed."""
    if not text:
        return None
    try:
        raw = json.loads(text)
        if not (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], int)):
            return None
        return _node(raw[1], 0, [MAX_NODES])
    except (ValueError, RecursionError, _Malformed):
        return None
