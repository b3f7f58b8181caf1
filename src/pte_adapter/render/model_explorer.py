"""Model Explorer graphs from the typed program: one graph per method, drawn as its partitions.

Conventions:
- node ids: "inputs", "outputs" and, for instructions, their role ids (`analysis/roles.py`:
  "cpu_in.0.quantized_decomposed::quantize_per_tensor.out", "EthosUBackend_1"), which stay the
  same across re-exports, so Model Explorer's split view (sync navigation: match node id) lines
  up corresponding nodes of two programs; the operations a delegate payload decodes to are drawn
  inside that delegate's partition group with ids "<call id>.<position>" (nested views:
  "<call id>.<view>.<position>"); boundary nodes "b.<source role>.<target role>".
- every instruction sits in the namespace of its partition ("NPU partition 2 (EthosUBackend)",
  "CPU island 1"), coloured per backend; q/dq/copy glue and control instructions get muted colours.
  A decoded DelegateCall heads its group (pinned, no edges); the tensors flow through the decoded
  operations, so the edges into and out of a partition are real dataflow to its neighbours.
- a method graph holds every delegate view, so it is always the graph with the most nodes: Model
  Explorer opens that one first. Only control-flow blocks referenced by a decoded operation are
  separate graphs ("forward / TOSA partition 1 (TOSABackend) / cond_then").
- labels are short (full operator name with overload, or the delegate id); everything else is in
  attributes and input/output metadata. Graph-level numbers sit in `groupNodeAttributes[""]`, shown
  when nothing is selected; each partition's numbers and boundary tensors in its group's attributes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from model_explorer import graph_builder as gb

from pte_adapter.analysis.blocks import FOLD_ABOVE, Block
from pte_adapter.analysis.dataflow import FROM_METHOD_INPUT, Dataflow, TensorEdge
from pte_adapter.analysis.partitions import Crossing, MethodPartitions, Partition, is_glue
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.analysis.why import Reason
from pte_adapter.backends import (
    CPU_COMPUTE_COLOUR,
    CPU_CONTROL_COLOUR,
    CPU_GLUE_COLOUR,
    backend_colour,
)
from pte_adapter.program.delegate_graph import DelegateGraph, TensorInfo
from pte_adapter.program.model import (
    Delegate,
    Instruction,
    InstructionKind,
    Method,
    Value,
    ValueKind,
)
from pte_adapter.render import facts
from pte_adapter.render.source_facts import (
    instruction_source_facts,
    layer_namespace,
    partition_source_facts,
    why_facts,
)

# Colours come from the backend records (pte_adapter/backends.py): one place per backend.
BOUNDARY_TENSOR_COLOUR = ("#ffffff", "#5d4037")  # a tensor crossing a partition boundary
# In a method of more than SMALL_METHOD partitions, a boundary tensor read more than
# NEAR_PARTITIONS partitions after it was written is drawn beside its reader rather than connected
# across the graph: long edges are most of Model Explorer's layout and drawing time on a large
# program (benchmarks/bench_browser.py), while in a small method they cost nothing and show skips
# such as an NPU-to-NPU handoff around a CPU island.
NEAR_PARTITIONS = 1
SMALL_METHOD = FOLD_ABOVE  # methods this small are neither folded nor stripped of far edges

INPUTS_ID = "inputs"
METHOD_INPUT, METHOD_OUTPUT = "method input", "method output"  # sides of a boundary
OUTPUTS_ID = "outputs"


def _kv(attrs: dict[str, str]) -> list[gb.KeyValue]:
    return [gb.KeyValue(key=k, value=str(v)) for k, v in attrs.items()]


def _style(colours: tuple[str, str]) -> gb.GraphNodeStyle:
    return gb.GraphNodeStyle(
        backgroundColor=colours[0], borderColor=colours[1], hoveredBorderColor=colours[1]
    )


# -- method graphs ------------------------------------------------------------------------------


def instruction_label(method: Method, ins: Instruction) -> str:
    if ins.kind is InstructionKind.KERNEL:
        op = ins.op_index
        if op is not None and 0 <= op < len(method.operators):
            return method.operators[op].full_name
        return f"unknown operator {op}"
    if ins.kind is InstructionKind.DELEGATE:
        d = ins.delegate_index
        if d is not None and 0 <= d < len(method.delegates):
            return method.delegates[d].id or "delegate"
        return f"unknown delegate {d}"
    return str(ins.kind.value)


def _instruction_colour(method: Method, ins: Instruction, part: Partition) -> tuple[str, str]:
    if ins.kind is InstructionKind.DELEGATE:
        return backend_colour(part.backend)
    if ins.kind is InstructionKind.KERNEL:
        return CPU_GLUE_COLOUR if is_glue(instruction_label(method, ins)) else CPU_COMPUTE_COLOUR
    return CPU_CONTROL_COLOUR


def _value_text(method: Method, v: int) -> str:
    """A non-tensor argument as text (for attributes)."""
    if not 0 <= v < len(method.values):
        return f"<missing value {v}>"
    val = method.values[v]
    if val.kind is ValueKind.INT_LIST and isinstance(val.payload, list):
        items = [
            method.values[int(i)].payload if 0 <= int(i) < len(method.values) else "?"
            for i in val.payload
        ]
        return "[" + ", ".join(str(x) for x in items) + "]"
    if val.kind is ValueKind.NULL:
        return "None"
    if val.kind is ValueKind.STRING:
        return str(json.dumps(val.payload))
    if val.kind in (ValueKind.TENSOR_LIST, ValueKind.OPTIONAL_TENSOR_LIST) and isinstance(
        val.payload, list
    ):
        return "[" + ", ".join("None" if int(i) < 0 else f"%{i}" for i in val.payload) + "]"
    if val.kind is ValueKind.TENSOR:
        return f"%{v}"
    return str(val.payload)


def _is_tensorish(val: Value) -> bool:
    return val.kind in (ValueKind.TENSOR, ValueKind.TENSOR_LIST, ValueKind.OPTIONAL_TENSOR_LIST)


def tensor_metadata(method: Method, v: int) -> list[gb.KeyValue]:
    attrs: dict[str, str] = {"value_index": str(v)}
    tensor = method.tensor(v)
    if tensor is None:
        return _kv(attrs)
    attrs.update(facts.tensor_facts(tensor, method))
    return _kv(attrs)


def _instruction_node(
    method: Method,
    ins: Instruction,
    part: Partition,
    flow: Dataflow,
    ids: list[str],
) -> gb.GraphNode:
    io = flow.io[ins.index]
    node = gb.GraphNode(
        id=ids[ins.index],
        label=instruction_label(method, ins),
        namespace=part.name,
        style=_style(_instruction_colour(method, ins, part)),
    )
    attrs: dict[str, str] = {
        "instruction": str(ins.index),
        "kind": ins.kind.value,
        "partition": part.name,
    }
    if len(method.chains) > 1:
        attrs["chain"] = f"{ins.chain} (position {ins.chain_position})"
    if ins.kind in (InstructionKind.KERNEL, InstructionKind.DELEGATE):
        attrs["args"] = "[" + ", ".join(str(a) for a in ins.args) + "]"
        written = set(io.outputs)
        for pos, a in enumerate(ins.args):
            if (
                a not in written
                and 0 <= a < len(method.values)
                and not _is_tensorish(method.values[a])
            ):
                attrs[f"arg{pos}"] = _value_text(method, a)
    if ins.kind is InstructionKind.KERNEL and ins.op_index is not None:
        attrs["operator_index"] = str(ins.op_index)
    if ins.kind is InstructionKind.DELEGATE:
        attrs["io_split"] = (
            f"{len(io.inputs)} inputs, {len(io.outputs)} outputs "
            f"({'from the payload' if io.split_rule == 'payload' else 'by the dataflow rule'})"
        )
        d = ins.delegate_index
        if d is not None and 0 <= d < len(method.delegates):
            attrs.update(facts.delegate_facts(method.delegates[d]))
    if ins.kind is InstructionKind.MOVE:
        attrs["move"] = f"%{ins.move_from} → %{ins.move_to}"
    if ins.kind is InstructionKind.FREE:
        attrs["frees"] = f"%{ins.free_value}"
    if ins.kind is InstructionKind.JUMP_FALSE:
        attrs["condition"] = f"%{ins.cond_value} = {_value_text(method, ins.cond_value or 0)}"
        attrs["jumps_if_false_to"] = _jump_target_text(method, ins)
    node.attrs = _kv(attrs)
    if ins.kind is InstructionKind.JUMP_FALSE:
        node.attrs.append(
            gb.KeyValue(
                key="jump_target_node",
                value=gb.NodeIdsNodeAttributeValue(nodeIds=[_jump_target_id(method, ins, ids)]),
            )
        )

    # Inputs: every tensor read (edges are added by the method graph, which knows where each
    # tensor really comes from; constants have metadata but no edge).
    for edge in flow.edges[ins.index]:
        node.inputsMetadata.append(
            gb.MetadataItem(id=str(edge.consumer_input), attrs=tensor_metadata(method, edge.value))
        )
    for pos, v in enumerate(io.output_tensors):
        node.outputsMetadata.append(gb.MetadataItem(id=str(pos), attrs=tensor_metadata(method, v)))
    return node


def _jump_target(method: Method, ins: Instruction) -> int | None:
    """Index of the instruction a JumpFalseCall may jump to; None for the end of its chain."""
    chain = method.chains[ins.chain]
    dest = ins.destination or 0
    if dest >= chain.num_instructions:
        return None
    return chain.first_instruction + dest


def _jump_target_id(method: Method, ins: Instruction, ids: list[str]) -> str:
    target = _jump_target(method, ins)
    return OUTPUTS_ID if target is None else ids[target]


def _jump_target_text(method: Method, ins: Instruction) -> str:
    target = _jump_target(method, ins)
    if target is None:
        return f"{ins.destination} (end of chain)"
    return f"{ins.destination} ({instruction_label(method, method.instructions[target])})"


@dataclass
class _Contents:
    """How one delegate partition's decoded views are drawn inside its group.

    `inline` is drawn in the partition's own layer with real edges to and from the neighbouring
    partitions (its inputs/outputs correspond one to one to the DelegateCall's tensors); `nested`
    views are collapsed sub-layers with their own edges only (e.g. the matched TOSA source of an
    Ethos-U partition); `separate` views are graphs of their own, opened from the nodes that
    reference them (control-flow blocks).
    """

    inline: DelegateGraph | None = None
    nested: list[DelegateGraph] = field(default_factory=list)
    separate: list[DelegateGraph] = field(default_factory=list)
    from_call: list[DelegateGraph] = field(default_factory=list)  # separate, linked from the call


def _contents(
    method: Method, parts: MethodPartitions, delegate: Delegate, n_inputs: int, n_outputs: int
) -> _Contents:
    views = delegate.decoded.graphs
    referenced = {s for v in views for op in v.nodes for s in op.subgraphs}
    # A method folded into blocks (a transformer's dozens of partitions) draws each delegate's
    # operations as a graph of its own, opened from its DelegateCall: expanding everything then
    # stays a picture of partitions, and Model Explorer draws it in half the time. A view at least
    # as large as the method's instructions stays inside, so the method graph is still the one
    # with the most nodes (the one Model Explorer opens first).
    if len(parts.partitions) > FOLD_ABOVE and all(
        len(v.nodes) + 2 < len(method.instructions) for v in views
    ):
        top = [v for v in views if v.name not in referenced]
        return _Contents(separate=list(views), from_call=top)
    top = [v for v in views if v.name not in referenced]
    out = _Contents(separate=[v for v in views if v.name in referenced])
    if top and top[0].nodes and len(top[0].inputs) == n_inputs and len(top[0].outputs) == n_outputs:
        out.inline = top[0]
        out.nested = top[1:]
    else:
        out.nested = top
    return out


Source = tuple[str, str]  # (node id, output id) an edge comes from


def _view_nodes(
    view: DelegateGraph,
    id_prefix: str,
    namespace: str,
    colours: tuple[str, str],
    outer_inputs: list[list[Source]],
    separate_ids: dict[str, str],
) -> tuple[list[gb.GraphNode], dict[str, list[Source]]]:
    """A delegate view's operations as method-graph nodes in `namespace`.

    `outer_inputs[k]` are the sources of the view's input k outside the view (empty for a nested
    view). Returns the nodes and, per tensor id, every node output that writes it.
    """
    writers: dict[str, list[Source]] = {}
    for tid, sources in zip(view.inputs, outer_inputs, strict=False):  # nested: no outer
        writers.setdefault(tid, []).extend(sources)
    nodes: list[gb.GraphNode] = []
    for pos, op in enumerate(view.nodes):
        nid = f"{id_prefix}.{pos}"
        node = gb.GraphNode(
            id=nid,
            label=op.label or op.kind,
            namespace=f"{namespace}/{op.namespace}" if op.namespace else namespace,
            attrs=_kv({"kind": op.kind, "view": view.name, **op.attrs}),
            style=_style(colours),
        )
        node.subgraphIds = [separate_ids[s] for s in op.subgraphs if s in separate_ids]
        for in_pos, tid in enumerate(op.inputs):
            t = view.tensors.get(tid, TensorInfo(tid))
            node.inputsMetadata.append(gb.MetadataItem(id=str(in_pos), attrs=_tensor_attrs(t)))
            for src, out in writers.get(tid, []):
                node.incomingEdges.append(
                    gb.IncomingEdge(
                        sourceNodeId=src, sourceNodeOutputId=out, targetNodeInputId=str(in_pos)
                    )
                )
        for out_pos, tid in enumerate(op.outputs):
            writers.setdefault(tid, []).append((nid, str(out_pos)))
            t = view.tensors.get(tid, TensorInfo(tid))
            node.outputsMetadata.append(gb.MetadataItem(id=str(out_pos), attrs=_tensor_attrs(t)))
        nodes.append(node)
    return nodes, writers


def _boundary_text(method: Method, c: Crossing, other: str) -> str:
    t = method.tensor(c.value)
    what = f"[{', '.join(str(s) for s in t.sizes)}] {t.dtype}" if t is not None else "?"
    return f"%{c.value} {what}, {facts.human_bytes(c.nbytes)} {other}"


def _boundary_facts(method: Method, parts: MethodPartitions, part: Partition) -> dict[str, str]:
    """The tensors crossing this partition's boundary, for its group attributes."""
    ins = [
        _boundary_text(method, c, f"from {c.source}")
        for c in parts.crossings
        if c.target == part.name
    ]
    outs = [
        _boundary_text(method, c, f"to {c.target}")
        for c in parts.crossings
        if c.source == part.name
    ]
    return {
        "incoming_tensors": "\n".join(ins) or "none",
        "outgoing_tensors": "\n".join(outs) or "none",
    }


