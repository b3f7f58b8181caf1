"""Model Explorer graphs from the typed program: one graph per method, one per delegate view.

Conventions:
- node ids: "inputs", "outputs", "i<instruction index>" in a method graph; delegate views are
  separate graphs whose ids are unique across the response
  ("forward / NPU partition 1 (EthosUBackend) / NPU operations").
- every instruction sits in the namespace of its partition ("NPU partition 2 (EthosUBackend)",
  "CPU island 1"), coloured per backend; q/dq/copy glue and control instructions get muted colours.
- labels are short (full operator name with overload, or the delegate id); everything else is in
  attributes and input/output metadata. Graph-level numbers sit in `groupNodeAttributes[""]`, shown
  when nothing is selected.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from model_explorer import graph_builder as gb

from pte_adapter.analysis.dataflow import FROM_METHOD_INPUT, Dataflow
from pte_adapter.analysis.partitions import (
    CPU,
    MethodPartitions,
    Partition,
    is_glue,
    partition_method,
)
from pte_adapter.delegates.graph import DelegateGraph, TensorInfo
from pte_adapter.program import (
    Delegate,
    Instruction,
    InstructionKind,
    Method,
    Program,
    Value,
    ValueKind,
)
from pte_adapter.render import facts

# (background, border) per backend; CPU compute is the colour that should catch the eye.
BACKEND_COLOURS: dict[str, tuple[str, str]] = {
    "EthosUBackend": ("#ffe0b2", "#e65100"),
    "XnnpackBackend": ("#bbdefb", "#0d47a1"),
    "TOSABackend": ("#e1bee7", "#4a148c"),
    "VgfBackend": ("#c8e6c9", "#1b5e20"),
}
OTHER_DELEGATE_COLOUR = ("#b2ebf2", "#006064")
CPU_COMPUTE_COLOUR = ("#ffcdd2", "#b71c1c")
CPU_GLUE_COLOUR = ("#f5f5f5", "#9e9e9e")
CPU_CONTROL_COLOUR = ("#fff9c4", "#827717")
CPU_GROUP_COLOUR = ("#fff3f3", "#b71c1c")

INPUTS_ID = "inputs"
OUTPUTS_ID = "outputs"


def backend_colour(backend: str) -> tuple[str, str]:
    if backend == CPU:
        return CPU_GROUP_COLOUR
    return BACKEND_COLOURS.get(backend, OTHER_DELEGATE_COLOUR)


def _kv(attrs: dict[str, str]) -> list[gb.KeyValue]:
    return [gb.KeyValue(key=k, value=str(v)) for k, v in attrs.items()]


def _style(colours: tuple[str, str]) -> gb.GraphNodeStyle:
    return gb.GraphNodeStyle(
        backgroundColor=colours[0], borderColor=colours[1], hoveredBorderColor=colours[1]
    )


def node_id(index: int) -> str:
    return f"i{index}"


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
    delegate_graph_ids: dict[int, list[str]],
) -> gb.GraphNode:
    io = flow.io[ins.index]
    node = gb.GraphNode(
        id=node_id(ins.index),
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
            node.subgraphIds = list(delegate_graph_ids.get(d, []))
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
                value=gb.NodeIdsNodeAttributeValue(nodeIds=[_jump_target_id(method, ins)]),
            )
        )

    # Inputs: every tensor read, with its producer (constants have metadata but no edge).
    for edge in flow.edges[ins.index]:
        node.inputsMetadata.append(
            gb.MetadataItem(id=str(edge.consumer_input), attrs=tensor_metadata(method, edge.value))
        )
        if edge.producer >= 0:
            node.incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=node_id(edge.producer),
                    sourceNodeOutputId=str(edge.producer_output),
                    targetNodeInputId=str(edge.consumer_input),
                )
            )
        elif edge.producer == FROM_METHOD_INPUT:
            node.incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=INPUTS_ID,
                    sourceNodeOutputId=str(edge.producer_output),
                    targetNodeInputId=str(edge.consumer_input),
                )
            )
    for pos, v in enumerate(io.output_tensors):
        node.outputsMetadata.append(gb.MetadataItem(id=str(pos), attrs=tensor_metadata(method, v)))
    return node


INNER_OP_WORDS = {
    "EthosUBackend": "NPU ops",
    "XnnpackBackend": "XNNPACK nodes",
    "TOSABackend": "TOSA ops",
}


def partition_info_node(method: Method, part: Partition) -> gb.GraphNode:
    """A node pinned to the top of its partition's group, carrying the partition's numbers.

    Model Explorer dissolves a group whose only child is one node (the default setting), and every
    delegate partition is a single DelegateCall: without this node, NPU partitions would not show as
    groups at all. Its id is "p<k>"; it has no edges.
    """
    if part.is_cpu:
        compute, glue = sum(part.compute_ops.values()), sum(part.glue_ops.values())
        label = f"{compute} compute, {glue} glue"
        if part.control:
            label += f", {sum(part.control.values())} control"
        colours = CPU_GROUP_COLOUR
    else:
        word = INNER_OP_WORDS.get(part.backend, "inner ops")
        label = f"{part.inner_ops} {word}" if part.inner_ops is not None else "not decoded"
        colours = backend_colour(part.backend)
    return gb.GraphNode(
        id=f"p{part.index}",
        label=label,
        namespace=part.name,
        attrs=_kv({"group": part.name, **facts.partition_facts(method, part)}),
        style=_style(colours),
        config=gb.GraphNodeConfig(pinToGroupTop=True),
    )


def _jump_target_id(method: Method, ins: Instruction) -> str:
    chain = method.chains[ins.chain]
    dest = ins.destination or 0
    if dest >= chain.num_instructions:
        return OUTPUTS_ID
    return node_id(chain.first_instruction + dest)


def _jump_target_text(method: Method, ins: Instruction) -> str:
    target = _jump_target_id(method, ins)
    if target == OUTPUTS_ID:
        return f"{ins.destination} (end of chain)"
    index = int(target[1:])
    return f"{ins.destination} ({instruction_label(method, method.instructions[index])})"


def method_graph(
    program: Program,
    method: Method,
    parts: MethodPartitions,
    delegate_graph_ids: dict[int, list[str]],
    graph_id: str,
) -> gb.Graph:
    flow = parts.dataflow
    graph = gb.Graph(id=graph_id)
    inputs = gb.GraphNode(id=INPUTS_ID, label="Graph Inputs")
    for pos, v in enumerate(method.inputs):
        inputs.outputsMetadata.append(
            gb.MetadataItem(id=str(pos), attrs=tensor_metadata(method, v))
        )
    graph.nodes.append(inputs)
    graph.nodes.extend(partition_info_node(method, part) for part in parts.partitions)

    for ins in method.instructions:
        part = parts.partitions[parts.partition_of[ins.index]]
        graph.nodes.append(_instruction_node(method, ins, part, flow, delegate_graph_ids))

    outputs = gb.GraphNode(id=OUTPUTS_ID, label="Graph Outputs")
    for edge in flow.output_edges:
        outputs.inputsMetadata.append(
            gb.MetadataItem(id=str(edge.consumer_input), attrs=tensor_metadata(method, edge.value))
        )
        source = (
            node_id(edge.producer)
            if edge.producer >= 0
            else INPUTS_ID
            if edge.producer == FROM_METHOD_INPUT
            else None
        )
        if source is not None:
            outputs.incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=source,
                    sourceNodeOutputId=str(edge.producer_output),
                    targetNodeInputId=str(edge.consumer_input),
                )
            )
    # Control flow: a visible edge from each JumpFalseCall to where it may jump.
    by_id = {n.id: n for n in graph.nodes}
    by_id[OUTPUTS_ID] = outputs
    for ins in method.instructions:
        if ins.kind is InstructionKind.JUMP_FALSE:
            by_id[_jump_target_id(method, ins)].incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=node_id(ins.index),
                    sourceNodeOutputId="jump_if_false",
                    targetNodeInputId="control",
                )
            )
    graph.nodes.append(outputs)

    graph.groupNodeAttributes = {"": facts.method_facts(program, method, parts)}
    configs: list[gb.GroupNodeConfig] = []
    for part in parts.partitions:
        graph.groupNodeAttributes[part.name] = facts.partition_facts(method, part)
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
    return graph


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


def delegate_graph_id(method_graph_id: str, partition_name: str, view_name: str) -> str:
    """Id of a delegate view's graph: unique across the response, readable in the graph list."""
    return f"{method_graph_id} / {partition_name} / {view_name}"


