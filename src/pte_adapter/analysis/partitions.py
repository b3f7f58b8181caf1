"""Split each method into backend partitions and CPU islands, and count what fragmentation costs.

A *partition* is one DelegateCall (one compiled blob on one backend). A *CPU island* is a maximal run
of non-delegate instructions between them. Both are numbered in instruction order (the order the
method's chains run them): delegate partitions per backend ("NPU partition 2 (EthosUBackend)"), CPU
islands on their own ("CPU island 1"). Names are printable ASCII: Model Explorer draws group labels
with an ASCII-only WebGL font. Names, prefixes and the glue list come from `pte_adapter.backends`.

A *crossing* (the one definition; docs/partitions.md repeats it):
- Only data reads count: the tensor inputs of KernelCalls and DelegateCalls, and the method's
  outputs (read by the caller, on the CPU side). FreeCall and JumpFalseCall reads are control, not
  data. A MoveCall is looked through: whoever reads the moved value reads what the move's source
  was written by.
- A read crosses when the writer's side differs from the reader's: a delegate partition and the CPU
  (CPU islands and method inputs/outputs), or two different delegate partitions (a *handoff*).
- Each tensor is counted once per direction per receiving partition (the method's caller is one
  receiver), and its bytes (shape x dtype size) follow the same rule.
- Inside a loop (a backward JumpFalseCall) a read also sees what the loop body writes after it, one
  iteration earlier (`Dataflow.loop_edges`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pte_adapter.analysis.dataflow import (
    FROM_METHOD_INPUT,
    Dataflow,
    TensorEdge,
    analyse_dataflow,
)
from pte_adapter.backends import CPU, glue_operators, group_prefix, is_glue
from pte_adapter.operator_names import kernel_base
from pte_adapter.program.cached import cached
from pte_adapter.program.model import (
    DELEGATE,
    KERNEL,
    MOVE,
    Method,
)

__all__ = [
    "CPU",
    "Crossing",
    "MethodPartitions",
    "Origins",
    "Partition",
    "crossings_of",
    "is_glue",
    "kernel_names",
    "partition_method",
]

METHOD_INPUT = "method input"
METHOD_OUTPUT = "method output"


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

    @cached
    def name(self) -> str:
        # Cached: every crossing asks both its sides' names, and a partition's number and
        # backend are set when it is made.
        if self.is_cpu:
            return f"CPU island {self.number}"
        return f"{group_prefix(self.backend)} {self.number} ({self.backend})"


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

    # Made once: the what-if asks per island, and a transformer has hundreds of islands (a list
    # per question made it quadratic: 122,936 tests for the 48-layer XNNPACK GPT's 243 islands).
    @cached
    def delegate_partitions(self) -> list[Partition]:
        return [p for p in self.partitions if not p.is_cpu]

    @cached
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
        kernels = sum(
            sum(p.compute_ops.values()) + sum(p.glue_ops.values()) for p in self.cpu_islands
        )
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
    glue = glue_operators()  # `is_glue`, with the registry's list looked up once per method
    # Each operator of the table named and sorted into glue or compute once, not once per call.
    names = [*method.operator_names, "unknown op"]
    glue_names = {name for name in names if kernel_base(name) in glue}
    unknown = len(names) - 1
    for ins in method.instructions:
        if ins.kind is DELEGATE:
            d = ins.delegate_index
            delegate = (
                method.delegates[d] if d is not None and 0 <= d < len(method.delegates) else None
            )
            backend = (delegate.id or "unnamed delegate") if delegate else "unknown delegate"
            if backend == CPU:  # a delegate may not pass itself off as a CPU island
                backend = "CPU (a delegate id)"
            per_backend[backend] += 1
            part = Partition(len(partitions), backend, per_backend[backend], delegate_index=d)
            part.inner_ops = delegate.decoded.inner_op_count if delegate else None
            partitions.append(part)
        else:
            if not partitions or not partitions[-1].is_cpu:
                per_backend[CPU] += 1
                partitions.append(Partition(len(partitions), CPU, per_backend[CPU]))
            part = partitions[-1]
            if ins.kind is KERNEL:
                o = ins.op_index
                name = names[o if o is not None and 0 <= o < unknown else unknown]
                (part.glue_ops if name in glue_names else part.compute_ops)[name] += 1
            else:
                part.control[ins.kind.value] += 1
        part.instructions.append(ins.index)
        partition_of.append(part.index)

    crossings = crossings_of(method, flow, partitions, partition_of)
    return MethodPartitions(method.name, partitions, partition_of, crossings, flow)


def kernel_names(method: Method) -> list[str]:
    """Each instruction's kernel operator (`Method.kernel_operator`: "" for another kind), made
    once per method: the partitioner's reasons and every what-if scenario ask per instruction."""
    names = method.operator_names
    n = len(names)
    return [
        names[o] if (o := ins.op_index) is not None and 0 <= o < n else ""
        for ins in method.instructions
    ]


