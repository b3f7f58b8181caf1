"""The deployment memory map: what lands in which memory of the device, how much, and the pool
sizes to set in Arm's bare-metal runner ("will it fit on the board?").

Every figure says whether it is exact (read from the file) or estimated, and from what. The
memories are the ones the Ethos-U memory mode and system config of the program's delegates name
(`DelegateMemory`, from the decoder), in four regions: SRAM, DRAM, on-chip and off-chip flash.
What lands where:

- the program file (the `.pte`, or the bundle that holds it), and the external data (`.ptd`) it
  reads: where the NPU reads its command streams and weights from (the memory mode's constant
  area). Without an NPU delegate nothing in the file says where it lives: off-chip flash is
  assumed, and said. Of the file: the CPU kernels' constant data, the NPU command streams and
  weights (not added again);
- the planned arenas (ExecuTorch's memory plan, `non_const_buffer_sizes`), which Arm's runner
  takes from its method allocator pool, placed in DDR by its linker scripts; mem_id 3 from its
  planned fast memory pool in SRAM. Of the arenas: the method's inputs and outputs;
- the NPU scratch, from the runtime's temp allocator: the largest partition's, since partitions
  (and methods) run one at a time, in the memory mode's arena memory;
- the fast scratch of `Dedicated_Sram` (region 2), in the memory mode's cache memory;
- the runtime's own bookkeeping in the method allocator (values, tensors, instructions,
  delegates): an estimate from the program's counts, labelled as such, never added to an exact
  figure.

The runner loads one method: the program's first. Which runner, and the build options that
size its pools, is in the backend's record (`Backend.runner`: Arm's runner, examples/arm/
executor_runner in ExecuTorch, for Ethos-U; its sources are cited in docs/fit.md). A program
without delegates gets Arm's runner too; one for a phone or desktop backend (`Backend.hosted`:
XNNPACK, Vulkan, Core ML ...) gets no map unless one is asked for (`fit --board`, a size).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.memory import INPUT, INPUT_OUTPUT, OUTPUT, MethodMemory
from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.backends import ARM_RUNNER, BACKENDS, Runner
from pte_adapter.program.delegate_graph import (
    DRAM,
    OFF_CHIP_FLASH,
    ON_CHIP_FLASH,
    SRAM,
    DelegateMemory,
)
from pte_adapter.program.model import InstructionKind, Method, Program

REGIONS = (SRAM, DRAM, ON_CHIP_FLASH, OFF_CHIP_FLASH)
REGION_NAMES = {
    SRAM: "SRAM",
    DRAM: "DRAM",
    ON_CHIP_FLASH: "on-chip flash",
    OFF_CHIP_FLASH: "off-chip flash",
}
# The bookkeeping estimate: bytes per counted thing that ExecuTorch's Method::init takes from the
# method allocator on a 32-bit Cortex-M (runtime/executor/method.cpp, tensor_parser_portable.cpp):
# an EValue (8-byte payload and tag); a TensorImpl (four pointers, dim, numel, numel bound, dtype,
# dynamism, device) and its strides (one int32 per dimension); per instruction, its kernel
# pointer and argument span; per argument, an EValue pointer; per KernelCall argument, a
# TensorMeta for the kernel lookup; per delegate, its BackendDelegate and the backend's handle
# (a guess: a backend's own allocations are not in the file).
BOOKKEEPING = {
    "values": 16,
    "tensors": 32,
    "dims": 4,
    "instructions": 12,
    "args": 4,
    "kernel_args": 12,
    "delegates": 64,
}
BOOKKEEPING_SOURCE = (
    "{values} values x 16 + {tensors} tensors x 32 + {dims} dimensions x 4 + {instructions} "
    "instructions x 12 + {args} arguments x 4 + {kernel_args} kernel arguments x 12 + "
    "{delegates} delegates x 64 bytes (ExecuTorch's Method::init on a 32-bit CPU; a backend's own "
    "allocations are not counted)"
)


@dataclass(frozen=True)
class Part:
    """Of an item: a share of its bytes, not added again."""

    key: str
    what: str
    bytes: int
    exact: bool
    source: str


@dataclass(frozen=True)
class Placed:
    """One thing in one memory region."""

    key: str  # program, external_data, arenas, fast_arena, unplanned_inputs, scratch, ...
    what: str
    bytes: int
    region: str  # one of REGIONS
    exact: bool
    source: str  # where the figure comes from
    why_here: str  # why in this region
    pool: str = ""  # the runner's pool it is taken from (a build option), if any
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True)
class Pool:
    """A pool size of the bare-metal runner: its exact part, and an estimate beside it."""

    option: str
    what: str
    region: str
    exact_bytes: int
    estimated_bytes: int  # 0: nothing estimated
    note: str

    @property
    def suggested_bytes(self) -> int:
        return self.exact_bytes + self.estimated_bytes


@dataclass(frozen=True)
class NpuPartitionMemory:
    """One NPU partition's memory facts (its figures as its compiler's summary reports them:
    `memory.compiler_summary`)."""

    method: str
    partition: int
    delegate: int
    memory: DelegateMemory


@dataclass
class DeploymentMap:
    runner: Runner  # whose pools
    method: str | None  # the method the runner loads, the program's first (None: no method)
    items: list[Placed]
    pools: list[Pool]
    partitions: list[NpuPartitionMemory]
    problems: list[str] = field(default_factory=list)

    def region_bytes(self, exact_only: bool = False) -> dict[str, int]:
        """Bytes per region (only the regions something lands in), in REGIONS order."""
        out: dict[str, int] = {}
        for r in REGIONS:
            items = [i for i in self.items if i.region == r and (i.exact or not exact_only)]
            if items:
                out[r] = sum(i.bytes for i in items)
        return out

    def item(self, key: str) -> Placed | None:
        return next((i for i in self.items if i.key == key), None)


def runner_method(program: Program) -> Method | None:
    """The method the runner loads: the program's first (Arm's: `program.get_method_name(0)` in
    arm_executor_runner.cpp)."""
    return program.methods[0] if program.methods else None


def program_runner(program: Program) -> tuple[Runner | None, str]:
    """The bare-metal runner the program's delegates name (`Backend.runner`), Arm's for a program
    without delegates; None, with why, for a program of a phone or desktop backend."""
    records = [BACKENDS[i] for i in _delegate_ids(program) if i in BACKENDS]
    named = next((r.runner for r in records if r.runner is not None), None)
    if named is not None:
        return named, ""
    hosted = [r for r in records if r.hosted]
    if hosted:
        names = ", ".join(dict.fromkeys(r.display for r in hosted))
        return None, (
            f"{names} runs on a phone or desktop, not under a bare-metal runner: no memory map "
            "unless a board or a memory size is asked for (pte-adapter fit --board NAME, --sram, "
            "--dram, --flash)"
        )
    return ARM_RUNNER, ""


def _delegate_ids(program: Program) -> list[str]:
    return list(dict.fromkeys(d.id for m in program.methods for d in m.delegates))


def _npu_partitions(
    program: Program, partitions: dict[str, MethodPartitions]
) -> list[NpuPartitionMemory]:
    out = []
    for method in program.methods:
        parts = partitions.get(method.name)
        by_delegate = {
            p.delegate_index: p.index for p in (parts.delegate_partitions if parts else [])
        }
        for d in method.delegates:
            mem = d.decoded.memory
            if mem is not None:
                index = by_delegate.get(d.index, -1)
                out.append(NpuPartitionMemory(method.name, index, d.index, mem))
    return out


def _const_region(npu: list[NpuPartitionMemory], problems: list[str]) -> tuple[str, str]:
    """Where the program file lives, and why."""
    places = sorted({p.memory.const_memory for p in npu if p.memory.const_memory})
    if not places:
        why = "no NPU delegate says where the program lives: read-only storage (flash) assumed"
        return OFF_CHIP_FLASH, why
    if len(places) > 1:
        problems.append(f"the NPU partitions read their weights from different memories: {places}")
    first = next(p.memory for p in npu if p.memory.const_memory == places[0])
    return first.const_region or OFF_CHIP_FLASH, (
        f"the NPU reads its command streams and weights from it in place: {first.memory_mode}'s "
        f"constant area is {places[0]} in {first.system_config}"
    )


def _constants(program: Program) -> tuple[int, int]:
    """Bytes of the CPU kernels' constant data: (in the program file, in external files)."""
    seen: set[tuple[str, object]] = set()
    inside = outside = 0
    for m in program.methods:
        tensors = m.tensors  # `Method.tensor` in line: this walks every value
        n = len(tensors)
        for v in m.values:
            t = tensors[v.index] if 0 <= v.index < n else None
            if t is None or (c := t.constant) is None or c.kind == "mutable_segment":
                continue
            ident = (c.kind, c.key if c.kind == "external" else c.buffer_index)
            if ident in seen:
                continue
            seen.add(ident)
            size = c.size if c.size is not None else t.nbytes
            if c.kind == "external":
                outside += size
            else:
                inside += size
    return inside, outside


