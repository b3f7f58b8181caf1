"""Which layer of the exported graph each logged output is, from the program's ETRecord.

An instruction's debug handles (the ETRecord's `debug_handle_map`) name the exported graph's nodes
it runs; `analysis/source_match.py` has already checked that the ETRecord belongs to the program.
For one logged output:

- `aot_ops`: every node of the instruction's handles, named as ExecuTorch's Inspector names its
  rows: after the ATen graph (`conv2d_1`) when the ETRecord holds it, else after the edge graph
  (`aten_convolution_default_1`);
- the node that wrote it: for a call with several outputs, output k of n is the node of the handle
  at position k - n from the end (the Inspector's rule, a guess the row says it is: the program
  does not record which node wrote which output), else the last handle; among that handle's nodes,
  the last that is not a quantize/dequantize;
- `layer`: that node's name; for an output of quantize/dequantize nodes only, the node whose
  output they quantize (their provenance's first node: `relu_1`), or, for a weight's or a method
  input's quantization (a provenance that ends at PT2E's observer), the quantize/dequantize node
  itself, which joins nothing;
- `key`: what a row of another program joins by (`--reference`): the node's ATen name wherever its
  provenance reaches the ATen graph (also when the ETRecord has left that graph out), else its
  edge name; with its module path, checked when both sides know it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pte_adapter.analysis.source import InstructionSource, ModuleRef, user_source_line
from pte_adapter.container.etrecord import EtRecordMethod, FxNode

_QDQ = ("quantize_per_", "dequantize_per_", "choose_qparams")
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


NO_LAYER = OutputLayer((), "", "", "", "", "")


def is_qdq(node: FxNode) -> bool:
    target = node.target.split("::")[-1]
    return any(k in target for k in _QDQ)


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
) -> OutputLayer:
    """The layer of output `position` (of `outputs`) of an instruction (module docstring)."""
    if src is None or not src.handles:
        return NO_LAYER
    by_handle = [record.nodes_by_handle.get(h, []) for h in src.handles]
    aot_ops = tuple(dict.fromkeys(_shown(n, aten_names) for nodes in by_handle for n in nodes))
    at = len(by_handle) - (outputs - position)
    nodes = by_handle[at] if 0 <= at < len(by_handle) and outputs > 1 else by_handle[-1]
    if not nodes:
        nodes = [n for group in by_handle for n in group]
    if not nodes:
        return OutputLayer(aot_ops, "", "", "", "", "")
    compute = [n for n in nodes if not is_qdq(n)]
    if compute:
        node = compute[-1]
        name, key = _shown(node, aten_names), node.aten_name or node.name
        module = _module(node)
    else:
        node = nodes[-1]
        observed = node.origin and not node.origin.startswith(_OBSERVER)
        name = node.origin if observed else _shown(node, aten_names)
        key = node.origin if observed else ""  # a weight's or an input's: no layer to join by
        module = None
    uncertain = (
        f"output {position + 1} of the call's {outputs}: named by the Inspector's rule (the node "
        f"of its {outputs - position}. debug handle from the end); the program does not record "
        "which node wrote it"
        if outputs > 1
        else ""
    )
    return OutputLayer(
        aot_ops,
        name,
        key,
        module.text if module else "",
        module.path if module else "",
        _source_line(node.stack_trace),
        uncertain,
    )
