"""Turn a `TosaModel` into backend-neutral `DelegateGraph`s: one per basic block, main first."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pte_adapter.delegates.tosa.debuginfo import (
    DebugJson,
    OpDebugInfo,
    info_from_event,
    parse_location,
)
from pte_adapter.delegates.tosa.reader import TosaBlock, TosaModel, TosaOperator, TosaTensor
from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo

# Operators that only materialise data; they are not work the delegate does.
DATA_OPS = frozenset({"CONST", "CONST_SHAPE"})


@dataclass
class TosaGraphs:
    graphs: list[DelegateGraph]  # main block first
    problems: list[str] = field(default_factory=list)
    debug_ops: int = 0  # operators that got source information
    debug_source: str = ""  # "location" / the debug.json path / ""


def graph_names(model: TosaModel, main_name: str, prefix: str) -> list[str]:
    """A DelegateGraph name per block: `main_name` for the main block, `prefix <block>` else."""
    names = [main_name]
    for block in model.blocks[1:]:
        label = block.name if block.name == block.region else f"{block.region}/{block.name}"
        names.append(f"{prefix} {label}")
    seen: Counter[str] = Counter()
    unique = []
    for name in names:
        seen[name] += 1
        unique.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return unique


def to_delegate_graphs(
    model: TosaModel,
    *,
    main_name: str = "TOSA main",
    prefix: str = "TOSA",
    debug_json: DebugJson | None = None,
) -> TosaGraphs:
    names = graph_names(model, main_name, prefix)
    # Control flow names a region (ExecuTorch: one block per region, same name) or a block.
    by_ref: dict[str, str] = {}
    for block, name in zip(model.blocks, names, strict=True):
        by_ref.setdefault(block.region, name)
    for block, name in zip(model.blocks, names, strict=True):
        by_ref[block.name] = name
    result = TosaGraphs([], list(model.problems))
    if debug_json is not None and debug_json.problem:
        result.problems.append(f"no source mapping: {debug_json.problem}")
    for block, name in zip(model.blocks, names, strict=True):
        result.graphs.append(_block_graph(block, name, model, by_ref, debug_json, result))
    if debug_json is not None and result.debug_ops:
        result.debug_source = str(debug_json.path)
    return result


def _op_debug(
    op: TosaOperator, debug_json: DebugJson | None, result: TosaGraphs
) -> OpDebugInfo | None:
    """Where an operator came from: its own location, else the debug.json beside the file."""
    info: OpDebugInfo | None = None
    if op.location:
        info = parse_location(op.location)
        if result.debug_source == "" and "aten_node" in info.attrs:
            result.debug_source = "location"
    elif debug_json is not None and op.outputs:
        hit = debug_json.by_output.get(op.outputs[0])
        if hit is not None and hit[0] in (None, op.code):
            info = info_from_event(hit[1])
    if info is not None and "aten_node" in info.attrs:
        result.debug_ops += 1
    return info


def _op_node(
    op: TosaOperator,
    graph: DelegateGraph,
    block: TosaBlock,
    by_ref: dict[str, str],
    info: OpDebugInfo | None,
    result: TosaGraphs,
) -> OpNode:
    attrs = dict(op.attrs)
    if info is not None:
        attrs.update(info.attrs)
    subgraphs = []
    for key, ref in op.block_refs:
        target = by_ref.get(ref)
        if target is None:
            result.problems.append(
                f"{graph.name}: {op.kind} operator {op.index} names {key} {ref!r}, which is not a block of this graph"
            )
        else:
            subgraphs.append(target)
    for tname in (*op.inputs, *op.outputs):
        if tname and tname not in graph.tensors:
            # Every tensor should be declared; keep the edge and say it was not.
            graph.tensors[tname] = TensorInfo(id=tname, name=tname, attrs={"declared": "false"})
            result.problems.append(
                f"{graph.name}: tensor {tname!r} is used but not declared in block {block.name!r}"
            )
    return OpNode(
        id=f"op{op.index}",
        kind=op.kind,
        label=op.kind,
        inputs=[t for t in op.inputs if t],
        outputs=[t for t in op.outputs if t],
        attrs=attrs,
        namespace=info.namespace if info is not None else "",
        subgraphs=subgraphs,
        source_nodes=(info.source_node,) if info is not None and info.source_node else (),
    )


def _block_graph(
    block: TosaBlock,
    name: str,
    model: TosaModel,
    by_ref: dict[str, str],
    debug_json: DebugJson | None,
    result: TosaGraphs,
) -> DelegateGraph:
    graph = DelegateGraph(name=name)
    for tensor in block.tensors.values():
        graph.tensors[tensor.name] = _tensor_info(tensor)
    with_info: set[str] = set()  # operators whose debug info names their aten node
    for op in block.operators:
        info = _op_debug(op, debug_json, result)
        node = _op_node(op, graph, block, by_ref, info, result)
        if info is not None and info.attrs.get("aten_node"):
            with_info.add(node.id)
        graph.nodes.append(node)
    _inherit_namespaces(graph, with_info)
    graph.inputs = [t for t in block.inputs if t in graph.tensors]
    graph.outputs = [t for t in block.outputs if t in graph.tensors]
    for t in (*block.inputs, *block.outputs):
        if t not in graph.tensors:
            result.problems.append(f"{name}: block input/output {t!r} is not a declared tensor")
    kinds = Counter(n.kind for n in graph.nodes)
    graph.attrs.update(
        {
            "tosa_version": str(model.version),
            "region": block.region,
            "block": block.name,
            "operators": str(len(graph.nodes)),
            "compute_operators": str(sum(c for k, c in kinds.items() if k not in DATA_OPS)),
            "tensors": str(len(block.tensors)),
            "constant_bytes": str(sum(t.data_size for t in block.tensors.values())),
            "op_counts": format_counts(kinds),
        }
    )
    return graph


def _inherit_namespaces(graph: DelegateGraph, with_info: set[str]) -> None:
    """Put operators without source info (CONST, helper ops) in the module of their consumers.

    Walks the block backwards, so a chain of helpers ends up where its final consumer is; an
    operator whose consumers sit in different modules stays where it is.
    """
    consumers: dict[str, list[OpNode]] = {}
    for node in graph.nodes:
        for t in node.inputs:
            consumers.setdefault(t, []).append(node)
    # The namespaces reading each tensor, computed once: walking backwards in block order, a
    # tensor's consumers are settled before its producers are visited. (Recomputing them per
    # producer was quadratic when many operators write one tensor.)
    readers: dict[str, set[str]] = {}

    def spaces_of(t: str) -> set[str]:
        if t not in readers:
            readers[t] = {c.namespace for c in consumers.get(t, [])}
        return readers[t]

    for node in reversed(graph.nodes):
        if node.id in with_info or node.namespace:
            continue
        spaces: set[str] = set()
        for t in dict.fromkeys(node.outputs):
            spaces |= spaces_of(t)
            if len(spaces) > 1:
                break
        if len(spaces) == 1:
            (space,) = spaces
            if space:
                node.namespace = space


def _tensor_info(tensor: TosaTensor) -> TensorInfo:
    attrs: dict[str, str] = {}
    if tensor.tosa_dtype not in ("", tensor.dtype.upper()):
        attrs["tosa_dtype"] = tensor.tosa_dtype
    if tensor.data_size:
        attrs["constant_bytes"] = str(tensor.data_size)
    if tensor.values is not None:
        shown = ", ".join(repr(v) if isinstance(v, float) else str(v) for v in tensor.values)
        attrs["values"] = shown if len(tensor.values) == 1 else f"[{shown}]"
    if tensor.variable:
        attrs["variable"] = "true"
    if tensor.variable_name:
        attrs["variable_name"] = tensor.variable_name
    if tensor.unranked:
        attrs["unranked"] = "true"
    if tensor.external_size:
        attrs["external_data"] = (
            f"{tensor.external_size} bytes at file offset {tensor.external_offset}"
        )
    if tensor.is_shape and tensor.shape:
        attrs["kind"] = "shape"
        attrs["rank"] = str(tensor.shape[0])
    return TensorInfo(
        id=tensor.name,
        name=tensor.name,
        shape=None if tensor.is_shape else tensor.shape,
        dtype=tensor.dtype,
        attrs=attrs,
        constant_bytes=tensor.data_size or None,
    )


def format_counts(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