def _file_items(
    program: Program, npu: list[NpuPartitionMemory], problems: list[str]
) -> list[Placed]:
    region, why = _const_region(npu, problems)
    inside, outside = _constants(program)
    commands = sum(p.memory.command_bytes for p in npu)
    weights_in = sum(p.memory.weight_bytes for p in npu if not p.memory.weights_source)
    weights_out = sum(p.memory.weight_bytes for p in npu if p.memory.weights_source)
    parts = [Part("cpu_constants", "CPU kernels' constant data", inside, True, "constant tensors")]
    if npu:
        parts.append(Part("npu_commands", "NPU command streams", commands, True, "cmd_data blocks"))
        parts.append(
            Part("npu_weights", "NPU weights", weights_in, True, "weight_data blocks in the file")
        )
    what = "program file (bundle)" if program.bundle is not None else "program file"
    items = [
        Placed(
            "program",
            what,
            program.file_size,
            region,
            True,
            "the file's size",
            why,
            parts=tuple(parts),
        )
    ]
    if outside or weights_out:
        ext_parts = [
            Part("cpu_constants", "CPU kernels' constant data", outside, True, "external tensors"),
            Part("npu_weights", "NPU weights", weights_out, True, "external weight_data blocks"),
        ]
        items.append(
            Placed(
                "external_data",
                "external data (.ptd)",
                outside + weights_out,
                region,
                True,
                "the named data the program reads from .ptd files",
                why,
                parts=tuple(p for p in ext_parts if p.bytes),
            )
        )
    return items


