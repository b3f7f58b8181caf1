"""Which layer of the exported graph each logged output is, from the program's ETRecord.

An instruction's debug handles (the ETRecord's `debug_handle_map`) name the exported graph's nodes
it runs; `analysis/source_match.py` has already checked that the ETRecord belongs to the program.
For one logged output:

- `aot_ops`: every node of the instruction's handles, named as ExecuTorch's Inspector names its
  rows: after the ATen graph (`conv2d_1`) when the ETRecord holds it, else after the edge graph
  (`aten_convolution_default_1`);
- the node that wrote it: for a delegate call, the one node the ETRecord's graph proves wrote it
  (`writers.py`: its shape and where its value goes; where several fit, each is named and none
  chosen); failing that, for a call with several outputs, output k of n is the node of the handle
  at position k - n from the end (the Inspector's rule, a guess the row says it is), else the last
  handle; among that handle's nodes, the last that is not a quantize/dequantize;
- for a quantize or dequantize kernel, the node whose value it (de)quantizes (`writers.py`: back
  through the graph's quantize/dequantize nodes), a method input (`input x`, which joins the
  reference's method input) or a weight (no layer of the model); without the graph's edges, the
  quantize/dequantize node's provenance (`relu_1`);
- `layer`: that node's name;
- `key`: what a row of another program joins by (`--reference`): the node's ATen name wherever its
  provenance reaches the ATen graph (also when the ETRecord has left that graph out), else its
  edge name; with its module path, checked when both sides know it; `origin`: the node of the
  network it carries the value of (its provenance's first node, when no other node made from that
  one reads it), which joins a reference that computed it another way (`compare.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from pte_adapter.analysis.numerics.writers import GraphIndex, Quantized, Written, is_qdq
from pte_adapter.analysis.source import InstructionSource, ModuleRef, user_source_line
from pte_adapter.container.etrecord import EtRecordMethod, FxNode

# PT2E names the observers it turns into quantize/dequantize nodes so; a provenance that ends at
# one (a weight's, or a method input's quantization) names no node of the model.
_OBSERVER = "activation_post_process_"
# A node's stack trace is searched once however many outputs (and sides) name it.
_source_line = lru_cache(maxsize=1 << 14)(user_source_line)


@dataclass(frozen=True)
class OutputLayer:
    aot_ops: tuple[str, ...]
    layer: str  # "" when the ETRecord records no node for it
    key: str
    module: str  # "stem.0 (Conv2d)"; "" when not recorded
    module_path: str
    source_line: str
    # "" when the node that wrote the output is known; else why its layer is a guess by rule.
    uncertain: str = ""
    origin: str = ""  # the network's node whose value it is (writers.GraphIndex.carries)
    # Why it has no key although the ETRecord names its nodes (a weight's quantization, a call's
    # output that several nodes fit), said when it does not join.
    unkeyed: str = ""
    written_how: str = ""  # how the node that wrote it is known (a delegate call's output)


NO_LAYER = OutputLayer((), "", "", "", "", "")


def _shown(node: FxNode, aten_names: bool) -> str:
    return node.aten_name if aten_names and node.aten_name else node.name


def _module(node: FxNode) -> ModuleRef | None:
    stack = [ModuleRef(p, c) for p, c in node.module_stack]
    if not stack or (len(stack) == 1 and "<locals>" in stack[0].cls):
        return None  # torch.export's own wrapper: no layer of the model
    return stack[-1]


def output_layer(
    record: EtRecordMethod,
    aten_names: bool,
    src: InstructionSource | None,
    position: int,
    outputs: int,
    *,
    index: GraphIndex | None = None,
    written: Written | None = None,
    quantize: str = "",
) -> OutputLayer:
    """The layer of output `position` (of `outputs`) of an instruction (module docstring):
    `written` for a delegate call's output, `quantize` ("quantize", "dequantize") for such a
    kernel's."""
    if src is None or not src.handles:
        return NO_LAYER
    by_handle = [record.nodes_by_handle.get(h, []) for h in src.handles]
    aot_ops = tuple(dict.fromkeys(_shown(n, aten_names) for nodes in by_handle for n in nodes))
    if written is not None and written.node is not None:
        return replace(_of_node(written.node, aten_names, aot_ops, index), written_how=written.how)
    if written is not None and written.fits:
        modules = {_module(n) for n in written.fits}
        module = modules.pop() if len(modules) == 1 else None
        return OutputLayer(
            aot_ops,
            " or ".join(_shown(n, aten_names) for n in written.fits),
            "",
            module.text if module else "",
            module.path if module else "",
            "",
            written.how,
            unkeyed=written.how,
        )
    if quantize and index is not None:
        found = _quantized(record, index, src, aten_names, aot_ops, quantize)
        if found is not None:
            return found
    return _by_rule(by_handle, aot_ops, aten_names, position, outputs, index)