def method_graph(
    result: ProgramAnalysis, ma: MethodAnalysis, graph_id: str
) -> tuple[gb.Graph, list[gb.Graph]]:
    """The method graph, plus the separate graphs its nodes link to (control-flow blocks)."""
    method, parts = ma.method, ma.partitions
    flow = parts.dataflow
    ids = ma.instruction_ids
    blocks = ma.blocks
    graph = gb.Graph(id=graph_id)
    separate: list[gb.Graph] = []
    inputs = gb.GraphNode(id=INPUTS_ID, label="Graph Inputs")
    for pos, v in enumerate(method.inputs):
        inputs.outputsMetadata.append(
            gb.MetadataItem(id=str(pos), attrs=tensor_metadata(method, v))
        )
    graph.nodes.append(inputs)

    # Outputs of inlined DelegateCalls come from the operations inside: (ins, output) -> writers.
    redirect: dict[tuple[int, int], list[Source]] = {}
    # Which tensor (value index) each node output is, for labelling boundary tensors.
    source_value: dict[Source, int] = {
        (INPUTS_ID, str(pos)): v for pos, v in enumerate(method.inputs)
    }

    def sources(edge: TensorEdge) -> list[Source]:
        if edge.producer >= 0:
            return redirect.get(
                (edge.producer, edge.producer_output),
                [(ids[edge.producer], str(edge.producer_output))],
            )
        if edge.producer == FROM_METHOD_INPUT:
            return [(INPUTS_ID, str(edge.producer_output))]
        return []

    for ins in method.instructions:
        part = parts.partitions[parts.partition_of[ins.index]]
        node = _instruction_node(method, ins, part, flow, ids)
        graph.nodes.append(node)
        for j, v in enumerate(flow.io[ins.index].output_tensors):
            source_value[(node.id, str(j))] = v
        d = ins.delegate_index
        if (
            ins.kind is not InstructionKind.DELEGATE
            or d is None
            or not 0 <= d < len(method.delegates)
        ):
            _connect(node, flow.edges[ins.index], sources)
            continue
        io = flow.io[ins.index]
        contents = _contents(
            method, parts, method.delegates[d], len(flow.edges[ins.index]), len(io.output_tensors)
        )
        colours = backend_colour(part.backend)
        separate_ids = {
            v.name: delegate_graph_id(graph_id, part.name, v.name) for v in contents.separate
        }
        separate.extend(
            delegate_graph(v, separate_ids[v.name], separate_ids, colours)
            for v in contents.separate
        )
        node.subgraphIds = [separate_ids[v.name] for v in contents.from_call]
        if contents.inline is None:
            _connect(node, flow.edges[ins.index], sources)
        else:
            # The call itself heads its group; the data flows through the operations inside.
            node.config = gb.GraphNodeConfig(pinToGroupTop=True)
            outer = [sources(e) for e in flow.edges[ins.index]]
            inner, writers = _view_nodes(
                contents.inline, node.id, part.name, colours, outer, separate_ids
            )
            graph.nodes.extend(inner)
            for j, tid in enumerate(contents.inline.outputs):
                redirect[(ins.index, j)] = writers.get(tid, [])
                for writer in redirect[(ins.index, j)]:
                    source_value[writer] = io.output_tensors[j]
        for view in contents.nested:
            inner, _ = _view_nodes(
                view,
                f"{node.id}.{_slug(view.name)}",
                f"{part.name}/{view.name}",
                colours,
                [],
                separate_ids,
            )
            graph.nodes.extend(inner)

    outputs = gb.GraphNode(id=OUTPUTS_ID, label="Graph Outputs")
    for edge in flow.output_edges:
        outputs.inputsMetadata.append(
            gb.MetadataItem(id=str(edge.consumer_input), attrs=tensor_metadata(method, edge.value))
        )
    _connect(outputs, flow.output_edges, sources)
    # Control flow: a visible edge from each JumpFalseCall to where it may jump.
    by_id = {n.id: n for n in graph.nodes}
    by_id[OUTPUTS_ID] = outputs
    for ins in method.instructions:
        if ins.kind is InstructionKind.JUMP_FALSE:
            by_id[_jump_target_id(method, ins, ids)].incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=ids[ins.index],
                    sourceNodeOutputId="jump_if_false",
                    targetNodeInputId="control",
                )
            )
    graph.nodes.append(outputs)

    graph.groupNodeAttributes = {"": facts.method_facts(result, ma)}
    configs: list[gb.GroupNodeConfig] = []
    for part in parts.partitions:
        attrs = facts.partition_facts(method, part)
        if part.delegate_index is not None and 0 <= part.delegate_index < len(method.delegates):
            attrs.update(facts.delegate_facts(method.delegates[part.delegate_index]))
        attrs.update(_boundary_facts(method, parts, part))
        graph.groupNodeAttributes[part.name] = attrs
        bg, border = backend_colour(part.backend)
        configs.append(
            gb.GroupNodeConfig(
                namespaceRegex=f"^{_regex_escape(part.name)}$",
                backgroundColor=bg,
                borderColor=border,
                textColor=border,
            )
        )
    graph.groupNodeConfigs = configs
    node_partition = {n.id: n.namespace.split("/")[0] for n in graph.nodes}
    node_partition[INPUTS_ID], node_partition[OUTPUTS_ID] = METHOD_INPUT, METHOD_OUTPUT
    part_order = {p.name: p.index for p in parts.partitions}
    part_order[METHOD_INPUT], part_order[METHOD_OUTPUT] = -1, len(parts.partitions)
    cpu_sides = {p.name for p in parts.partitions if p.is_cpu} | {METHOD_INPUT, METHOD_OUTPUT}
    roles = dict(zip((p.name for p in parts.partitions), ma.roles, strict=True))
    roles[METHOD_INPUT], roles[METHOD_OUTPUT] = INPUTS_ID, OUTPUTS_ID
    block_of = {parts.partitions[i].name: b.name for b in blocks for i in b.partitions}
    graph.nodes.extend(
        _boundary_nodes(
            method, graph, source_value, node_partition, part_order, cpu_sides, roles, block_of
        )
    )
    # A one-call partition stays a group (Model Explorer versions that read this setting).
    graph.layoutConfigs = gb.LayoutConfigs(keepLayersWithASingleChild=True)
    _source_annotations(ma, graph)
    if blocks:
        _fold_into_blocks(method, parts, blocks, block_of, graph)
    return graph, separate


