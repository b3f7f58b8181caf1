"""One instruction as a plan node: label, colour, attributes, tensor ports.

Labels are short (the full operator name with overload, or the delegate id); everything else is in
attributes and in the metadata of each input and output (reduced to what Model Explorer shows once
the edges are known: `render/plan/inputs.py`)."""

from __future__ import annotations

import json

from pte_adapter.analysis.dataflow import Dataflow
from pte_adapter.analysis.partitions import Partition
from pte_adapter.backends import (
    CPU_COMPUTE_COLOUR,
    CPU_CONTROL_COLOUR,
    CPU_GLUE_COLOUR,
    backend_colour,
)
from pte_adapter.program.model import (
    DELEGATE,
    FREE,
    INT_LIST,
    JUMP_FALSE,
    KERNEL,
    MOVE,
    NULL,
    STRING,
    TENSOR,
    TENSOR_KINDS,
    TENSOR_LISTS,
    Instruction,
    Method,
)
from pte_adapter.render import facts
from pte_adapter.render.facts import instruction_label
from pte_adapter.render.plan.graph import AttrValue, Colour, Node, NodeLink, Port

INPUTS_ID = "inputs"
OUTPUTS_ID = "outputs"


# The operator namespace a kernel's drawn label leaves out (every other namespace is kept).
DEFAULT_NAMESPACE = "aten::"


def drawn_kernel_label(full_name: str) -> str:
    """A kernel call's node label: `aten::mul.Scalar_out` drawn as `mul.Scalar`, `aten::add.out`
    as `add`, `quantized_decomposed::quantize_per_tensor.out` as
    `quantized_decomposed::quantize_per_tensor`. Every kernel of a program is an out variant and
    most are ATen's, so that much says nothing on the canvas, while each character is a glyph
    Model Explorer draws on every frame: the label's characters are most of the time a large
    expanded graph takes to draw (docs/benchmarks.md). The full name is the node's first
    attribute, `operator`."""
    name, dot, overload = full_name.partition(".")
    overload = overload.removesuffix("out").removesuffix("_") if dot else ""
    name = name.removeprefix(DEFAULT_NAMESPACE) or name
    return f"{name}.{overload}" if overload else name


def _instruction_colour(ins: Instruction, label: str, part: Partition) -> Colour:
    if ins.kind is DELEGATE:
        return backend_colour(part.backend)
    if ins.kind is KERNEL:  # the partition has sorted its kernels already
        return CPU_GLUE_COLOUR if label in part.glue_ops else CPU_COMPUTE_COLOUR
    return CPU_CONTROL_COLOUR


def value_text(method: Method, v: int) -> str:
    """A non-tensor argument as text (for attributes)."""
    values = method.values
    if not 0 <= v < len(values):
        return f"<missing value {v}>"
    val = values[v]
    kind = val.kind
    if kind is INT_LIST and isinstance(val.payload, list):
        n = len(values)
        items = [values[i].payload if 0 <= i < n else "?" for i in map(int, val.payload)]
        return "[" + ", ".join(map(str, items)) + "]"
    if kind is NULL:
        return "None"
    if kind is STRING:
        return str(json.dumps(val.payload))
    if kind in TENSOR_LISTS and isinstance(val.payload, list):
        return "[" + ", ".join("None" if int(i) < 0 else f"%{i}" for i in val.payload) + "]"
    if kind is TENSOR:
        return f"%{v}"
    return str(val.payload)


def tensor_port(
    method: Method, pos: int, v: int, known: dict[int, dict[str, str]] | None = None
) -> Port:
    """The port at `pos` showing tensor `v` (`known`: the attributes of tensors already shown on
    another port of the method, by value index; a tensor is on one output and many inputs)."""
    attrs = known.get(v) if known is not None else None
    if attrs is None:
        attrs = {"value_index": str(v)}
        tensor = method.tensor(v)
        if tensor is not None:
            facts.tensor_facts(tensor, method, attrs)
        if known is not None:
            known[v] = attrs
    return Port(str(pos), attrs)


