"""A `VkGraph` as a neutral `DelegateGraph`: every operator call with each of its arguments (named by
the operator's schema, from the pinned registry), every tensor with dtype, dims, storage type,
memory layout and, for constants, where their bytes are (inline in the payload's raw bytes or named
data in the `.pte` or a `.ptd`), and the graph's inputs and outputs in the delegate call's order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vulkan._generated import partition_rules
from pte_adapter.delegates.vulkan.records import (
    UINT64_MAX,
    Header,
    OperatorCall,
    VkBytesRef,
    VkTensor,
    VkValue,
)
from pte_adapter.program.cached import cached
from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo

PREVIEW = 16  # elements of a long list an attribute shows
# Tensors of value lists a payload's calls may draw, over all its calls (a concatenation of a
# transformer's heads names a few dozen; a MobileNetV2 payload's lists hold a hundred in all).
MAX_LIST_TENSORS = 10_000
ARGUMENT_NAMES = partition_rules.ARGUMENTS


def tensor_id(index: int) -> str:
    return f"v{index}"


@dataclass
class VkGraphFacts:
    """Everything read from one payload."""

    header: Header
    version: str
    values: list[VkValue]
    chain: list[OperatorCall]
    input_ids: list[int]
    output_ids: list[int]
    constants: list[VkBytesRef]
    shaders: list[VkBytesRef]
    storage_type_override: str
    memory_layout_override: str
    chain_total: int = 0  # operator calls in the payload (more than `chain` past the cap)

    @cached
    def input_set(self) -> frozenset[int]:
        return frozenset(self.input_ids)

    @cached
    def output_set(self) -> frozenset[int]:
        return frozenset(self.output_ids)


@dataclass
class ConstantCounts:
    total_bytes: int = 0
    named: int = 0
    in_payload: int = 0
    empty: int = 0
    external_files: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)


def _fmt(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _list_text(items: list[str], count: int) -> str:
    body = ", ".join(items[:PREVIEW])
    return f"[{body}, ...] ({count} values)" if count > PREVIEW else f"[{body}]"


def value_text(v: VkValue) -> str:
    """One argument as people read it: a tensor by its id, a list of values by their ids."""
    if v.kind == "VkTensor":
        return tensor_id(v.index)
    if v.kind == "ValueList" and isinstance(v.value, list):
        return _list_text([tensor_id(int(i)) for i in v.value], len(v.value))
    if v.kind in ("IntList", "DoubleList", "BoolList") and isinstance(v.value, list):
        return _list_text([_fmt(x) for x in v.value], len(v.value))
    if v.kind == "SymInt":
        return f"symint {_fmt(v.value)}"
    if v.kind == "String":
        return repr(v.value)
    if v.kind in ("Null", "none") or v.kind.startswith("unknown_"):
        return v.kind.lower() if v.kind != "Null" else "none"
    return _fmt(v.value)


class _Arguments:
    """What the calls' arguments refer to, worked out once per value (a value list is read by
    every call that names it, and one list can be named by thousands), and how many tensors from
    lists the calls may still draw (`MAX_LIST_TENSORS`): each is an input or output port with its
    edge, so a list named by every call cannot multiply."""

    def __init__(self, facts: VkGraphFacts) -> None:
        self.values = facts.values
        self._tensors: dict[int, list[str]] = {}
        self._texts: dict[int, str] = {}
        self.left = MAX_LIST_TENSORS
        self.not_drawn = 0  # calls whose list arguments were not drawn as edges

    def text(self, vid: int) -> str:
        text = self._texts.get(vid)
        if text is None:
            text = self._texts[vid] = value_text(self.values[vid])
        return text

    def tensors(self, vid: int) -> list[str]:
        """The tensor ids an argument holds: itself, or the tensors of a value list."""
        ids = self._tensors.get(vid)
        if ids is None:
            v, values = self.values[vid], self.values
            found: list[int] = []
            if v.kind == "VkTensor":
                found = [v.index]
            elif v.kind == "ValueList" and isinstance(v.value, list):
                found = [
                    int(i) for i in v.value if 0 <= int(i) < len(values) and values[int(i)].tensor
                ]
            ids = self._tensors[vid] = [tensor_id(t) for t in found]
        return ids


def constant_attrs(
    t: VkTensor, facts: VkGraphFacts, ctx: DecodeContext, counts: ConstantCounts
) -> tuple[dict[str, str], int | None]:
    """What to show of a constant tensor's bytes and where they are, and their size."""
    if t.constant_id < 0:
        return {}, None
    if t.constant_id >= len(facts.constants):
        return {"constant_id": f"{t.constant_id} (out of range: {len(facts.constants)})"}, None
    ref = facts.constants[t.constant_id]
    attrs = {"constant_id": str(t.constant_id), "constant_bytes": str(ref.length)}
    counts.total_bytes += ref.length
    if ref.named_key:
        counts.named += 1
        attrs["named_key"] = ref.named_key
        found = ctx.sources.locate(ref.named_key) if ctx.sources is not None else None
        if found is None:
            counts.missing.append(ref.named_key)
            attrs["data"] = "not found (named key missing from the .pte and any .ptd)"
        else:
            source, span = found
            attrs["data"] = f"{source} @ {span.offset}"
            if ctx.sources is None or source != ctx.sources.pte.name:
                counts.external_files[source] += 1
        return attrs, ref.length
    if ref.length == 0:
        counts.empty += 1
        attrs["data"] = "none (an empty tensor)"
        return attrs, 0
    if ref.offset == UINT64_MAX or ref.offset + ref.length > facts.header.bytes_size:
        attrs["data"] = (
            f"invalid: [{ref.offset}, {ref.offset + ref.length}) outside the "
            f"{facts.header.bytes_size}-byte raw bytes block"
        )
        return attrs, None
    counts.in_payload += 1
    at = facts.header.bytes_offset + ref.offset
    where = f"payload +{at}"
    if ctx.payload_offset is not None:
        where += f" (file offset {ctx.payload_offset + at})"
    attrs["data"] = where
    return attrs, ref.length