def _fold_into_blocks(
    method: Method,
    parts: MethodPartitions,
    blocks: list[Block],
    block_of: dict[str, str],
    graph: gb.Graph,
) -> None:
    """Put each folded partition's group inside its block's group (`analysis/blocks.py`): the
    method's first screen is then its blocks, each opening onto its partitions and CPU islands.
    Boundary nodes between two partitions of one block were placed inside it already. `block_of`:
    partition name -> its block's name."""
    for node in graph.nodes:
        top = node.namespace.split("/")[0]
        if top in block_of:
            node.namespace = f"{block_of[top]}/{node.namespace}"
    groups = graph.groupNodeAttributes or {}
    graph.groupNodeAttributes = {
        (f"{block_of[k.split('/')[0]]}/{k}" if k.split("/")[0] in block_of else k): v
        for k, v in groups.items()
    }
    moved = {
        f"^{_regex_escape(name)}$": f"^{_regex_escape(block + '/' + name)}$"
        for name, block in block_of.items()
    }
    for config in graph.groupNodeConfigs or []:
        config.namespaceRegex = moved.get(config.namespaceRegex, config.namespaceRegex)
    for b in blocks:
        graph.groupNodeAttributes[b.name] = _block_facts(method, parts, b)


def _block_facts(method: Method, parts: MethodPartitions, block: Block) -> dict[str, str]:
    mine = [parts.partitions[i] for i in block.partitions]
    names = {p.name for p in mine}
    backends: dict[str, int] = {}
    for p in mine:
        backends[p.backend] = backends.get(p.backend, 0) + 1
    into = [c for c in parts.crossings if c.target in names and c.source not in names]
    out = [c for c in parts.crossings if c.source in names and c.target not in names]
    inside = [c for c in parts.crossings if c.source in names and c.target in names]

    def tensors(cs: list[Crossing]) -> str:
        return f"{len(cs)} tensors, {facts.human_bytes(sum(c.nbytes for c in cs))}"

    return {
        "block": block.basis,
        "partitions": f"{mine[0].name} to {mine[-1].name} ({len(mine)})",
        "partitions_by_backend": ", ".join(
            f"{'CPU islands' if b == 'CPU' else b} ×{n}" for b, n in backends.items()
        ),
        "instructions": str(sum(len(p.instructions) for p in mine)),
        "crossings_into_block": tensors(into),
        "crossings_out_of_block": tensors(out),
        "crossings_inside_block": tensors(inside),
    }


