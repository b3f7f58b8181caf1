"""The nodes that say what crosses a partition boundary, drawn on the edge between two partitions.

A boundary node sits outside every group, so it stays visible when the partitions are collapsed,
and its label says what crosses: "[1, 3, 224, 224] int8, 147.0 KiB", or "[1, 128, 768] float32 +1
more, 768.0 KiB" when several tensors take the same way (all of them are in its attributes, input
k and output k being tensor k). Inside a block or a run of blocks (a method of many partitions,
where there are thousands of them) the label is the bytes alone, "16.0 KiB": Model Explorer's
drawing time follows the characters it draws, and the tensors are one click away. Model
Explorer's own edge labels are a user setting, off by default, and its edge overlays are only
drawn between visible op nodes: neither shows on a collapsed partition. One node per pair of partitions, not per tensor, because every edge costs drawing time
(most of the time to the first screen of a large program goes into edges).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.partitions import Crossing, MethodPartitions, Partition
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.program.cached import cached
from pte_adapter.program.model import Method
from pte_adapter.render.plan.graph import Edge, Graph, MethodPlacement, Node, Port
from pte_adapter.render.plan.instructions import INPUTS_ID, OUTPUTS_ID, tensor_port
from pte_adapter.render.plan.views import Source
from pte_adapter.wording import bytes_short, bytes_text, shape_text

BOUNDARY_TENSOR_COLOUR = ("#ffffff", "#5d4037")  # a tensor crossing a partition boundary
# In a method of more than SMALL_METHOD partitions, a boundary tensor read more than
# NEAR_PARTITIONS partitions after it was written is drawn beside its reader rather than connected
# across the graph: long edges are most of Model Explorer's layout and drawing time on a large
# program (benchmarks/bench_browser.py), while in a small method they cost nothing and show skips
# such as an NPU-to-NPU handoff around a CPU island.
NEAR_PARTITIONS = 1
SMALL_METHOD = 16  # methods of at most this many partitions keep every boundary edge
METHOD_INPUT, METHOD_OUTPUT = "method input", "method output"  # sides of a boundary


def tensor_label(method: Method, value: int) -> str:
    """ "[1, 3, 224, 224] int8, 147.0 KiB": what a boundary edge carries (printable ASCII only:
    Model Explorer's canvas font has nothing else)."""
    t = method.tensor(value)
    if t is None:
        return f"%{value}"
    size = bytes_short(t.nbytes)
    return f"{shape_text(t.sizes)} {t.dtype}, {size}"


def _boundary_text(method: Method, c: Crossing, words: dict[int, str]) -> str:
    """ "%12 [1, 64] float32, 256 B": the crossing's tensor, worded once (`words`, by the
    crossing's id: each is on the partition it leaves and the one it enters)."""
    text = words.get(id(c))
    if text is None:
        t = method.tensor(c.value)
        what = f"{shape_text(t.sizes)} {t.dtype}" if t is not None else "?"
        text = words[id(c)] = f"%{c.value} {what}, {bytes_text(c.nbytes)}"
    return text


CrossingSides = tuple[dict[str, list[Crossing]], dict[str, list[Crossing]]]


def crossing_sides(parts: MethodPartitions) -> CrossingSides:
    """The method's crossings by the partition they enter and by the one they leave, in order."""
    into: dict[str, list[Crossing]] = {}
    out_of: dict[str, list[Crossing]] = {}
    for c in parts.crossings:
        into.setdefault(c.target, []).append(c)
        out_of.setdefault(c.source, []).append(c)
    return into, out_of


def boundary_facts(
    method: Method,
    parts: MethodPartitions,
    part: Partition,
    sides: CrossingSides | None = None,
    words: dict[int, str] | None = None,
) -> dict[str, str]:
    """The tensors crossing this partition's boundary, for its group attributes (`sides`: the
    method's `crossing_sides`, and `words` its crossings' words, made once for all its
    partitions)."""
    into, out_of = sides if sides is not None else crossing_sides(parts)
    words = {} if words is None else words
    name = part.name
    ins = [f"{_boundary_text(method, c, words)} from {c.source}" for c in into.get(name, [])]
    outs = [f"{_boundary_text(method, c, words)} to {c.target}" for c in out_of.get(name, [])]
    return {
        "incoming_tensors": "\n".join(ins) or "none",
        "outgoing_tensors": "\n".join(outs) or "none",
    }


@dataclass
class _Boundary:
    node: Node
    # tensors, in port order, each with its port's position (looked up per routed edge)
    values: dict[int | Source, int] = field(default_factory=dict)
    froms: dict[str, None] = field(default_factory=dict)  # where the tensors come from, in order
    # (value, from, to), in order
    crossings: dict[tuple[int, str, str], None] = field(default_factory=dict)
    sources: set[Source] = field(default_factory=set)  # the node outputs it has an edge from


@dataclass
class _Layout:
    """Where each partition sits: for the boundary rules. Sides are group names (a partition's
    group, "method input", "method output"); `text` names each side as the other views do."""

    node_partition: dict[str, str]
    part_order: dict[str, int]
    top_order: dict[str, int]  # position of each block and partition on its own
    cpu_sides: set[str]
    roles: dict[str, str]
    block_of: dict[str, str]  # partition group -> its block's group
    text: dict[str, str]  # group -> the partition's (or block's, or run's) own name
    run_of: dict[str, str]  # block group -> its run's group, for blocks in a run
    outer_order: dict[str, int]  # position of each top-level item (run, block, partition)

    @cached
    def block_names(self) -> set[str]:
        """The blocks' and runs' groups (asked once per routed edge)."""
        return set(self.block_of.values()) | set(self.run_of.values())

    @classmethod
    def of(cls, ma: MethodAnalysis, graph: Graph, placement: MethodPlacement) -> _Layout:
        parts, names = ma.partitions, placement.groups
        node_partition = {n.id: n.namespace.split("/")[0] for n in graph.nodes}
        node_partition[INPUTS_ID], node_partition[OUTPUTS_ID] = METHOD_INPUT, METHOD_OUTPUT
        part_order = {names[p.index]: p.index for p in parts.partitions}
        part_order[METHOD_INPUT], part_order[METHOD_OUTPUT] = -1, len(parts.partitions)
        cpu_sides = {names[p.index] for p in parts.partitions if p.is_cpu}
        cpu_sides |= {METHOD_INPUT, METHOD_OUTPUT}
        roles = dict(zip(names, ma.roles, strict=True))
        roles[METHOD_INPUT], roles[METHOD_OUTPUT] = INPUTS_ID, OUTPUTS_ID
        block_of = {names[i]: placement.blocks[b.name] for b in ma.blocks for i in b.partitions}
        text = {names[p.index]: p.name for p in parts.partitions}
        text.update({label: name for name, label in placement.blocks.items()})
        # Boundary node ids name a block by its own name, which stays when its contents change.
        roles.update({label: name for name, label in placement.blocks.items()})
        text.update({label: name for name, label in placement.runs.items()})
        roles.update({label: name for name, label in placement.runs.items()})
        run_of = {
            placement.blocks[ma.blocks[i].name]: placement.runs[run.name]
            for run in ma.block_runs
            for i in run.blocks
        }
        top_order: dict[str, int] = {}
        outer_order: dict[str, int] = {}
        for name in sorted(part_order, key=part_order.__getitem__):
            item = block_of.get(name, name)
            top_order.setdefault(item, len(top_order))
            outer_order.setdefault(run_of.get(item, item), len(outer_order))
        return cls(
            node_partition,
            part_order,
            top_order,
            cpu_sides,
            roles,
            block_of,
            text,
            run_of,
            outer_order,
        )

    def say(self, side: str) -> str:
        return self.text.get(side, side)


# One step of a crossing's way: the boundary node's key, its namespace, the order that measures
# how far the tensor goes (None: always an edge), and the two sides it stands between.
Hop = tuple[tuple[str, str], str, dict[str, int] | None, tuple[str, str]]


def _hops(lay: _Layout, source_part: str, target_part: str) -> list[Hop]:
    """The boundary nodes a crossing passes. Between two partitions of one block: one, inside that
    block. Between two blocks of one run: one, inside that run. Otherwise one node per pair of
    top-level items (runs, blocks, partitions on their own), at the top level; everything entering
    a block (or a run) from outside it shares one node: "into blocks.3". Into a block of a run from
    outside the run: through the run's node, then the block's, so no edge crosses more than one
    level of groups (an edge into the depths of a run is drawn long, and costs Model Explorer as
    much to draw as many short ones)."""
    source_block = lay.block_of.get(source_part, source_part)
    target_block = lay.block_of.get(target_part, target_part)
    run = lay.run_of.get(target_block)
    if source_block == target_block:
        ends = (source_part, target_part)
        return [(ends, source_block, lay.part_order, ends)]
    if run is not None and lay.run_of.get(source_block) == run:
        return [(("", target_block), run, lay.top_order, (source_block, target_block))]
    ends = (lay.run_of.get(source_block, source_block), run or target_block)
    key = ("", ends[1]) if ends[1] in lay.block_names else ends
    hops: list[Hop] = [(key, "", lay.outer_order, ends)]
    if run is not None:
        hops.append((("", target_block), run, None, (run, target_block)))
    return hops


def _boundary(lay: _Layout, key: tuple[str, str], namespace: str) -> _Boundary:
    source, target = key
    return _Boundary(
        Node(
            id=f"b.{lay.roles.get(source, source or 'into')}.{lay.roles.get(target, target)}",
            label="",
            namespace=namespace,
            colour=BOUNDARY_TENSOR_COLOUR,
        )
    )


def _route(
    method: Method,
    lay: _Layout,
    bounds: dict[tuple[str, str], _Boundary],
    node: Node,
    e: Edge,
    source_value: dict[Source, int],
    known: dict[int, dict[str, str]] | None,
) -> None:
    """Send one partition-crossing edge through its boundary node, or nodes (`_hops`; each made
    on first use; `known` as for `tensor_port`)."""
    source_part, target_part = lay.node_partition[e.source], lay.node_partition[node.id]
    src = (e.source, e.source_output)
    v = source_value.get(src)
    tensor: int | Source = v if v is not None else src
    for key, namespace, order, ends in _hops(lay, source_part, target_part):
        b = bounds.get(key)
        if b is None:
            b = bounds[key] = _boundary(lay, key, namespace)
        b.froms.setdefault(lay.say(ends[0]))
        if v is not None:
            b.crossings.setdefault((v, lay.say(source_part), lay.say(target_part)))
        if tensor not in b.values:
            b.values[tensor] = len(b.values)
            pos = str(len(b.values) - 1)
            attrs = tensor_port(method, 0, v, known).attrs if v is not None else {}
            b.node.inputs.append(Port(pos, attrs))
            b.node.outputs.append(Port(pos, attrs))
        pos = str(b.values[tensor])
        # A tensor read far downstream (an attention mask every layer reads) is shown beside each
        # distant reader without an edge across the whole graph: long edges make the layout slow
        # and the picture unreadable. Between blocks, the distance counts blocks (and lone
        # partitions); between runs, runs. From a run's node into its block's: always an edge.
        far = (
            order is not None
            and len(lay.part_order) - 2 > SMALL_METHOD  # the order holds method input/output too
            and order[ends[1]] - order[ends[0]] > NEAR_PARTITIONS
        )
        if not far and src not in b.sources:
            b.sources.add(src)
            b.node.edges.append(Edge(src[0], src[1], pos))
        src = (b.node.id, pos)
    e.source, e.source_output = src


def _finish(method: Method, lay: _Layout, key: tuple[str, str], b: _Boundary) -> None:
    """The boundary node's label and attributes, once every crossing is routed."""
    source_part, target_part = key
    tensors = [v for v in b.values if isinstance(v, int)]
    total = sum(t.nbytes for v in tensors if (t := method.tensor(v)) is not None)
    if b.node.namespace:  # inside a block or run, drawn by the thousand: the bytes alone
        b.node.label = bytes_short(total)
    else:
        first = tensor_label(method, tensors[0]).rsplit(",", 1)[0] if tensors else "tensor"
        more = f" +{len(b.values) - 1} more" if len(b.values) > 1 else ""
        b.node.label = f"{first}{more}, {bytes_short(total)}"
    attrs = {
        "boundary": f"{' and '.join(b.froms)} to {lay.say(target_part)}",
        "tensors": "\n".join(tensor_label(method, v) + f" (%{v})" for v in tensors),
        "bytes": str(total),
        # Each crossing it stands for, partition to partition (one line per receiver).
        "crossings": "\n".join(f"%{v} {a} to {z}" for v, a, z in b.crossings),
    }
    if not b.node.edges:
        gap = lay.part_order.get(target_part, 0) - lay.part_order.get(source_part, 0)
        attrs["drawn_as"] = f"beside its reader, without the edge from {lay.say(source_part)}" + (
            f" ({gap} partitions earlier)" if gap > 0 else ""
        )
    elif len(b.node.edges) < len(b.froms):
        attrs["drawn_as"] = "beside its reader; edges only from the block or partition before"
    b.node.attrs.update(attrs)


def boundary_nodes(
    ma: MethodAnalysis,
    graph: Graph,
    source_value: dict[Source, int],
    placement: MethodPlacement,
    known: dict[int, dict[str, str]] | None = None,
) -> list[Node]:
    """A node on each partition-to-partition edge saying which tensors cross there; the edges of
    `graph` are rerouted through them (`known` as for `tensor_port`)."""
    method, lay = ma.method, _Layout.of(ma, graph, placement)
    bounds: dict[tuple[str, str], _Boundary] = {}
    node_partition, cpu_sides = lay.node_partition, lay.cpu_sides
    for node in graph.nodes:
        target_part = node_partition.get(node.id)
        for e in node.edges:
            source_part = node_partition.get(e.source)
            if source_part is None or target_part is None or source_part == target_part:
                continue
            if source_part in cpu_sides and target_part in cpu_sides:
                continue  # CPU to CPU (method inputs and outputs count as CPU): no boundary
            _route(method, lay, bounds, node, e, source_value, known)
        if len(node.edges) > 1:
            # Several writers of one tensor now reach this node through one boundary node: one
            # edge.
            unique = {(e.source, e.source_output, e.target_input): e for e in node.edges}
            node.edges = list(unique.values())
    for key, b in bounds.items():
        _finish(method, lay, key, b)
    return [b.node for b in bounds.values()]
