"""The backend-neutral graph every delegate decoder returns.

Ethos-U NPU operations, TOSA operators and XNNPACK nodes all become a `DelegateGraph`, so that
rendering and analysis never special-case a backend. Plain dataclasses; no Model Explorer import.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TensorInfo:
    """A tensor inside a delegate graph (an NPU feature map, a TOSA tensor, an XNNPACK value)."""

    id: str  # unique within its DelegateGraph
    name: str = ""
    shape: list[int] | None = None
    dtype: str = ""  # a readable name: "int8", "float32", ...
    attrs: dict[str, str] = field(default_factory=dict)  # quantization, address, constant size ...


@dataclass
class OpNode:
    """One operation inside a delegate graph."""

    id: str  # unique within its DelegateGraph
    kind: str  # the operation kind, e.g. "CONV2D", "NPU_OP_CONV", "DepthwiseConv2d"
    label: str  # what the node shows; usually `kind`
    inputs: list[str] = field(default_factory=list)  # TensorInfo ids, operand order
    outputs: list[str] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    namespace: str = ""  # "/"-separated group path inside this graph, e.g. "features/3/conv"
    subgraphs: list[str] = field(
        default_factory=list
    )  # names of other DelegateGraphs (control flow)


@dataclass
class DelegateGraph:
    """One view of a delegate payload: its operations and the tensors between them."""

    name: str  # e.g. "NPU operations", "TOSA source", "XNNPACK graph"
    nodes: list[OpNode] = field(default_factory=list)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)  # tensor ids fed by the delegate call's inputs
    outputs: list[str] = field(default_factory=list)  # tensor ids returned to the delegate call
    attrs: dict[str, str] = field(default_factory=dict)  # graph-level summary


@dataclass
class DecodedDelegate:
    """What a decoder learned from one payload. Problems are reported, never raised."""

    graphs: list[DelegateGraph] = field(default_factory=list)
    summary: dict[str, str] = field(default_factory=dict)  # shown on the delegate's node
    # How many of the DelegateCall's args are inputs / outputs, when the payload says so.
    num_inputs: int | None = None
    num_outputs: int | None = None
    # Operations inside the delegate (for "share of work inside delegates"); None = unknown.
    inner_op_count: int | None = None
    # Numeric facts for analysis and reports, e.g. {"npu_ops": 63, "weight_bytes": 3_400_000}.
    stats: dict[str, int | float | str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