# A CPU island with more instructions than this is drawn as nested layers of the model (ETRecord).
NEST_LAYERS_ABOVE = 16


def _source_annotations(ma: MethodAnalysis, graph: gb.Graph) -> None:
    """The ETRecord's layers and the partitioner rules' reasons (issue 13) on the method graph.

    Node attributes: module, class, source line, why not delegated. Group attributes: modules
    covered, the cause of each CPU island, why. Kernel calls in a CPU island of more than
    NEST_LAYERS_ABOVE instructions are nested in their layers ("CPU island 1/features/features.0"),
    so a large island opens one layer at a time, while a small one (the few kernels between two
    NPU partitions) shows its kernels as soon as it is opened. The first namespace component stays
    the partition, which everything else keys on.
    """
    method, parts, msrc, reasons = ma.method, ma.partitions, ma.source, ma.reasons
    if msrc is None and not reasons:
        return
    by_ins: dict[int, list[Reason]] = {}
    for r in reasons:
        by_ins.setdefault(r.instruction, []).append(r)
    nodes = {n.id: n for n in graph.nodes}
    ids = ma.instruction_ids
    for ins in method.instructions:
        node = nodes.get(ids[ins.index])
        if node is None:
            continue
        src = msrc.instructions.get(ins.index) if msrc else None
        node.attrs.extend(
            _kv({**instruction_source_facts(src), **why_facts(by_ins.get(ins.index, []))})
        )
        part = parts.partitions[parts.partition_of[ins.index]]
        layers = layer_namespace(src)
        if (
            part.is_cpu
            and len(part.instructions) > NEST_LAYERS_ABOVE
            and layers
            and ins.kind is InstructionKind.KERNEL
        ):
            node.namespace = "/".join([part.name, *layers])
    psrc = ma.partition_sources
    for part in parts.partitions:
        mine = [r for r in reasons if parts.partition_of[r.instruction] == part.index]
        graph.groupNodeAttributes.setdefault(part.name, {}).update(
            partition_source_facts(psrc[part.index], mine)
        )


