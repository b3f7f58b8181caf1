"""A method as a plan graph, drawn as its partitions.

- Node ids: "inputs", "outputs" and, for instructions, their role ids (`analysis/roles.py`), which
  stay the same across re-exports, so Model Explorer's split view (sync navigation: match node id)
  lines up corresponding nodes of two programs. The operations a delegate payload decodes to are
  drawn inside that delegate's partition group with ids "<call id>.<position>" (nested views:
  "<call id>.<view>.<position>"); boundary nodes "b.<source role>.<target role>". A delegate
  called more than once is drawn once, as graphs of its own that every call opens.
- Every instruction sits in the namespace of its partition ("NPU partition 2 (EthosUBackend)",
  "CPU island 1"), coloured per backend; glue and control instructions get muted colours. A decoded
  DelegateCall heads its group (pinned, no edges); the tensors flow through the decoded operations,
  so the edges into and out of a partition are real dataflow to its neighbours.
- A method graph holds every delegate view, so it is always the graph with the most nodes: Model
  Explorer opens that one first. Only control-flow blocks referenced by a decoded operation are
  separate graphs ("forward / TOSA partition 1 (TOSABackend) / cond_then"); in a method folded into
  blocks, each delegate's operations are a graph of their own too, opened from the call.
- Graph-level numbers sit in the group attributes of "" (shown when nothing is selected); each
  partition's numbers and boundary tensors in its group's attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.constants import ConstantValue
from pte_adapter.analysis.dataflow import FROM_METHOD_INPUT, TensorEdge
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.backends import backend_colour
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import DELEGATE, JUMP_FALSE, Delegate, Instruction
from pte_adapter.render import facts
from pte_adapter.render.bundle_facts import bundle_method_facts, side_file_facts
from pte_adapter.render.constant_facts import constant_text
from pte_adapter.render.group_facts import block_and_run_names, drawn_group_names
from pte_adapter.render.memory_facts import fit_facts, memory_facts, partition_memory_facts
from pte_adapter.render.needs_facts import key_text, needs_facts
from pte_adapter.render.plan.annotations import fold_into_blocks, source_annotations
from pte_adapter.render.plan.boundaries import boundary_facts, boundary_nodes, crossing_sides
from pte_adapter.render.plan.graph import (
    AttrValue,
    Colour,
    Edge,
    Graph,
    GroupStyle,
    MethodPlacement,
    Node,
    Port,
    ViewPlacement,
    regex_escape,
    slug,
)
from pte_adapter.render.plan.instructions import (
    INPUTS_ID,
    OUTPUTS_ID,
    instruction_node,
    jump_target_id,
    tensor_port,
)
from pte_adapter.render.plan.views import Source, delegate_graph_id, view_graph, view_nodes
from pte_adapter.render.what_if_facts import what_if_island_facts, what_if_method_facts


@dataclass
class _Contents:
    """How one delegate partition's decoded views are drawn inside its group.

    `inline` is drawn in the partition's own layer with real edges to and from the neighbouring
    partitions (its inputs/outputs correspond one to one to the DelegateCall's tensors); `nested`
    views are collapsed sub-layers with their own edges only (e.g. the matched TOSA source of an
    Ethos-U partition); `separate` views are graphs of their own, opened from the nodes that
    reference them (control-flow blocks), or from the call (`from_call`).
    """

    inline: DelegateGraph | None = None
    nested: list[DelegateGraph] = field(default_factory=list)
    separate: list[DelegateGraph] = field(default_factory=list)
    from_call: list[DelegateGraph] = field(default_factory=list)


def _contents(ma: MethodAnalysis, delegate: Delegate, n_inputs: int, n_outputs: int) -> _Contents:
    views = delegate.decoded.graphs
    referenced = {s for v in views for op in v.nodes for s in op.subgraphs}
    top = [v for v in views if v.name not in referenced]
    # A method folded into blocks (a transformer's dozens of partitions) draws each delegate's
    # operations as a graph of its own, opened from its DelegateCall: expanding everything then
    # stays a picture of partitions, and Model Explorer draws it in half the time. A view at least
    # as large as the method's instructions stays inside, so the method graph is still the one
    # with the most nodes (the one Model Explorer opens first).
    if ma.blocks and all(len(v.nodes) + 2 < len(ma.method.instructions) for v in views):
        return _Contents(separate=list(views), from_call=top)
    out = _Contents(separate=[v for v in views if v.name in referenced])
    # Inline when the view's tensors are the call's: its inputs one for one, its outputs the
    # first ones (Vela merges an output the lowered module returns twice; the call's extra
    # output is then drawn from the call itself).
    fits = top and len(top[0].inputs) == n_inputs and 0 < len(top[0].outputs) <= n_outputs
    if top and top[0].nodes and fits:
        out.inline = top[0]
        out.nested = top[1:]
    else:
        out.nested = top
    return out


@dataclass
class _Builder:
    """The state of one method graph while its nodes are made."""

    ma: MethodAnalysis
    graph: Graph
    placement: MethodPlacement
    names: list[str]  # each partition's group name (`render/group_facts.py`)
    separate: list[Graph] = field(default_factory=list)
    # Outputs of inlined DelegateCalls come from the operations inside: (ins, output) -> writers.
    redirect: dict[tuple[int, int], list[Source]] = field(default_factory=dict)
    # Which tensor (value index) each node output is, for labelling boundary tensors.
    source_value: dict[Source, int] = field(default_factory=dict)
    # Each tensor's port attributes, made once (`tensor_port`).
    known: dict[int, dict[str, str]] = field(default_factory=dict)
    # How many calls each delegate has; the views of one called more than once, drawn once as
    # graphs of their own: the ids its calls open and where each view was drawn.
    calls: dict[int, int] = field(default_factory=dict)
    shared: dict[int, tuple[list[str], dict[str, ViewPlacement]]] = field(default_factory=dict)

    def sources(self, edge: TensorEdge) -> list[Source]:
        ids = self.placement.instructions
        if edge.producer >= 0:
            return self.redirect.get(
                (edge.producer, edge.producer_output),
                [(ids[edge.producer], str(edge.producer_output))],
            )
        if edge.producer == FROM_METHOD_INPUT:
            return [(INPUTS_ID, str(edge.producer_output))]
        return []

    def connect(self, node: Node, edges: list[TensorEdge]) -> None:
        for edge in edges:
            node.edges.extend(
                Edge(src, out, str(edge.consumer_input)) for src, out in self.sources(edge)
            )

    def delegate(self, ins: Instruction, node: Node, delegate: Delegate) -> None:
        """A DelegateCall's decoded views: inside its group, or graphs of their own."""
        ma, flow = self.ma, self.ma.partitions.dataflow
        part = ma.partitions.partitions[ma.partitions.partition_of[ins.index]]
        if self.calls.get(delegate.index, 0) > 1:
            self.shared_delegate(ins, node, delegate, backend_colour(part.backend))
            return
        io = flow.io[ins.index]
        contents = _contents(ma, delegate, len(flow.edges[ins.index]), len(io.output_tensors))
        colours = backend_colour(part.backend)
        group = self.names[part.index]
        gid = self.graph.id
        separate_ids = {
            v.name: delegate_graph_id(gid, part.name, v.name) for v in contents.separate
        }
        for v in contents.separate:
            graph, op_ids = view_graph(v, separate_ids[v.name], separate_ids, colours)
            self.separate.append(graph)
            self.placement.views[(ins.index, v.name)] = ViewPlacement(graph.id, op_ids)
        node.subgraphs = [separate_ids[v.name] for v in contents.from_call]
        if contents.inline is None:
            self.connect(node, flow.edges[ins.index])
        else:
            # The call itself heads its group; the data flows through the operations inside.
            node.pinned = True
            outer = [self.sources(e) for e in flow.edges[ins.index]]
            inner, writers = view_nodes(
                contents.inline, node.id, group, colours, outer, separate_ids
            )
            self._place(ins, contents.inline, inner)
            for j, tid in enumerate(contents.inline.outputs):
                self.redirect[(ins.index, j)] = writers.get(tid, [])
                for writer in self.redirect[(ins.index, j)]:
                    self.source_value[writer] = io.output_tensors[j]
        for view in contents.nested:
            prefix, space = f"{node.id}.{slug(view.name)}", f"{group}/{view.name}"
            inner, _ = view_nodes(view, prefix, space, colours, [], separate_ids)
            self._place(ins, view, inner)

    def shared_delegate(
        self, ins: Instruction, node: Node, delegate: Delegate, colours: Colour
    ) -> None:
        """A call of a delegate called more than once: its views are graphs of their own, made
        at its first call and opened from every call (a copy per call would multiply the
        delegate's operations by its calls); the data flows between the calls themselves."""
        shared = self.shared.get(delegate.index)
        if shared is None:
            views = delegate.decoded.graphs
            referenced = {s for v in views for op in v.nodes for s in op.subgraphs}
            owner = f"delegate {delegate.index} ({delegate.id})"
            ids = {v.name: delegate_graph_id(self.graph.id, owner, v.name) for v in views}
            drawn: dict[str, ViewPlacement] = {}
            for v in views:
                graph, op_ids = view_graph(v, ids[v.name], ids, colours)
                self.separate.append(graph)
                drawn[v.name] = ViewPlacement(graph.id, op_ids)
            top = [ids[v.name] for v in views if v.name not in referenced]
            shared = self.shared[delegate.index] = (top, drawn)
        node.subgraphs = list(shared[0])
        for name, where in shared[1].items():
            self.placement.views[(ins.index, name)] = where
        self.connect(node, self.ma.partitions.dataflow.edges[ins.index])

    def _place(self, ins: Instruction, view: DelegateGraph, inner: list[Node]) -> None:
        self.graph.nodes.extend(inner)
        self.placement.views[(ins.index, view.name)] = ViewPlacement(
            self.graph.id, [n.id for n in inner]
        )


def _instructions(b: _Builder) -> None:
    method, parts = b.ma.method, b.ma.partitions
    flow, ids = parts.dataflow, b.placement.instructions
    key_texts: dict[int, str] = {}  # by the key object: a method holds one per distinct key
    for ins in method.instructions:
        if ins.kind is DELEGATE and ins.delegate_index is not None:
            b.calls[ins.delegate_index] = b.calls.get(ins.delegate_index, 0) + 1
    for ins in method.instructions:
        part = parts.partitions[parts.partition_of[ins.index]]
        node = instruction_node(method, ins, part, flow, ids, b.names[part.index], b.known)
        key = b.ma.kernel_keys.get(ins.index)
        if key is not None:  # what a runtime's kernel registry is asked for (pte-adapter ops)
            text = key_texts.get(id(key))
            if text is None:
                text = key_texts[id(key)] = key_text(key)
            node.attrs["kernel_key"] = text
        b.graph.nodes.append(node)
        for j, v in enumerate(flow.io[ins.index].output_tensors):
            b.source_value[(node.id, str(j))] = v
        d = ins.delegate_index
        if ins.kind is DELEGATE and d is not None and 0 <= d < len(method.delegates):
            b.delegate(ins, node, method.delegates[d])
        else:
            b.connect(node, flow.edges[ins.index])


def _constant_port(port: Port, constants: dict[int, ConstantValue], path: str = "") -> Port:
    """The port, with the constant value on it first (`value`, and where a constant method's
    structured result puts it: `returned_as` "get_eos_ids()[1]")."""
    pos = int(port.id)
    if pos not in constants:
        return port
    shown = {"value": constant_text(constants[pos])}
    if path:
        shown["returned_as"] = path
    return Port(port.id, shown | port.attrs)


def _constant_attrs(name: str, constants: dict[int, ConstantValue]) -> dict[str, AttrValue]:
    """Constant values as node attributes, `output1: 3`: Model Explorer shows a node's input
    metadata only for inputs with an edge, and a constant has no producer to draw one from."""
    return {f"{name}{pos}": constant_text(v) for pos, v in sorted(constants.items())}


def _outputs_and_jumps(b: _Builder) -> None:
    method, flow, ids = b.ma.method, b.ma.partitions.dataflow, b.placement.instructions
    outputs = Node(id=OUTPUTS_ID, label="Graph Outputs")
    constants = b.ma.constants
    if b.ma.is_constant and len(method.outputs) != 1:  # a list, a dict: the whole, then items
        outputs.attrs["returns"] = constant_text(constants.returns)
    outputs.attrs.update(_constant_attrs("output", constants.outputs))
    for edge in flow.output_edges:
        port = tensor_port(method, edge.consumer_input, edge.value, b.known)
        path = constants.output_paths.get(edge.consumer_input)
        returned = f"{method.name}(){path}" if path else ""
        outputs.inputs.append(_constant_port(port, constants.outputs, returned))
    b.connect(outputs, flow.output_edges)
    # Control flow: a visible edge from each JumpFalseCall to where it may jump.
    by_id = {n.id: n for n in b.graph.nodes}
    by_id[OUTPUTS_ID] = outputs
    for ins in method.instructions:
        if ins.kind is JUMP_FALSE:
            by_id[jump_target_id(method, ins, ids)].edges.append(
                Edge(ids[ins.index], "jump_if_false", "control")
            )
    b.graph.nodes.append(outputs)


def _groups(result: ProgramAnalysis, ma: MethodAnalysis, graph: Graph, names: list[str]) -> None:
    """The method's numbers (graph attributes) and each partition's, with its colour."""
    method, parts = ma.method, ma.partitions
    numbers = {
        **facts.method_facts(result, ma),
        **memory_facts(ma),
        **fit_facts(result.deployment, ma.name),
        **(needs_facts(ma.needs) if not ma.is_constant else {}),
        **facts.defaults_facts(method),
    }
    # A bundle's test cases right under the file and method names, where the panel opens.
    head: dict[str, str] = {k: numbers[k] for k in ("file", "method") if k in numbers}
    head.update(what_if_method_facts(ma.what_if))
    graph.group_attrs = {
        "": {**head, **bundle_method_facts(result, ma), **numbers, **side_file_facts(result)}
    }
    graph.group_styles = []
    sides = crossing_sides(parts)
    words: dict[int, str] = {}  # each crossing worded once (`boundary_facts`)
    in_block = {i for b in ma.blocks for i in b.partitions}
    for part in parts.partitions:
        # A short name inside a block (`drawn_group_names`): the partition's own name first.
        attrs = {"partition": part.name} if part.index in in_block else {}
        # An island's what-if first: what fixing it would buy is the point of opening it.
        attrs.update(what_if_island_facts(ma.what_if, part.index))
        attrs.update(facts.partition_facts(method, part))
        if part.delegate_index is not None and 0 <= part.delegate_index < len(method.delegates):
            attrs.update(facts.delegate_facts(method.delegates[part.delegate_index]))
        attrs.update(boundary_facts(method, parts, part, sides, words))
        attrs.update(partition_memory_facts(ma, part))
        graph.group_attrs[names[part.index]] = attrs
        graph.group_styles.append(
            GroupStyle(f"^{regex_escape(names[part.index])}$", backend_colour(part.backend))
        )


def method_plan(
    result: ProgramAnalysis, ma: MethodAnalysis, graph_id: str
) -> tuple[Graph, list[Graph], MethodPlacement]:
    """The method graph, the separate graphs its nodes open, and where everything was drawn."""
    graph = Graph(id=graph_id)
    names = drawn_group_names(ma)
    placement = MethodPlacement(graph_id, list(ma.instruction_ids), groups=list(names))
    blocks, runs = block_and_run_names(ma)
    placement.blocks = {b.name: n for b, n in zip(ma.blocks, blocks, strict=True)}
    placement.runs = {r.name: n for r, n in zip(ma.block_runs, runs, strict=True)}
    b = _Builder(ma, graph, placement, names)
    inputs = Node(id=INPUTS_ID, label="Graph Inputs")
    inputs.attrs.update(_constant_attrs("input", ma.constants.inputs))
    for pos, v in enumerate(ma.method.inputs):
        port = tensor_port(ma.method, pos, v, b.known)
        inputs.outputs.append(_constant_port(port, ma.constants.inputs))
        b.source_value[(INPUTS_ID, str(pos))] = v
    graph.nodes.append(inputs)
    _instructions(b)
    _outputs_and_jumps(b)
    _groups(result, ma, graph, names)
    graph.nodes.extend(boundary_nodes(ma, graph, b.source_value, placement, b.known))
    # A one-call partition stays a group (Model Explorer versions that read this setting).
    graph.keep_single_child_layers = True
    source_annotations(ma, graph, names)
    if ma.blocks:
        fold_into_blocks(ma, graph, placement)
    return graph, b.separate, b.placement