def _io_bytes(memory: MethodMemory, kinds: tuple[str, ...]) -> int:
    spans: dict[int, list[tuple[int, int]]] = {}
    for t in memory.tensors:
        if t.kind in kinds:
            spans.setdefault(t.arena, []).append((t.offset, t.offset + t.nbytes))
    total = 0
    for ranges in spans.values():
        reach = None
        for start, end in sorted(ranges):
            if reach is None or start >= reach:
                total, reach = total + end - start, end
            elif end > reach:
                total, reach = total + end - reach, end
    return total


def _arena_items(method: Method, memory: MethodMemory | None, runner: Runner) -> list[Placed]:
    sizes = method.non_const_buffer_sizes[1:]
    fast_arena, align = runner.fast_memory_arena, runner.align
    slow = [s for i, s in enumerate(sizes, start=1) if i != fast_arena]
    aligned = sum(-(-s // align) * align for s in slow)
    parts: list[Part] = []
    if memory is not None:
        for key, what, kinds in (
            ("inputs", "inputs", (INPUT, INPUT_OUTPUT)),
            ("outputs", "outputs", (OUTPUT, INPUT_OUTPUT)),
        ):
            parts.append(Part(key, what, _io_bytes(memory, kinds), True, f"planned {what}"))
    why = f"{runner.name} takes it from its method allocator pool, which its linker scripts put in DDR"
    items = [
        Placed(
            "arenas",
            f"planned arenas of {method.name}",
            aligned,
            DRAM,
            True,
            f"non_const_buffer_sizes {sizes} (each rounded up to {align} bytes)",
            why,
            runner.method_pool,
            tuple(parts),
        )
    ]
    if len(sizes) >= fast_arena and sizes[fast_arena - 1]:
        items.append(
            Placed(
                "fast_arena",
                f"planned fast memory (mem_id {fast_arena})",
                sizes[fast_arena - 1],
                SRAM,
                True,
                f"non_const_buffer_sizes[{fast_arena}]",
                f"{runner.name} takes mem_id {fast_arena} from its planned fast memory pool in "
                "SRAM",
                runner.fast_memory_pool,
            )
        )
    unplanned = [
        t.nbytes
        for v in method.inputs
        if (t := method.tensor(v)) is not None and t.memory is None and t.constant is None
    ]
    if sum(unplanned):
        items.append(
            Placed(
                "unplanned_inputs",
                "inputs not in the plan",
                sum(unplanned),
                DRAM,
                True,
                "input tensors without a memory plan",
                f"{runner.name} allocates them from its method allocator pool",
                runner.method_pool,
            )
        )
    return items


def bookkeeping(method: Method) -> tuple[int, str]:
    """The runtime's own bookkeeping in the method allocator: an estimate, and how it was made."""
    every = method.tensors  # `Method.tensor` in line: this walks every value
    n = len(every)
    tensors = [t for v in method.values if 0 <= v.index < n and (t := every[v.index]) is not None]
    kernels = [i for i in method.instructions if i.kind is InstructionKind.KERNEL]
    counts = {
        "values": len(method.values),
        "tensors": len(tensors),
        "dims": sum(len(t.sizes) for t in tensors),
        "instructions": len(method.instructions),
        "args": sum(len(i.args) for i in method.instructions),
        "kernel_args": sum(len(i.args) for i in kernels),
        "delegates": len(method.delegates),
    }
    est = sum(counts[k] * BOOKKEEPING[k] for k in BOOKKEEPING)
    return est, BOOKKEEPING_SOURCE.format(**counts)


def _scratch_items(npu: list[NpuPartitionMemory], runner: Runner) -> list[Placed]:
    items = []
    placed = [p for p in npu if p.memory.arena_memory]
    if placed:
        big = max(placed, key=lambda p: p.memory.scratch_bytes)
        items.append(
            Placed(
                "scratch",
                "NPU scratch (temp allocator)",
                big.memory.scratch_bytes,
                big.memory.arena_region or SRAM,
                True,
                f"scratch_size of {big.method} partition {big.partition}, the largest of "
                f"{len(placed)} (partitions run one at a time)",
                f"{big.memory.memory_mode}'s arena is {big.memory.arena_memory} in "
                f"{big.memory.system_config}",
                runner.scratch_pool,
            )
        )
    cached = [p for p in npu if p.memory.cache_memory and p.memory.fast_scratch_bytes]
    if cached:
        big = max(cached, key=lambda p: p.memory.fast_scratch_bytes)
        items.append(
            Placed(
                "fast_scratch",
                "NPU fast scratch",
                big.memory.fast_scratch_bytes,
                big.memory.cache_region or SRAM,
                True,
                f"the highest address {big.method} partition {big.partition}'s commands touch "
                "in region 2, the largest",
                f"{big.memory.memory_mode}'s staging cache is {big.memory.cache_memory}",
                runner.fast_scratch_pool,
            )
        )
    return items


def _pools(items: list[Placed], method: Method | None, runner: Runner, estimate: int) -> list[Pool]:
    """The runner's pools; `estimate`: the method's bookkeeping (`bookkeeping`), 0 without one."""
    pools = []
    method_items = [i for i in items if i.pool == runner.method_pool and i.exact]
    if method is not None:
        pools.append(
            Pool(
                runner.method_pool,
                "method allocator",
                DRAM,
                sum(i.bytes for i in method_items),
                estimate,
                "planned arenas (exact) and the runtime's bookkeeping (estimate, see the item)",
            )
        )
    for option, what, note in (
        (
            runner.fast_memory_pool,
            "planned fast memory",
            f"mem_id {runner.fast_memory_arena} of the memory plan",
        ),
        (
            runner.scratch_pool,
            "temp allocator",
            "the largest NPU scratch; a CPU kernel's own temporary allocations are not in the file",
        ),
        (runner.fast_scratch_pool, "fast scratch temp allocator", "the largest NPU fast scratch"),
    ):
        mine = [i for i in items if i.pool == option]
        if mine:
            pools.append(Pool(option, what, mine[0].region, max(i.bytes for i in mine), 0, note))
    return pools


def _bookkeeping_item(est: int, how: str, runner: Runner) -> Placed:
    return Placed(
        "bookkeeping",
        "runtime bookkeeping (estimate)",
        est,
        DRAM,
        False,
        how,
        f"{runner.name} takes it from its method allocator pool",
        runner.method_pool,
    )


def deployment_map(
    program: Program,
    partitions: dict[str, MethodPartitions],
    memories: dict[str, MethodMemory],
    runner: Runner,
) -> DeploymentMap:
    """The map of the whole program under `runner` (computed once, in `analyse`, for the runner
    `program_runner` names; on request for another)."""
    problems: list[str] = []
    npu = _npu_partitions(program, partitions)
    for p in npu:
        problems.extend(f"{p.method} partition {p.partition}: {q}" for q in p.memory.problems)
    items = _file_items(program, npu, problems)
    method = runner_method(program)
    if method is not None:
        items += _arena_items(method, memories.get(method.name), runner)
    items += _scratch_items(npu, runner)
    estimate = 0
    if method is not None:  # a walk over every value: once, for the item and the pool
        estimate, how = bookkeeping(method)
        items.append(_bookkeeping_item(estimate, how, runner))
    return DeploymentMap(
        runner=runner,
        method=method.name if method is not None else None,
        items=items,
        pools=_pools(items, method, runner, estimate),
        partitions=npu,
        problems=problems,
    )