def _of_node(
    node: FxNode, aten_names: bool, aot_ops: tuple[str, ...], index: GraphIndex | None
) -> OutputLayer:
    module = _module(node)
    return OutputLayer(
        aot_ops,
        _shown(node, aten_names),
        node.aten_name or node.name,
        module.text if module else "",
        module.path if module else "",
        _source_line(node.stack_trace),
        origin=node.origin if index is not None and index.carries(node) else "",
    )


def _quantized(
    record: EtRecordMethod,
    index: GraphIndex,
    src: InstructionSource,
    aten_names: bool,
    aot_ops: tuple[str, ...],
    quantize: str,
) -> OutputLayer | None:
    """A quantize/dequantize kernel's layer: what its nodes (de)quantize, when they agree."""
    nodes = [
        n
        for h in src.handles
        for n in record.nodes_by_handle.get(h, [])
        if is_qdq(n) and _qdq_kind(n) == quantize
    ]
    found = {_identity(q): q for q in (index.quantized(n) for n in nodes)}
    if len(found) != 1:
        return None
    (what,) = found.values()
    if what.node is not None:
        return _of_node(what.node, aten_names, aot_ops, index)
    if what.input_position is not None:
        return OutputLayer(
            aot_ops, f"input {what.placeholder}", method_input_key(what.input_position), "", "", ""
        )
    if what.placeholder:
        return OutputLayer(
            aot_ops,
            _shown(nodes[-1], aten_names),
            "",
            "",
            "",
            "",
            unkeyed=f"the {quantize[:-1]}ation of a weight ({what.placeholder}): no layer of the "
            "model to join by",
        )
    return None


def _identity(q: Quantized) -> tuple[int, int | None, str]:
    return (id(q.node), q.input_position, q.placeholder)


def method_input_key(position: int) -> str:
    """The key of a method input's (de)quantization: the reference's method input joins it."""
    return f"method input {position}"


def _qdq_kind(node: FxNode) -> str:
    parts = node.target.replace("::", ".").split(".")
    base = parts[1] if len(parts) > 1 else parts[0]
    return "dequantize" if base.startswith("dequantize") else "quantize"


def _by_rule(
    by_handle: list[list[FxNode]],
    aot_ops: tuple[str, ...],
    aten_names: bool,
    position: int,
    outputs: int,
    index: GraphIndex | None,
) -> OutputLayer:
    """The Inspector's rule (module docstring), when nothing proves the node."""
    at = len(by_handle) - (outputs - position)
    nodes = by_handle[at] if 0 <= at < len(by_handle) and outputs > 1 else by_handle[-1]
    if not nodes:
        nodes = [n for group in by_handle for n in group]
    if not nodes:
        return OutputLayer(aot_ops, "", "", "", "", "")
    uncertain = (
        f"output {position + 1} of the call's {outputs}: named by the Inspector's rule (the node "
        f"of its {outputs - position}. debug handle from the end); the program does not record "
        "which node wrote it"
        if outputs > 1
        else ""
    )
    compute = [n for n in nodes if not is_qdq(n)]
    if compute:
        return replace(_of_node(compute[-1], aten_names, aot_ops, index), uncertain=uncertain)
    node = nodes[-1]
    observed = node.origin and not node.origin.startswith(_OBSERVER)
    return OutputLayer(
        aot_ops,
        node.origin if observed else _shown(node, aten_names),
        node.origin if observed else "",  # a weight's or an input's: no layer to join by
        "",
        "",
        _source_line(node.stack_trace),
        uncertain,
    )