def _connect(
    node: gb.GraphNode, edges: list[TensorEdge], sources: Callable[[TensorEdge], list[Source]]
) -> None:
    for edge in edges:
        for src, out in sources(edge):
            node.incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=src,
                    sourceNodeOutputId=out,
                    targetNodeInputId=str(edge.consumer_input),
                )
            )


def tensor_label(method: Method, value: int) -> str:
    """ "[1, 3, 224, 224] int8, 147.0 KiB": what a boundary edge carries (printable ASCII only:
    Model Explorer's canvas font has nothing else)."""
    t = method.tensor(value)
    if t is None:
        return f"%{value}"
    size = facts.human_bytes(t.nbytes).split(" (")[0]
    return f"[{', '.join(str(s) for s in t.sizes)}] {t.dtype}, {size}"


def _boundary_nodes(
    method: Method,
    graph: gb.Graph,
    source_value: dict[Source, int],
    node_partition: dict[str, str],
    part_order: dict[str, int],
    cpu_sides: set[str],
    roles: dict[str, str],
    block_of: dict[str, str],
) -> list[gb.GraphNode]:
    """A node on each partition-to-partition edge saying which tensors cross there.

    It sits outside every group, so it stays visible when the partitions are collapsed, and its
    label says what crosses: "[1, 3, 224, 224] int8, 147.0 KiB", or "[1, 128, 768] float32 +1 more,
    768.0 KiB" when several tensors take the same way (all of them are in its attributes, input k
    and output k being tensor k). Model Explorer's own edge labels are a user setting, off by
    default, and its edge overlays are only drawn between visible op nodes: neither shows on a
    collapsed partition. One node per pair of partitions, not per tensor, because every edge costs
    drawing time (most of the time to the first screen of a large program goes into edges).
    """
    boundaries: dict[tuple[str, str], gb.GraphNode] = {}
    values: dict[tuple[str, str], list[int | Source]] = {}
    froms: dict[tuple[str, str], list[str]] = {}  # where the tensors come from
    crossings: dict[tuple[str, str], list[tuple[int, str, str]]] = {}  # (value, from, to)
    # Position of each top-level item (a block, or a partition in none) in execution order.
    top_order: dict[str, int] = {}
    block_names = set(block_of.values())
    for name in sorted(part_order, key=part_order.__getitem__):
        top_order.setdefault(block_of.get(name, name), len(top_order))
    for node in graph.nodes:
        target_part = node_partition.get(node.id)
        for e in node.incomingEdges:
            source_part = node_partition.get(e.sourceNodeId)
            if source_part is None or target_part is None or source_part == target_part:
                continue
            if source_part in cpu_sides and target_part in cpu_sides:
                continue  # CPU to CPU (method inputs and outputs count as CPU): no boundary
            src = (e.sourceNodeId, e.sourceNodeOutputId)
            v = source_value.get(src)
            # Between two partitions of one block: inside that block. Between blocks: one node
            # per pair of blocks (or of a block and a partition on its own), at the top level.
            inside = block_of.get(source_part, 1) == block_of.get(target_part, 2)
            ends = (
                (source_part, target_part)
                if inside
                else (
                    block_of.get(source_part, source_part),
                    block_of.get(target_part, target_part),
                )
            )
            # Everything entering a block from outside it shares one node: "into blocks.3".
            key = ("", ends[1]) if ends[1] in block_names and not inside else ends
            b = boundaries.get(key)
            if b is None:
                b = boundaries[key] = gb.GraphNode(
                    id=f"b.{roles.get(key[0], key[0] or 'into')}.{roles.get(key[1], key[1])}",
                    label="",
                    namespace=block_of[source_part] if inside else "",
                    style=_style(BOUNDARY_TENSOR_COLOUR),
                )
                values[key] = []
                froms[key] = []
                crossings[key] = []
            if ends[0] not in froms[key]:
                froms[key].append(ends[0])
            if v is not None and (v, source_part, target_part) not in crossings[key]:
                crossings[key].append((v, source_part, target_part))
            tensor: int | Source = v if v is not None else src
            if tensor not in values[key]:
                values[key].append(tensor)
                pos = str(len(values[key]) - 1)
                meta = tensor_metadata(method, v) if v is not None else []
                b.inputsMetadata.append(gb.MetadataItem(id=pos, attrs=meta))
                b.outputsMetadata.append(gb.MetadataItem(id=pos, attrs=meta))
            pos = str(values[key].index(tensor))
            # A tensor read far downstream (an attention mask every layer reads) is shown beside
            # each distant reader without an edge across the whole graph: long edges make the
            # layout slow and the picture unreadable.
            # Between blocks, the distance counts blocks (and partitions on their own).
            order = part_order if inside else top_order
            far = (
                len(part_order) - 2 > SMALL_METHOD  # the order holds method input/output too
                and order[ends[1]] - order[ends[0]] > NEAR_PARTITIONS
            )
            if not far and not any(
                x.sourceNodeId == src[0] and x.sourceNodeOutputId == src[1] for x in b.incomingEdges
            ):
                b.incomingEdges.append(
                    gb.IncomingEdge(
                        sourceNodeId=src[0], sourceNodeOutputId=src[1], targetNodeInputId=pos
                    )
                )
            e.sourceNodeId, e.sourceNodeOutputId = b.id, pos
        # Several writers of one tensor now reach this node through one boundary node: one edge.
        unique = {
            (e.sourceNodeId, e.sourceNodeOutputId, e.targetNodeInputId): e
            for e in node.incomingEdges
        }
        node.incomingEdges = list(unique.values())
    for (source_part, target_part), b in boundaries.items():
        tensors = [v for v in values[(source_part, target_part)] if isinstance(v, int)]
        total = sum(t.nbytes for v in tensors if (t := method.tensor(v)) is not None)
        first = tensor_label(method, tensors[0]).rsplit(",", 1)[0] if tensors else "tensor"
        more = (
            f" +{len(values[(source_part, target_part)]) - 1} more"
            if len(values[(source_part, target_part)]) > 1
            else ""
        )
        b.label = f"{first}{more}, {facts.human_bytes(total).split(' (')[0]}"
        attrs = {
            "boundary": f"{' and '.join(froms[(source_part, target_part)])} to {target_part}",
            "tensors": "\n".join(tensor_label(method, v) + f" (%{v})" for v in tensors),
            "bytes": str(total),
            # Each crossing it stands for, partition to partition (one line per receiver).
            "crossings": "\n".join(
                f"%{v} {a} to {z}" for v, a, z in crossings[(source_part, target_part)]
            ),
        }
        if not b.incomingEdges:
            gap = part_order.get(target_part, 0) - part_order.get(source_part, 0)
            attrs["drawn_as"] = f"beside its reader, without the edge from {source_part}" + (
                f" ({gap} partitions earlier)" if gap > 0 else ""
            )
        elif len(b.incomingEdges) < len(froms[(source_part, target_part)]):
            attrs["drawn_as"] = "beside its reader; edges only from the block or partition before"
        b.attrs = _kv(attrs)
    return list(boundaries.values())


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())