def _layout(own: str, override: str, default: str) -> str:
    if own != default:
        return own
    if override != default:
        return f"{override} (the graph's override)"
    return f"{own} (the runtime chooses)"


def tensor_info(
    v: VkValue, facts: VkGraphFacts, ctx: DecodeContext, counts: ConstantCounts
) -> TensorInfo:
    t = v.tensor
    assert t is not None
    attrs = {
        "storage_type": _layout(t.storage_type, facts.storage_type_override, "DEFAULT_STORAGE"),
        "memory_layout": _layout(t.memory_layout, facts.memory_layout_override, "DEFAULT_LAYOUT"),
    }
    if t.staging_datatype not in ("UNSET", t.datatype):
        attrs["staging_dtype"] = t.staging_datatype.lower()
    if t.mem_obj_id >= 0:
        attrs["mem_obj_id"] = str(t.mem_obj_id)
    const, nbytes = constant_attrs(t, facts, ctx, counts)
    attrs.update(const)
    role = "constant" if t.constant_id >= 0 else ""
    if v.index in facts.input_set:
        role = "input"
    elif v.index in facts.output_set:
        role = "output"
    return TensorInfo(
        id=tensor_id(v.index),
        name=f"{role} {tensor_id(v.index)}".strip(),
        shape=list(t.dims),
        dtype=t.datatype.lower(),
        attrs=attrs,
        constant_bytes=nbytes,
    )


def op_node(index: int, call: OperatorCall, args: _Arguments, problems: list[str]) -> OpNode:
    # A torch (not edge) operator is named without its namespace ("sym_size.int").
    names = list(ARGUMENT_NAMES.get(call.name) or ARGUMENT_NAMES.get(f"aten.{call.name}") or ())
    values = args.values
    attrs: dict[str, str] = {"node_id": str(call.node_id)}
    params: dict[str, int] = {}
    inputs: list[str] = []
    outputs: list[str] = []
    last = len(call.args) - 1
    cut = False
    for i, vid in enumerate(call.args):
        name = "out" if i == last else (names[i] if i < len(names) else f"arg{i}")
        if not 0 <= vid < len(values):
            problems.append(f"operator {index} ({call.name}) refers to undefined value {vid}")
            attrs[name] = f"undefined value {vid}"
            continue
        v = values[vid]
        attrs[name] = args.text(vid)
        ids = args.tensors(vid)
        if len(ids) > 1:  # a list: drawn while the payload's references last
            if len(ids) > args.left:
                cut = True
                continue
            args.left -= len(ids)
        (outputs if i == last else inputs).extend(ids)
        if v.kind == "Int" and isinstance(v.value, int) and not isinstance(v.value, bool):
            params[name] = v.value
    args.not_drawn += cut
    kind = call.name or "unnamed"
    return OpNode(
        id=f"op{index}",
        kind=kind,
        label=kind.removesuffix(".default"),
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        params=params,
    )


def build_graph(
    facts: VkGraphFacts, ctx: DecodeContext, problems: list[str]
) -> tuple[DelegateGraph, Counter[str], ConstantCounts]:
    graph = DelegateGraph(name="Vulkan graph")
    counts = ConstantCounts()
    for v in facts.values:
        if v.tensor is not None:
            graph.tensors[tensor_id(v.index)] = tensor_info(v, facts, ctx, counts)
        elif v.kind.startswith("unknown_") or v.kind == "none":
            problems.append(f"value {v.index} holds no known GraphTypes member ({v.kind})")
    kinds: Counter[str] = Counter()
    args = _Arguments(facts)
    for i, call in enumerate(facts.chain):
        node = op_node(i, call, args, problems)
        kinds[node.kind] += 1
        graph.nodes.append(node)
    if args.not_drawn:
        problems.append(
            f"value lists hold more than {MAX_LIST_TENSORS} tensors over the calls that name "
            f"them: the list arguments of {args.not_drawn} calls are not drawn as edges"
        )
    for what, ids, into in (
        ("input", facts.input_ids, graph.inputs),
        ("output", facts.output_ids, graph.outputs),
    ):
        for vid in ids:
            tid = tensor_id(vid)
            if not 0 <= vid < len(facts.values):
                problems.append(f"graph {what} {vid} is not a defined value")
            elif tid not in graph.tensors:  # a scalar input (a symbolic int of a dynamic shape)
                v = facts.values[vid]
                graph.tensors[tid] = TensorInfo(
                    tid, f"{what} {tid}", dtype=v.kind.lower(), attrs={"value": value_text(v)}
                )
            into.append(tid)
    return graph, kinds, counts