def jump_target(method: Method, ins: Instruction) -> int | None:
    """Index of the instruction a JumpFalseCall may jump to; None for the end of its chain."""
    chain = method.chains[ins.chain]
    dest = ins.destination or 0
    if dest >= chain.num_instructions:
        return None
    return chain.first_instruction + dest


def jump_target_id(method: Method, ins: Instruction, ids: list[str]) -> str:
    target = jump_target(method, ins)
    return OUTPUTS_ID if target is None else ids[target]


def _jump_target_text(method: Method, ins: Instruction) -> str:
    target = jump_target(method, ins)
    if target is None:
        return f"{ins.destination} (end of chain)"
    return f"{ins.destination} ({instruction_label(method, method.instructions[target])})"


def _call_attrs(
    method: Method, ins: Instruction, flow: Dataflow, attrs: dict[str, AttrValue]
) -> None:
    """Arguments of a KernelCall or DelegateCall, added to `attrs`: the non-tensor ones by value,
    and a delegate's I/O split and payload facts."""
    io = flow.io[ins.index]
    attrs["args"] = str(list(ins.args))  # "[3, 5]": a list of ints prints as the attribute shows it
    written = set(io.outputs)
    values = method.values
    for pos, a in enumerate(ins.args):
        if a not in written and 0 <= a < len(values) and values[a].kind not in TENSOR_KINDS:
            attrs[f"arg{pos}"] = value_text(method, a)
    if ins.kind is KERNEL:
        if ins.op_index is not None:
            attrs["operator_index"] = str(ins.op_index)
        return
    attrs["io_split"] = (
        f"{len(io.inputs)} inputs, {len(io.outputs)} outputs "
        f"({'from the payload' if io.split_rule == 'payload' else 'by the dataflow rule'})"
    )
    d = ins.delegate_index
    if d is not None and 0 <= d < len(method.delegates):
        delegate = facts.delegate_facts(method.delegates[d])
        if method.delegates[d].id:  # the node is labelled with it (instruction_label)
            del delegate["backend_id"]
        attrs.update(delegate)


def instruction_node(
    method: Method,
    ins: Instruction,
    part: Partition,
    flow: Dataflow,
    ids: list[str],
    group: str,
    known: dict[int, dict[str, str]] | None = None,
) -> Node:
    """The instruction's node in `group`, its partition's group (`render/group_facts.py`); `known` as
    for `tensor_port`."""
    label = instruction_label(method, ins)
    kind = ins.kind
    # A kernel's full name, where the panel opens (its drawn label is short: drawn_kernel_label).
    attrs: dict[str, AttrValue] = {"operator": label} if kind is KERNEL else {}
    attrs["instruction"] = str(ins.index)
    if kind is not KERNEL:  # a node named by its operator is a kernel call
        attrs["kind"] = kind.value
    attrs["partition"] = part.name
    if len(method.chains) > 1:
        attrs["chain"] = f"{ins.chain} (position {ins.chain_position})"
    if kind is KERNEL or kind is DELEGATE:
        _call_attrs(method, ins, flow, attrs)
    elif kind is MOVE:
        attrs["move"] = f"%{ins.move_from} → %{ins.move_to}"
    elif kind is FREE:
        attrs["frees"] = f"%{ins.free_value}"
    elif kind is JUMP_FALSE:
        attrs["condition"] = f"%{ins.cond_value} = {value_text(method, ins.cond_value or 0)}"
        attrs["jumps_if_false_to"] = _jump_target_text(method, ins)
        attrs["jump_target_node"] = NodeLink((jump_target_id(method, ins, ids),))
    # Inputs: every tensor read (edges are added by the method graph, which knows where each
    # tensor really comes from; constants have metadata but no edge).
    inputs = [tensor_port(method, e.consumer_input, e.value, known) for e in flow.edges[ins.index]]
    written = flow.io[ins.index].output_tensors
    return Node(
        ids[ins.index],
        drawn_kernel_label(label) if kind is KERNEL else label,
        group,
        _instruction_colour(ins, label, part),
        attrs,
        inputs,
        [tensor_port(method, pos, v, known) for pos, v in enumerate(written)],
    )