class Origins:
    """The writers behind a value: a MoveCall is looked through to what it moved."""

    def __init__(self, method: Method, reads: list[TensorEdge]) -> None:
        self.method = method
        self.memo: dict[int, list[int]] = {}
        # The MoveCalls, found once: any other writer is its own origin, known without a call.
        move = MOVE
        self.moves = frozenset(i for i, ins in enumerate(method.instructions) if ins.kind is move)
        # Only a move's edges are ever looked up: a method without moves (most) files none.
        self.into: dict[int, list[TensorEdge]] = {}  # move -> every edge into it
        if self.moves:
            moves = self.moves
            for e in reads:
                if e.consumer in moves:
                    self.into.setdefault(e.consumer, []).append(e)

    def __call__(self, producer: int) -> list[int]:
        n = len(self.method.instructions)
        if producer < 0 or producer >= n:
            return [producer]
        if self.method.instructions[producer].kind is not MOVE:
            return [producer]
        if producer in self.memo:
            return self.memo[producer]
        self.memo[producer] = []  # a cycle of moves resolves to nothing
        found: list[int] = []
        for e in self.into.get(producer, []):
            found.extend(o for o in self(e.producer) if o not in found)
        self.memo[producer] = found
        return found


def crossings_of(
    method: Method,
    flow: Dataflow,
    partitions: Sequence[Partition],
    partition_of: Sequence[int],
    only: list[TensorEdge] | None = None,
    origins: Origins | None = None,
    moved: dict[int, Partition] | None = None,
) -> list[Crossing]:
    """Crossings and handoffs by the definition in this module's docstring (`only`: of these
    reads alone, a subset of the method's, for a partitioning that changed in one place;
    `origins`: the method's, when already made; `moved`: instructions that partitioning put in
    partitions of its own, each in place of its partition in `partition_of`)."""
    moved = moved or {}
    n = len(method.instructions)
    if origins is None or only is None:
        reads = [e for edges in flow.edges for e in edges] + flow.loop_edges
        origins = origins or Origins(method, reads)
        candidates = reads + flow.output_edges if only is None else only
    else:
        candidates = only
    instructions = method.instructions
    data = (KERNEL, DELEGATE)
    moves = origins.moves
    tensors = method.tensors
    seen: set[tuple[int, str, str]] = set()  # (tensor, direction, receiver)
    out: list[Crossing] = []
    for e in candidates:
        # The receiving side: a partition, or the method's outputs (on the CPU); only data reads.
        dst: Partition | None = None
        consumer = e.consumer
        if consumer >= n:
            dst_backend, dst_name = CPU, METHOD_OUTPUT
        elif instructions[consumer].kind in data:
            dst = moved.get(consumer) or partitions[partition_of[consumer]]
            dst_backend, dst_name = dst.backend, dst.name
        else:
            continue
        producer = e.producer
        for origin in origins(producer) if producer in moves else (producer,):
            # The writing side; constants and never-written buffers do not cross.
            src: Partition | None = None
            if origin == FROM_METHOD_INPUT:
                src_backend, src_name = CPU, METHOD_INPUT
            elif origin < 0:
                continue
            else:
                src = moved.get(origin) or partitions[partition_of[origin]]
                src_backend, src_name = src.backend, src.name
            if src_name == dst_name or (src_backend == CPU and dst_backend == CPU):
                continue
            direction = f"{src_backend}→{dst_backend}"
            if (e.value, direction, dst_name) in seen:
                continue
            seen.add((e.value, direction, dst_name))
            tensor = tensors[e.value] if 0 <= e.value < len(tensors) else None
            nbytes = tensor.nbytes if tensor else 0
            handoff = src_backend != CPU and dst_backend != CPU
            out.append(Crossing(e.value, src_name, dst_name, direction, nbytes, handoff))
            if only is not None:
                continue  # a what-if's partitioning: the partitions' own counts stay as they are
            if src is not None:
                src.bytes_out += nbytes
            if dst is not None:
                dst.bytes_in += nbytes
    return out
