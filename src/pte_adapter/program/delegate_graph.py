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
    # Bytes of its constant data stored inside the payload (None: not a constant, or stored
    # elsewhere, e.g. named data in a segment or a .ptd).
    constant_bytes: int | None = None
    # Its per-tensor quantization as the payload records it (scale, zero point), beside the
    # attributes that show it; None when not quantized per tensor.
    quant: tuple[float, int] | None = None


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
    # Integer parameters as numbers, for analysis (kernel sizes, strides, groups ...); `attrs`
    # holds the same as text for people and is never parsed back.
    params: dict[str, int] = field(default_factory=dict)
    # Bytes of constant data inside the payload that this operation alone reads (an NPU
    # operation's weight and scale streams); 0 when its constants are tensors of the graph.
    constant_bytes: int = 0
    # Estimated cycles of this operation, when its decoder estimates cost (Ethos-U).
    cost_cycles: int | None = None


@dataclass
class DelegateGraph:
    """One view of a delegate payload: its operations and the tensors between them."""

    name: str  # e.g. "NPU operations", "TOSA source", "XNNPACK graph"
    nodes: list[OpNode] = field(default_factory=list)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)  # tensor ids fed by the delegate call's inputs
    outputs: list[str] = field(default_factory=list)  # tensor ids returned to the delegate call
    attrs: dict[str, str] = field(default_factory=dict)  # graph-level summary
    # False for a view that comes from a side file (the TOSA an Ethos-U partition was compiled
    # from): its constants are not bytes of the payload.
    from_payload: bool = True
    source_file: str = ""  # that side file's path, when it came from one


@dataclass(frozen=True)
class MemoryTiming:
    """One memory as an estimate models it."""

    name: str  # "Sram", "Dram", "OffChipFlash"
    bytes_per_cycle: float  # at the accelerator's clock
    read_latency: int  # cycles
    write_latency: int


@dataclass(frozen=True)
class EstimateTarget:
    """The accelerator and system an estimate is for."""

    accelerator: str  # "ethos-u85-256"
    system_config: str  # "Ethos_U85_SYS_DRAM_Mid"
    memory_mode: str  # "Shared_Sram"
    clock_hz: float
    constant_memory: MemoryTiming  # where the command stream and weights are read from
    arena_memory: MemoryTiming  # where the runtime places every delegate input and output


@dataclass
class DelegateEstimate:
    """What one invocation of the payload costs, estimated from the payload alone."""

    target: EstimateTarget
    cycles: int
    time_us: float  # cycles at the target's clock, 0.1 us resolution
    macs: int
    busy_cycles: dict[str, int]  # per resource ("MAC", and each memory): cycles it is busy
    busiest: str  # the resource with the most busy cycles
    bytes_by_memory: dict[str, int]  # bytes moved per memory
    not_covered: int  # operations the model cannot price (counted, never guessed)
    assumptions: tuple[str, ...]
    # Where the payload does work the compiler's own estimate prices another way: one line per
    # kind with both numbers, and the total with that work priced the compiler's way.
    notes: tuple[str, ...] = ()
    cycles_as_vela: int | None = None
    transpose_cycles: int = 0  # layout transposes inside `cycles` (the Ethos-U55's pooling)
    # The layout work at its boundaries (NCHW for the caller, NHWC inside), which a larger
    # partition would not do there: the input-side operations' cycles, and what writing its
    # outputs in the caller's layout costs beyond a plain write; each also as Vela prices it.
    boundary_in_cycles: int = 0
    boundary_in_cycles_as_vela: int = 0
    boundary_out_cycles: int = 0
    boundary_out_cycles_as_vela: int = 0


@dataclass(frozen=True)
class PartitionerRejection:
    """One node a backend's partitioner refused, in the partitioner's own words."""

    node: str  # the edge-graph node's name (as the ETRecord names it)
    target: str  # its operator, "aten.linear.default"
    reason: str  # "Rejected by NotLinear"


@dataclass
class PartitionerReport:
    """What the partitioner wrote about the export this delegate came from (Arm's
    `partition_report.txt`), found beside the `.pte`."""

    file: str  # where it was read, as found: "<artifact folder>/partition_report.txt"
    # Per target the partitioner ran for (Arm: the TOSA spec), the rejected nodes in its order.
    rejections: dict[str, list[PartitionerRejection]] = field(default_factory=dict)


@dataclass(frozen=True)
class DelegateMemory:
    """Where an NPU delegate's data lives on the device and how much of each, as its compiler
    placed it (Ethos-U: Vela's memory mode and system config). Memory names are the compiler's
    ("Sram", "Dram", "OffChipFlash", "OnChipFlash"); None when the names could not be resolved."""

    accelerator: str
    system_config: str
    memory_mode: str
    const_memory: str | None  # where the command stream and weights are read from (region 0)
    arena_memory: str | None  # where the scratch lives (region 1)
    cache_memory: str | None  # where the fast scratch lives (region 2)
    command_bytes: int
    weight_bytes: int
    weights_source: str  # "" in the payload; else the file that holds them (a .ptd), or "missing"
    scratch_bytes: int  # region 1, as the payload records it
    fast_scratch_bytes: int  # region 2: the highest address its commands touch
    arena_cache_size: int | None  # the fast scratch the memory mode sets aside (None: unlimited)
    assumed: tuple[str, ...] = ()  # names the compile spec left out, defaults used
    problems: tuple[str, ...] = ()


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
    # The cost of one invocation, when the decoder can estimate it (Ethos-U).
    estimate: DelegateEstimate | None = None
    # The partitioner's own report of the export, when one was found (`Backend.partition_report`).
    partitioner_report: PartitionerReport | None = None
    # Where its data lives on the device and how much of it (an NPU's: Ethos-U).
    memory: DelegateMemory | None = None
    # Per output of the DelegateCall, in order: its per-tensor quantization (scale, zero point)
    # when the payload records it; [] when the decoder does not say (numerics dequantize with it).
    output_quant: list[tuple[float, int] | None] = field(default_factory=list)
