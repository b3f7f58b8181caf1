"""The plan's data: graphs of nodes with ports, edges, attributes and colours, and where things were
drawn. Plain dataclasses that mirror what Model Explorer's `graph_builder` takes, nothing more."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Colour = tuple[str, str]  # (background, border)


@dataclass(frozen=True)
class NodeLink:
    """An attribute whose value is other nodes of the graph (Model Explorer links to each)."""

    node_ids: tuple[str, ...]


AttrValue = str | NodeLink


@dataclass
class Port:
    """One input or output of a node, with what to show about the tensor on it. Ports showing one
    tensor share one `attrs` dict (a tensor is on its writer's output and every reader's input):
    never change it in place; a port that shows something else gets a dict of its own."""

    id: str
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class Edge:
    """An edge into a node: from `source`'s output `source_output` to this node's input."""

    source: str
    source_output: str = "0"
    target_input: str = "0"


@dataclass
class Node:
    id: str
    label: str
    namespace: str = ""  # "/"-separated groups, outermost first
    colour: Colour | None = None
    attrs: dict[str, AttrValue] = field(default_factory=dict)  # in display order
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)  # incoming
    subgraphs: list[str] = field(default_factory=list)  # ids of graphs it opens
    pinned: bool = False  # drawn at the top of its group


@dataclass
class GroupStyle:
    namespace_regex: str
    colour: Colour


@dataclass
class Graph:
    id: str
    nodes: list[Node] = field(default_factory=list)
    group_attrs: dict[str, dict[str, str]] | None = None  # "" = the graph itself
    group_styles: list[GroupStyle] | None = None
    keep_single_child_layers: bool | None = None


@dataclass
class ViewPlacement:
    """Where a decoded delegate view's operations were drawn."""

    graph_id: str
    node_ids: list[str]  # one per operation, in the view's order


@dataclass
class MethodPlacement:
    """Where one method was drawn: its graph, its instructions, its delegates' operations."""

    graph_id: str
    instructions: list[str]  # node id of each instruction
    views: dict[tuple[int, str], ViewPlacement] = field(default_factory=dict)  # (ins, view name)
    # Each partition's group path ("<block group>/<partition group>" when folded into a block).
    groups: list[str] = field(default_factory=list)
    blocks: dict[str, str] = field(default_factory=dict)  # block name -> its group name
    runs: dict[str, str] = field(default_factory=dict)  # run of blocks name -> its group name


@dataclass
class ProgramPlan:
    graphs: list[Graph]  # method graphs first (Model Explorer lists them first), then the others
    methods: dict[str, MethodPlacement]


_REGEX_SPECIAL = re.compile(r"[\\.^$*+?{}\[\]|()]")


def regex_escape(s: str) -> str:
    # A substitution, not `str.translate`: a name has a few specials among many plain characters,
    # and translate looks every character up in its table (twice as slow on partition names).
    return _REGEX_SPECIAL.sub(_backslashed, s)


def _backslashed(m: re.Match[str]) -> str:
    return "\\" + m.group()


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())
