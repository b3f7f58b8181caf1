"""Split each method into backend partitions and CPU islands, and count what fragmentation costs.

A *partition* is one DelegateCall (one compiled blob on one backend). A *CPU island* is a maximal run
of non-delegate instructions between them. Both are numbered in execution order: delegate
partitions per backend ("NPU partition 2 (EthosUBackend)"), CPU islands on their own ("CPU island 1").
Names are printable ASCII: Model Explorer draws group labels with an ASCII-only WebGL font.

Numbers are derived only from the program: instruction kinds, operator names, the dataflow edges
(`dataflow.py`) and tensor shapes/dtypes for bytes. Decoded payloads add inner-operation counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pte_adapter.analysis.dataflow import (
    FROM_CONSTANT,
    FROM_METHOD_INPUT,
    FROM_NOWHERE,
    Dataflow,
    analyse_dataflow,
)
from pte_adapter.program import InstructionKind, Method, Program

CPU = "CPU"

# Short, self-explaining prefixes for group names by backend id.
BACKEND_PREFIX = {
    "EthosUBackend": "NPU partition",
    "VgfBackend": "VGF partition",
    "TOSABackend": "TOSA partition",
    "XnnpackBackend": "XNNPACK partition",
}

# CPU kernels that only move, reshape or (de)quantize data: the price of crossing a boundary,
# not work the model asked for.
_GLUE_NAMES = {
    "aten::view_copy", "aten::_to_copy", "dim_order_ops::_to_dim_order_copy",
    "dim_order_ops::_clone_dim_order", "aten::clone", "aten::alias_copy", "aten::squeeze_copy",
    "aten::unsqueeze_copy", "aten::expand_copy", "aten::permute_copy", "aten::reshape",
    "aten::_reshape_alias_copy", "executorch_prim::et_view", "aten::contiguous",
    "aten::copy_", "aten::copy",
}


def is_glue(op_name: str) -> bool:
    """quantize/dequantize/requantize, copy and view-like operators."""
    base = op_name.split(".")[0] if "::" in op_name else op_name
    return "quantize" in base or base in _GLUE_NAMES


def backend_prefix(backend: str) -> str:
    return BACKEND_PREFIX.get(backend, "Delegate partition")


@dataclass
class Partition:
    index: int  # position among all partitions and islands of the method, 0-based
    backend: str  # delegate id, or "CPU" for a CPU island
    number: int  # 1-based among partitions of the same backend (or among CPU islands)
    instructions: list[int] = field(default_factory=list)  # instruction indices
    delegate_index: int | None = None  # for a delegate partition
    compute_ops: Counter[str] = field(default_factory=Counter)  # CPU compute kernels by name
    glue_ops: Counter[str] = field(default_factory=Counter)  # CPU q/dq/copy/view kernels
    control: Counter[str] = field(default_factory=Counter)  # Move/JumpFalse/Free calls
    inner_ops: int | None = None  # operations inside the delegate, when decoded
    bytes_in: int = 0  # bytes of tensors read from other partitions / method inputs
    bytes_out: int = 0  # bytes of tensors written here and read elsewhere / returned

    @property
    def is_cpu(self) -> bool:
        return self.backend == CPU

    @property
    def name(self) -> str:
        if self.is_cpu:
            return f"CPU island {self.number}"
        return f"{backend_prefix(self.backend)} {self.number} ({self.backend})"


@dataclass
class Crossing:
    """A tensor that crosses a partition boundary.

    Between a delegate and the CPU it is a *crossing*; between two different delegate partitions
    (one NPU partition's output read directly by the next) it is a *handoff*: no CPU work, but
    still a separate delegate invocation and a round trip through memory.
    """

    value: int
    source: str  # partition name, or "method input"
    target: str  # partition name, or "method output"
    direction: str  # "CPU→<backend>", "<backend>→CPU" or "<backend>→<backend>" (handoff)
    nbytes: int
    handoff: bool = False


@dataclass
class MethodPartitions:
    method: str
    partitions: list[Partition]
    partition_of: list[int]  # instruction index -> index into partitions
    crossings: list[Crossing]
    dataflow: Dataflow

    @property
    def delegate_partitions(self) -> list[Partition]:
        return [p for p in self.partitions if not p.is_cpu]

    @property
    def cpu_islands(self) -> list[Partition]:
        return [p for p in self.partitions if p.is_cpu]

    def delegate_calls_by_backend(self) -> dict[str, int]:
        return dict(Counter(p.backend for p in self.delegate_partitions))

    def cpu_compute_ops(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for p in self.cpu_islands:
            total.update(p.compute_ops)
        return total

    def cpu_glue_ops(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for p in self.cpu_islands:
            total.update(p.glue_ops)
        return total

    def crossing_counts(self, handoffs: bool = False) -> dict[str, int]:
        return dict(Counter(c.direction for c in self.crossings if c.handoff == handoffs))

    def crossing_bytes(self, handoffs: bool = False) -> dict[str, int]:
        out: Counter[str] = Counter()
        for c in self.crossings:
            if c.handoff == handoffs:
                out[c.direction] += c.nbytes
        return dict(out)

    def delegated_share(self) -> dict[str, float | int | None]:
        """Share of work inside delegates: by instruction count, and by decoded inner ops.

        The inner-op share counts each CPU kernel as one op and each delegate as its decoded inner
        operations; it is None while any delegate could not be decoded.
        """
        kernels = sum(sum(p.compute_ops.values()) + sum(p.glue_ops.values())
                      for p in self.cpu_islands)
        delegate_calls = len(self.delegate_partitions)
        total = kernels + delegate_calls
        by_instr = delegate_calls / total if total else 0.0
        inner = [p.inner_ops for p in self.delegate_partitions]
        by_ops: float | None = None
        inner_total: int | None = None
        if all(i is not None for i in inner):
            inner_total = sum(i or 0 for i in inner)
            denom = inner_total + kernels
            by_ops = inner_total / denom if denom else 0.0
        return {
            "by_instructions": by_instr,
            "by_inner_ops": by_ops,
            "delegate_inner_ops": inner_total,
            "cpu_kernel_calls": kernels,
        }


def partition_method(method: Method, dataflow: Dataflow | None = None) -> MethodPartitions:
    flow = dataflow or analyse_dataflow(method)
    partitions: list[Partition] = []
    partition_of: list[int] = []
    per_backend: Counter[str] = Counter()
    for ins in method.instructions:
        if ins.kind is InstructionKind.DELEGATE:
            d = ins.delegate_index
            delegate = method.delegates[d] if d is not None and 0 <= d < len(method.delegates) else None
            backend = delegate.id if delegate else "unknown delegate"
            per_backend[backend] += 1
            part = Partition(len(partitions), backend, per_backend[backend], delegate_index=d)
            part.inner_ops = delegate.decoded.inner_op_count if delegate else None
            partitions.append(part)
        else:
            if not partitions or not partitions[-1].is_cpu:
                per_backend[CPU] += 1
                partitions.append(Partition(len(partitions), CPU, per_backend[CPU]))
            part = partitions[-1]
            if ins.kind is InstructionKind.KERNEL:
                op = ins.op_index
                name = (method.operators[op].full_name
                        if op is not None and 0 <= op < len(method.operators) else "unknown op")
                (part.glue_ops if is_glue(name) else part.compute_ops)[name] += 1
            else:
                part.control[ins.kind.value] += 1
        part.instructions.append(ins.index)
        partition_of.append(part.index)

    crossings = _crossings(method, flow, partitions, partition_of)
    return MethodPartitions(method.name, partitions, partition_of, crossings, flow)


def _crossings(
    method: Method, flow: Dataflow, partitions: list[Partition], partition_of: list[int]
) -> list[Crossing]:
    """Edges with a delegate on exactly one side (method inputs and outputs count as CPU), and
    handoffs between two different delegate partitions."""
    seen: set[tuple[int, str, str]] = set()  # a tensor read twice by one partition crosses once
    out: list[Crossing] = []

    def side(producer: int) -> tuple[str, str]:
        if producer == FROM_METHOD_INPUT:
            return CPU, "method input"
        p = partitions[partition_of[producer]]
        return p.backend, p.name

    all_edges = [e for edges in flow.edges for e in edges] + flow.output_edges
    for e in all_edges:
        if e.producer in (FROM_CONSTANT, FROM_NOWHERE):
            continue
        src_backend, src_name = side(e.producer)
        if e.consumer >= len(method.instructions):
            dst_backend, dst_name = CPU, "method output"
        else:
            dst = partitions[partition_of[e.consumer]]
            dst_backend, dst_name = dst.backend, dst.name
        handoff = src_backend != CPU and dst_backend != CPU and src_name != dst_name
        if (src_backend == CPU) == (dst_backend == CPU) and not handoff:
            continue
        key = (e.value, src_name, dst_name)
        if key in seen:
            continue
        seen.add(key)
        tensor = method.tensor(e.value)
        nbytes = tensor.nbytes if tensor else 0
        direction = f"{src_backend}→{dst_backend}"
        out.append(Crossing(e.value, src_name, dst_name, direction, nbytes, handoff))
        if e.producer >= 0:
            partitions[partition_of[e.producer]].bytes_out += nbytes
        if e.consumer < len(method.instructions):
            partitions[partition_of[e.consumer]].bytes_in += nbytes
    return out


def partition_program(program: Program) -> list[MethodPartitions]:
    return [partition_method(m) for m in program.methods]