def _delegate_graphs(method_graph_id: str, part: Partition, delegate: Delegate) -> list[gb.Graph]:
    views = delegate.decoded.graphs
    ids = {v.name: delegate_graph_id(method_graph_id, part.name, v.name) for v in views}
    colours = backend_colour(part.backend)
    return [delegate_graph(v, ids[v.name], ids, colours) for v in views]


# -- whole program ------------------------------------------------------------------------------


def program_graphs(program: Program) -> list[gb.Graph]:
    graphs: list[gb.Graph] = []
    for method in program.methods:
        parts = partition_method(method)
        gid = method.name
        delegate_graph_ids: dict[int, list[str]] = {}
        sub: list[gb.Graph] = []
        for part in parts.delegate_partitions:
            d = part.delegate_index
            if d is None or not 0 <= d < len(method.delegates) or d in delegate_graph_ids:
                continue
            built = _delegate_graphs(gid, part, method.delegates[d])
            delegate_graph_ids[d] = [g.id for g in built]
            sub.extend(built)
        graphs.append(method_graph(program, method, parts, delegate_graph_ids, gid))
        graphs.extend(sub)
    return graphs


def graphs_to_json(graphs: Iterable[gb.Graph], label: str = "program") -> dict[str, Any]:
    """A graph collection as JSON: what Model Explorer's built-in JSON loader opens.

    The loader accepts `{"label": ..., "graphs": [...]}` (a GraphCollection), not the
    `{"graphs": [...]}` that adapters return to the server.
    """
    return {"label": label, "graphs": [asdict(g) for g in graphs]}
