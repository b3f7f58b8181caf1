"""A decoded delegate view (NPU operations, a TOSA graph, XNNPACK nodes ...) as plan nodes: inside
its partition's group in the method graph, or as a graph of its own."""

from __future__ import annotations

from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo
from pte_adapter.render.plan.graph import AttrValue, Colour, Edge, Graph, Node, Port
from pte_adapter.wording import shape_text

Source = tuple[str, str]  # (node id, output id) an edge comes from


def _tensor_attrs(t: TensorInfo) -> dict[str, str]:
    attrs: dict[str, str] = {"tensor": t.name or t.id}
    if t.shape is not None:
        attrs["shape"] = shape_text(t.shape)
    if t.dtype:
        attrs["dtype"] = t.dtype
    attrs.update(t.attrs)
    return attrs


# Edges from several writers of one tensor a view may draw beyond twice its operations' inputs
# (`_Writers`).
MARGIN_EDGES = 4096


class _Writers:
    """Who wrote each of a view's tensors, for the edges to its readers.

    A tensor can have several writers (an NPU output written in slices, one operation per channel
    range), and a reader gets an edge from each. An operation that reads a tensor and writes it
    again (in place) has consumed the writers before it, so it is the tensor's only writer from
    then on: a chain of such operations draws one edge per read, not one from every earlier
    writer. Edges from several writers are drawn while they stay within twice the view's inputs
    and a margin; past that a read gets an edge from the last writer only, so a tensor written by
    thousands of operations and read by thousands more cannot multiply."""

    def __init__(self, view: DelegateGraph) -> None:
        self.by_tensor: dict[str, list[Source]] = {}
        self.left = 2 * sum(len(op.inputs) for op in view.nodes) + MARGIN_EDGES

    def read(self, tid: str) -> list[Source]:
        found = self.by_tensor.get(tid)
        if not found:
            return []
        if len(found) > 1:
            if len(found) > self.left:
                return found[-1:]
            self.left -= len(found)
        return found

    def write(self, tid: str, source: Source, reads: list[str]) -> None:
        if tid in reads:
            self.by_tensor[tid] = [source]
        else:
            self.by_tensor.setdefault(tid, []).append(source)


class _ViewPorts:
    """The ports of a view's tensors, each tensor's attributes made once: a tensor is on the
    output of its writer and the input of every reader."""

    def __init__(self, view: DelegateGraph):
        self._tensors = view.tensors
        self._attrs: dict[str, dict[str, str]] = {}

    def port(self, pos: int, tid: str) -> Port:
        attrs = self._attrs.get(tid)
        if attrs is None:
            t = self._tensors.get(tid)
            attrs = self._attrs[tid] = _tensor_attrs(TensorInfo(tid) if t is None else t)
        return Port(str(pos), attrs)


def view_nodes(
    view: DelegateGraph,
    id_prefix: str,
    namespace: str,
    colours: Colour,
    outer_inputs: list[list[Source]],
    separate_ids: dict[str, str],
) -> tuple[list[Node], dict[str, list[Source]]]:
    """A delegate view's operations as method-graph nodes in `namespace`.

    `outer_inputs[k]` are the sources of the view's input k outside the view (empty for a nested
    view). Returns the nodes and, per output tensor of the view, the node outputs its readers
    outside the view get edges from (`_Writers.read`).
    """
    ports = _ViewPorts(view)
    writers = _Writers(view)
    for tid, sources in zip(view.inputs, outer_inputs, strict=False):  # nested: no outer
        writers.by_tensor.setdefault(tid, []).extend(sources)
    nodes: list[Node] = []
    for pos, op in enumerate(view.nodes):
        attrs = _kind(op)
        attrs["view"] = view.name
        ns = f"{namespace}/{op.namespace}" if op.namespace else namespace
        nodes.append(_op_node(op, f"{id_prefix}.{pos}", ns, attrs, colours, ports, writers))
        if op.subgraphs:
            nodes[-1].subgraphs = [separate_ids[s] for s in op.subgraphs if s in separate_ids]
    return nodes, {tid: writers.read(tid) for tid in dict.fromkeys(view.outputs)}


def _op_node(
    op: OpNode,
    nid: str,
    namespace: str,
    attrs: dict[str, AttrValue],
    colours: Colour,
    ports: _ViewPorts,
    writers: _Writers,
) -> Node:
    """The node of one operation, drawn inline or in a view's own graph: `attrs` (a new dict, the
    operation's kind first) gets its attributes; an edge from the writer of each tensor it reads,
    and it recorded as the writer of each it writes."""
    attrs.update(op.attrs)
    node = Node(
        nid,
        op.label or op.kind,
        namespace,
        colours,
        attrs,
        [ports.port(pos, tid) for pos, tid in enumerate(op.inputs)],
    )
    _edges_in(node, op.inputs, writers)
    for pos, tid in enumerate(op.outputs):
        writers.write(tid, (nid, str(pos)), op.inputs)
        node.outputs.append(ports.port(pos, tid))
    return node


def _edges_in(node: Node, tids: list[str], writers: _Writers) -> None:
    """An edge from every writer of each tensor `node` reads (`_Writers.read`)."""
    edges = node.edges
    for pos, tid in enumerate(tids):
        found = writers.read(tid)
        if found:
            into = str(pos)
            for src, out in found:
                edges.append(Edge(src, out, into))


def _kind(op: OpNode) -> dict[str, AttrValue]:
    """The operation's kind, unless the node's label already says it (an XNNPACK `Add`): a new
    dict, the node's attributes to be."""
    return {} if not op.label or op.label == op.kind else {"kind": op.kind}


def delegate_graph_id(method_graph_id: str, partition_name: str, view_name: str) -> str:
    """Id of a delegate view's graph: unique across the response, readable in the graph list."""
    return f"{method_graph_id} / {partition_name} / {view_name}"


def view_graph(
    view: DelegateGraph, graph_id: str, sibling_ids: dict[str, str], colours: Colour
) -> tuple[Graph, list[str]]:
    """One view as a graph of its own with Delegate Inputs/Outputs nodes; and the node id of each of
    its operations, in order."""
    graph = Graph(id=graph_id)
    ports = _ViewPorts(view)
    # A tensor can have several writers: an NPU output is often written in slices by several
    # operations (e.g. the channels of a concatenation); every writer gets its edge (`_Writers`).
    producers = _Writers(view)
    inputs = Node(id="delegate_inputs", label="Delegate Inputs")
    for pos, tid in enumerate(view.inputs):
        producers.write(tid, (inputs.id, str(pos)), [])
        inputs.outputs.append(ports.port(pos, tid))
    graph.nodes.append(inputs)

    used_ids = {inputs.id, "delegate_outputs"}
    op_ids: list[str] = []
    for op in view.nodes:
        nid = f"op_{op.id}"
        while nid in used_ids:
            nid += "_"
        used_ids.add(nid)
        op_ids.append(nid)
        node = _op_node(op, nid, op.namespace, _kind(op), colours, ports, producers)
        if op.subgraphs:
            node.subgraphs = [sibling_ids[s] for s in op.subgraphs if s in sibling_ids]
        graph.nodes.append(node)
    outputs = Node(id="delegate_outputs", label="Delegate Outputs")
    outputs.inputs = [ports.port(pos, tid) for pos, tid in enumerate(view.outputs)]
    _edges_in(outputs, view.outputs, producers)
    graph.nodes.append(outputs)
    graph.group_attrs = {"": dict(view.attrs)}
    return graph, op_ids
