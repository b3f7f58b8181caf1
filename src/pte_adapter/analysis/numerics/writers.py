"""Which node of the exported graph each logged output is, proved from the ETRecord's graph (its
edges) and the program's dataflow, never guessed.

**A delegate call's outputs.** A call logs its outputs in order, and nothing in the program says
which node of the exported graph wrote which (ExecuTorch's Inspector names output k of n after
the call's (n - k)-th debug handle from the end: a rule that names `features.3`'s output of
`mv2_lrn_ethosu85`'s first NPU partition `view_copy`). The evidence here:

- the call's nodes are those of its debug handles; a quantize/dequantize node goes where its
  neighbours go (its handle is the node's it quantizes, and a partition boundary splits the pair),
  so it is looked through, never counted as the call's;
- a node's value leaves the call when a node of another instruction (a handle that is not the
  call's) reads it, through quantize/dequantize nodes, or the method returns it;
- output k is read by the program's instructions R (through CPU quantize/dequantize kernels, which
  only change its representation) or returned by the method;
- a node *fits* output k when it writes k's shape and its value reaches a node of one of R (or is
  returned, when k is).

One fitting node: it wrote output k. Several: each is named and none chosen (the row does not
join). None (the readers' handles not recorded, a shape not recorded): not known, and the
Inspector's rule names it, marked as a guess.

**A quantize or dequantize kernel's output** is the value of the node it (de)quantizes: back from
the kernel's node through quantize/dequantize nodes to the first other node, or to a method input
(`x`), or to a weight (a placeholder that is not an input: no layer of the model).

Linear: each call's nodes are walked once, each node's readers once (`GraphIndex`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.analysis.dataflow import Dataflow
from pte_adapter.analysis.source import MethodSource
from pte_adapter.container.etrecord import EtRecordMethod, FxNode
from pte_adapter.program.model import InstructionKind, Method
from pte_adapter.wording import shape_compact

_QDQ: Final = ("quantize_per_", "dequantize_per_", "choose_qparams")
# Ops whose output holds the same elements in the same (row-major) order as their input.
_VIEWS: Final = frozenset(
    {"view_copy", "view", "_unsafe_view", "reshape", "squeeze_copy", "unsqueeze_copy", "alias_copy"}
)


def is_qdq(node: FxNode) -> bool:
    target = node.target.split("::")[-1]
    return any(k in target for k in _QDQ)


def is_view(node: FxNode) -> bool:
    """A node whose output is its input's elements in the same order, another shape."""
    parts = node.target.replace("::", ".").split(".")
    return len(parts) >= 2 and parts[1] in _VIEWS


@dataclass(frozen=True)
class Written:
    """Which node wrote one output, or why that is not known."""

    node: FxNode | None = None  # proved
    fits: tuple[FxNode, ...] = ()  # several fit: each, none chosen
    how: str = ""  # the evidence, in words


@dataclass(frozen=True)
class Quantized:
    """What a quantize/dequantize kernel's value is the value of."""

    node: FxNode | None = None  # a node of the model
    input_position: int | None = None  # a method input (its position among the user inputs)
    placeholder: str = ""  # a weight's, a buffer's or an input's tensor name