def _regex_escape(s: str) -> str:
    return "".join("\\" + c if c in r"\.^$*+?{}[]|()" else c for c in s)


# -- delegate graphs ------------------------------------------------------------------------------


def _tensor_attrs(t: TensorInfo) -> list[gb.KeyValue]:
    attrs: dict[str, str] = {"tensor": t.name or t.id}
    if t.shape is not None:
        attrs["shape"] = "[" + ", ".join(str(s) for s in t.shape) + "]"
    if t.dtype:
        attrs["dtype"] = t.dtype
    attrs.update(t.attrs)
    return _kv(attrs)


def delegate_graph(
    view: DelegateGraph, graph_id: str, sibling_ids: dict[str, str], colours: tuple[str, str]
) -> gb.Graph:
    """One neutral DelegateGraph as a Model Explorer graph with Inputs/Outputs nodes."""
    graph = gb.Graph(id=graph_id)
    # A tensor can have several writers: an NPU output is often written in slices by several
    # operations (e.g. the channels of a concatenation); every writer gets its edge.
    producers: dict[str, list[tuple[str, int]]] = {}
    inputs = gb.GraphNode(id="delegate_inputs", label="Delegate Inputs")
    for pos, tid in enumerate(view.inputs):
        producers.setdefault(tid, []).append((inputs.id, pos))
        t = view.tensors.get(tid, TensorInfo(tid))
        inputs.outputsMetadata.append(gb.MetadataItem(id=str(pos), attrs=_tensor_attrs(t)))
    graph.nodes.append(inputs)

    def read(node: gb.GraphNode, tids: list[str]) -> None:
        """Input metadata and an edge from every writer, for each tensor `node` reads."""
        for pos, tid in enumerate(tids):
            t = view.tensors.get(tid, TensorInfo(tid))
            node.inputsMetadata.append(gb.MetadataItem(id=str(pos), attrs=_tensor_attrs(t)))
            for src, out in producers.get(tid, []):
                node.incomingEdges.append(
                    gb.IncomingEdge(
                        sourceNodeId=src, sourceNodeOutputId=str(out), targetNodeInputId=str(pos)
                    )
                )

    used_ids = {inputs.id, "delegate_outputs"}
    for op in view.nodes:
        nid = f"op_{op.id}"
        while nid in used_ids:
            nid += "_"
        used_ids.add(nid)
        node = gb.GraphNode(
            id=nid,
            label=op.label or op.kind,
            namespace=op.namespace,
            attrs=_kv({"kind": op.kind, **op.attrs}),
            style=_style(colours),
        )
        node.subgraphIds = [sibling_ids[s] for s in op.subgraphs if s in sibling_ids]
        read(node, op.inputs)
        for pos, tid in enumerate(op.outputs):
            producers.setdefault(tid, []).append((nid, pos))
            t = view.tensors.get(tid, TensorInfo(tid))
            node.outputsMetadata.append(gb.MetadataItem(id=str(pos), attrs=_tensor_attrs(t)))
        graph.nodes.append(node)
    outputs = gb.GraphNode(id="delegate_outputs", label="Delegate Outputs")
    read(outputs, view.outputs)
    graph.nodes.append(outputs)
    graph.groupNodeAttributes = {"": dict(view.attrs)}
    return graph


