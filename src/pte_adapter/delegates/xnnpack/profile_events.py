"""Match XNNPACK's per-operator ETDump events to the decoded XNNPACK graph nodes.

XNNPACK logs one event per *runtime operator*, named by the operator's type and a per-type counter
(`Convolution (NHWC, QC8) IGEMM #3`), with no node id. The runtime creates its operators from the
serialised nodes in order, so the events can be aligned with the nodes — but not one to one:
- a `Clamp` node right after a convolution, fully-connected or add is fused into that operator at
  runtime (the int8 MobileNetV2: 104 nodes, 35 of them such clamps, 69 operators);
- a 1x1 convolution (stride 1, no padding, no dilation, one group) runs as `Fully Connected`.

The alignment is accepted only when every event's operator type fits its node (the table below,
with the geometry checks for convolutions) and every event and node is used: anything else — an
operator type this table does not know, a fusion it does not expect — gives no node mapping at all,
and the events stay on the partition. Never a guess.
"""

from __future__ import annotations

import re
from typing import Final

from pte_adapter.program.delegate_graph import DelegateGraph, OpNode

_COUNTER = re.compile(r"\s*#\d+$")

# Node kinds a runtime operator type (normalised: letters only, lower case) may come from, when the
# names differ beyond the normalisation (see _normal).
_KINDS: Final = {
    "mean": {"globalavgpooling2d", "mean"},
    "averagepooling": {"avgpooling2d"},
    "fullyconnected": {"fullyconnected", "conv2d"},
    "convolution": {"conv2d", "depthwiseconv2d"},
    "deconvolution": {"conv2dtranspose"},
    "copy": {"staticreshape", "staticslice", "copy"},
    "constantpad": {"staticconstantpad"},
    "resizebilinear": {"staticresizebilinear2d"},
    "hardswish": {"hardswish"},
    "leakyrelu": {"leakyrelu"},
}
# Producers a following Clamp is fused into at runtime.
_FUSES_CLAMP: Final = {"Conv2d", "DepthwiseConv2d", "FullyConnected", "Add", "Subtract", "Multiply"}


def operator_type(event_name: str) -> str:
    """`Convolution (NHWC, QC8) IGEMM #3` -> `Convolution (NHWC, QC8) IGEMM`."""
    return _COUNTER.sub("", event_name)


def _normal(text: str) -> str:
    """Letters only, lower case, without the `static` / `2d` decorations of node kinds."""
    word = re.sub(r"[^a-z0-9]", "", text.split("(")[0].lower())
    return word.removeprefix("static").removesuffix("2d")


def _is_pointwise_conv(node: OpNode) -> bool:
    return (
        node.kind == "Conv2d"
        and all(
            node.params.get(k, 0) == 1
            for k in (
                "kernel_height",
                "kernel_width",
                "subsampling_height",
                "subsampling_width",
                "dilation_height",
                "dilation_width",
                "groups",
            )
        )
        and all(node.params.get(f"padding_{s}", 0) == 0 for s in ("top", "right", "bottom", "left"))
    )


def fits(event_name: str, node: OpNode) -> bool:
    """Whether the runtime operator named `event_name` can have been created from `node`."""
    op = operator_type(event_name)
    word = _normal(op)
    kind = _normal(node.kind)
    if word == "fullyconnected":
        return node.kind == "FullyConnected" or _is_pointwise_conv(node)
    if word == "convolution":
        if "DWConv" in op:
            return node.kind == "DepthwiseConv2d"
        return node.kind == "Conv2d" and not _is_pointwise_conv(node)
    return kind == word or kind in {_normal(k) for k in _KINDS.get(word, ())}


def match_events(graph: DelegateGraph, event_names: list[str]) -> dict[str, int] | None:
    """Node id -> index of its event in `event_names`, including fused clamps (which share their
    producer's event); None when the events do not align with the nodes."""
    out: dict[str, int] = {}
    e = 0
    previous: OpNode | None = None
    for node in graph.nodes:
        if e < len(event_names) and fits(event_names[e], node):
            out[node.id] = e
            e += 1
            previous = node
            continue
        if node.kind == "Clamp" and previous is not None and previous.kind in _FUSES_CLAMP:
            out[node.id] = out[previous.id]
            continue
        return None
    return out if e == len(event_names) and event_names else None


def inner_node_times(
    graph: DelegateGraph, runs: list[list[tuple[str, float]]]
) -> tuple[dict[str, list[float]], dict[str, str]] | None:
    """Per node of `graph`, its operator's time in each run; and fused node -> the node whose
    operator ran it. `runs` holds each run's (event name, time) in logged order. None when a
    run's events do not align with the nodes."""
    times: dict[str, list[float]] = {}
    fused: dict[str, str] = {}
    cache: dict[tuple[str, ...], dict[str, int] | None] = {}
    for run in runs:
        names = tuple(name for name, _ in run)
        if names not in cache:
            cache[names] = match_events(graph, list(names))
        match = cache[names]
        if match is None:
            return None
        owner: dict[int, str] = {}
        for node_id, e in match.items():
            if e in owner:
                fused[node_id] = owner[e]
                continue
            owner[e] = node_id
            times.setdefault(node_id, []).append(run[e][1])
    return times, fused