@dataclass
class GraphIndex:
    """One method's exported graph, indexed by tensor name (built once per method)."""

    record: EtRecordMethod
    producer: dict[str, FxNode] = field(default_factory=dict)
    readers: dict[str, list[FxNode]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for n in self.record.nodes:
            for t in n.outputs:
                self.producer.setdefault(t, n)
            for t in dict.fromkeys(n.inputs):
                self.readers.setdefault(t, []).append(n)
        self.returned = frozenset(self.record.graph_outputs)
        self.user_inputs = {t: k for k, t in enumerate(self.record.user_inputs)}

    def quantized(self, node: FxNode) -> Quantized:
        """The value a quantize/dequantize node's input holds: back through such nodes."""
        seen: set[str] = set()
        current = node
        while current.inputs and current.inputs[0] not in seen:
            tensor = current.inputs[0]
            seen.add(tensor)
            made_by = self.producer.get(tensor)
            if made_by is None:
                return Quantized(None, self.user_inputs.get(tensor), tensor)
            if not is_qdq(made_by):
                return Quantized(made_by)
            current = made_by
        return Quantized()

    def leaves(self, node: FxNode, handles: frozenset[int]) -> tuple[set[int], bool]:
        """(the handles of the nodes outside `handles` that read the node's value, through
        quantize/dequantize nodes and nodes without a handle; whether the method returns it)."""
        out: set[int] = set()
        returned = False
        todo, seen = list(node.outputs), set()
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            returned = returned or t in self.returned
            for r in self.readers.get(t, ()):
                if is_qdq(r) or r.debug_handle is None:
                    todo.extend(r.outputs)
                elif r.debug_handle not in handles:
                    out.add(r.debug_handle)
        return out, returned

    def quantization(self, node: FxNode) -> tuple[float, int, FxNode] | None:
        """(scale, zero point, the quantize node) with which the graph quantizes the node's value
        per tensor, when every quantize node that reads it says the same."""
        found = {}
        for r in self.readers.get(node.outputs[0], ()) if node.outputs else ():
            parts = r.target.replace("::", ".").split(".")
            if len(parts) < 2 or parts[1] != "quantize_per_tensor" or len(r.numbers) < 3:
                continue
            scale, zero = r.numbers[1], r.numbers[2]
            if isinstance(scale, (int, float)) and isinstance(zero, int) and scale > 0:
                found[(float(scale), zero)] = r
        if len(found) != 1:
            return None
        ((scale, zero), quantize), *_ = found.items()
        return scale, zero, quantize

    def carries(self, node: FxNode) -> bool:
        """Whether the node's value is the value of the node it was made from (`origin`): no node
        made from the same one reads it (`div` made into `reciprocal` then `mul`: only `mul`)."""
        if not node.origin:
            return False
        todo, seen = list(node.outputs), set()
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            for r in self.readers.get(t, ()):
                if is_qdq(r):
                    todo.extend(r.outputs)
                elif r.origin == node.origin:
                    return False
        return True


@dataclass(frozen=True)
class CallOutput:
    """What the program says of one output of a delegate call."""

    shape: tuple[int, ...]
    reader_handles: frozenset[int]  # the handles of the instructions that read it
    returned: bool  # the method returns it (or its (de)quantization)


def call_writers(
    index: GraphIndex, handles: Iterable[int], outputs: list[CallOutput]
) -> list[Written]:
    """Which node wrote each output of a delegate call whose nodes carry `handles` (module
    docstring)."""
    own = frozenset(handles)
    nodes = [
        n
        for h in dict.fromkeys(handles)
        for n in index.record.nodes_by_handle.get(h, [])
        if not is_qdq(n)
    ]
    leaving = []
    for n in nodes:
        reached, returned = index.leaves(n, own)
        if reached or returned:
            leaving.append((n, reached, returned))
    found = []
    for k, out in enumerate(outputs):
        fits = [
            n
            for n, reached, returned in leaving
            if out.shape in n.output_shapes
            and ((reached & out.reader_handles) or (returned and out.returned))
        ]
        found.append(_written(k, len(outputs), out, fits))
    return found


def _written(k: int, n: int, out: CallOutput, fits: list[FxNode]) -> Written:
    shape = shape_compact(out.shape)
    whom = "the method's output" if out.returned and not out.reader_handles else "its readers"
    if len(fits) == 1:
        how = (
            f"output {k + 1} of the call's {n}: {fits[0].name} is the one node of the call whose "
            f"{shape} value reaches {whom} (the ETRecord's graph)"
        )
        return Written(fits[0], how=how if n > 1 else "")
    if len(fits) > 1:
        names = " and ".join(f.name for f in fits)
        return Written(
            None,
            tuple(fits),
            f"output {k + 1} of the call's {n}: {names} each write a {shape} value that "
            f"reaches {whom}: which one this is is not known, none is chosen",
        )
    return Written(None, (), "")


class MethodReaders:
    """Who reads each value an instruction writes, in the program (its dataflow), looking through
    CPU quantize/dequantize kernels: each reader's debug handles, and whether the method returns
    it."""

    def __init__(self, method: Method, flow: Dataflow, sources: MethodSource | None) -> None:
        self.method, self.flow, self.sources = method, flow, sources
        self.consumers: dict[tuple[int, int], list[int]] = {}
        for i, edges in enumerate(flow.edges):
            for e in edges:
                self.consumers.setdefault((e.producer, e.value), []).append(i)
        self.returned = {(e.producer, e.value) for e in flow.output_edges}

    def call_output(self, writer: int, value: int, shape: tuple[int, ...]) -> CallOutput:
        handles: set[int] = set()
        returned = False
        todo, seen = [(writer, value)], set()
        while todo:
            at = todo.pop()
            if at in seen:
                continue
            seen.add(at)
            returned = returned or at in self.returned
            for r in self.consumers.get(at, ()):
                if qdq_kernel(self.method, r):
                    todo.extend((r, v) for v in self.flow.io[r].output_tensors)
                elif self.sources is not None and r in self.sources.instructions:
                    handles.update(self.sources.instructions[r].handles)
        return CallOutput(shape, frozenset(handles), returned)


def qdq_kernel(method: Method, index: int) -> str:
    """ "quantize" or "dequantize" for a quantize/dequantize kernel call (of any namespace: Arm's
    `cortex_m::` too), else ""."""
    ins = method.instructions[index]
    if ins.kind is not InstructionKind.KERNEL:
        return ""
    op = method.operator_of(ins.op_index)
    base = op.full_name.split("::")[-1].split(".")[0] if op is not None else ""
    if not base.startswith(("quantize_per_", "dequantize_per_")):
        return ""
    return "dequantize" if base.startswith("dequantize") else "quantize"