def view_op_node_ids(ma: MethodAnalysis, instruction: int, view_name: str) -> list[str] | None:
    """Ids of a delegate view's operations in the method graph, in the view's node order (as
    `method_graph` numbers them); None when the view is drawn as a separate graph or not at all."""
    method, parts = ma.method, ma.partitions
    d = method.instructions[instruction].delegate_index
    if d is None or not 0 <= d < len(method.delegates):
        return None
    flow = parts.dataflow
    contents = _contents(
        method,
        parts,
        method.delegates[d],
        len(flow.edges[instruction]),
        len(flow.io[instruction].output_tensors),
    )
    prefix = ma.instruction_ids[instruction]
    if contents.inline is not None and contents.inline.name == view_name:
        return [f"{prefix}.{pos}" for pos in range(len(contents.inline.nodes))]
    for view in contents.nested:
        if view.name == view_name:
            return [f"{prefix}.{_slug(view.name)}.{pos}" for pos in range(len(view.nodes))]
    return None


def delegate_graph_id(method_graph_id: str, partition_name: str, view_name: str) -> str:
    """Id of a delegate view's graph: unique across the response, readable in the graph list."""
    return f"{method_graph_id} / {partition_name} / {view_name}"


def program_graphs(result: ProgramAnalysis) -> list[gb.Graph]:
    """One graph per method (first, so Model Explorer lists them first), then the control-flow
    blocks its delegate nodes link to. Every delegate view is drawn inside its method graph, so a
    method graph always has more nodes than any other graph: Model Explorer opens the graph with the
    most nodes, and that is the method's partitions."""
    graphs: list[gb.Graph] = []
    extra: list[gb.Graph] = []
    for ma in result.methods:
        graph, separate = method_graph(result, ma, ma.name)
        graphs.append(graph)
        extra.extend(separate)
    return graphs + extra


def graphs_to_json(graphs: Iterable[gb.Graph], label: str = "program") -> dict[str, Any]:
    """A graph collection as JSON: what Model Explorer's built-in JSON loader opens.

    The loader accepts `{"label": ..., "graphs": [...]}` (a GraphCollection), not the
    `{"graphs": [...]}` that adapters return to the server.
    """
    return {"label": label, "graphs": [asdict(g) for g in graphs]}
