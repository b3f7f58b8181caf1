"""When each planned tensor is alive, how many arena bytes are live at each instruction, the peak,
and each NPU partition's scratch beside it: "will it fit in SRAM?".

ExecuTorch's memory planner gives every activation tensor an arena (`memory_id`, an index into
`non_const_buffer_sizes`) and an offset; the runtime hands the planned arenas to the method once.
Two tensors may share bytes only when their lifetimes do not overlap, so the arena size bounds the
peak but does not say when it is reached or by which tensors. The lifetime of a planned tensor,
by instruction (the order the method runs them), as ExecuTorch's planner defines it
(`exir/memory_planning.py: update_all_tensors_lifetime`, from the first to the last node that
mentions the tensor):

- from its first write (the kernel or delegate call that outputs it) or first read, whichever
  comes first, to its last read;
- a method input is alive from the first instruction, a method output to the last one;
- a tensor read before anything writes it, and not an input, carries state from one call to the
  next (a mutable buffer): alive for the whole method;
- a tensor mentioned inside a loop body (a backward JumpFalseCall) is alive for the whole body;
- a tensor written and never read (`native_layer_norm`'s mean and rstd) ends where it is written.
  The planner may hold it a little longer, to the `getitem` node of its kernel's tuple, which
  writes no instruction: where graph passes put that node is not in the file.

Live bytes count each arena byte once: two tensors that share bytes (a view and its base) add the
union of their byte ranges. The tests compare lifetimes, live bytes and the peak with ExecuTorch's
own planning, recorded when each example was built (`examples/*.memory.json`).

An Ethos-U partition's scratch (`scratch_bytes` of its decoded payload: the NPU's working memory,
where the runtime also copies the call's inputs and from where it copies its outputs) is not in
the planned arenas: ExecuTorch's Ethos-U runtime allocates it from the method's temp allocator for
the duration of the call (`backends/arm/runtime/EthosUBackend.cpp`), and the executor resets that
allocator after every instruction. So the temp allocator must hold the largest scratch of one
partition, beside the planned arenas.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from pte_adapter.analysis.dataflow import Dataflow, backward_jumps, tensor_values
from pte_adapter.analysis.live_bytes import live_bytes, union_bytes
from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.program.cached import cached
from pte_adapter.program.model import (
    JUMP_FALSE,
    Method,
)

# The decoder stat that names a delegate's scratch size (bytes), whatever its backend.
SCRATCH_STAT = "scratch_bytes"
# Where the runtime allocates a delegate's scratch.
SCRATCH_HOME = "temp allocator"

INPUT, OUTPUT, INPUT_OUTPUT, STATE, INTERMEDIATE = (
    "input",
    "output",
    "input and output",
    "state",
    "intermediate",
)


@dataclass(frozen=True)
class TensorLife:
    """One planned tensor and the instructions during which its bytes are in use."""

    value: int  # value index
    arena: int  # memory_id
    offset: int  # byte offset in the arena
    nbytes: int
    first: int  # instruction index
    last: int  # instruction index, >= first
    producer: int | None  # the instruction that first writes it (None: never written)
    kind: str  # INPUT, OUTPUT, INPUT_OUTPUT, STATE or INTERMEDIATE

    def __init__(  # the fields at once: a frozen dataclass's own sets each by object.__setattr__
        self,
        value: int,
        arena: int,
        offset: int,
        nbytes: int,
        first: int,
        last: int,
        producer: int | None,
        kind: str,
    ) -> None:
        self.__dict__.update(
            value=value,
            arena=arena,
            offset=offset,
            nbytes=nbytes,
            first=first,
            last=last,
            producer=producer,
            kind=kind,
        )


@dataclass
class ArenaUse:
    """One planned arena over the method."""

    arena: int  # memory_id
    size: int  # its planned size in bytes (`non_const_buffer_sizes`)
    live_bytes: list[int]  # per instruction: bytes of live tensors (union of their ranges)
    peak_bytes: int
    peak_at: int  # the first instruction where the peak is reached (-1: no instruction)


@dataclass(frozen=True)
class Scratch:
    """One delegate partition's scratch, beside the planned bytes live while it runs."""

    partition: int  # partition index
    instruction: int  # its DelegateCall
    scratch_bytes: int
    home: str  # where the runtime allocates it (SCRATCH_HOME)
    planned_live_bytes: int  # planned arena bytes live during the call (its inputs, outputs, ...)
    io_bytes: int  # of which the call's own inputs and outputs (copied into and out of scratch)


@dataclass
class MethodMemory:
    tensors: list[TensorLife]  # every planned tensor with a lifetime, by value index
    arenas: list[ArenaUse]  # every planned arena (memory_id >= 1), by id
    live_bytes: list[int]  # per instruction: all arenas together
    peak_live_bytes: int
    peak_at: int  # first instruction of the peak (-1: the method has no instruction)
    live_at_peak: list[TensorLife]  # the tensors live there, largest first
    scratch: list[Scratch]  # per delegate partition with a known scratch size, in order
    peak_scratch_bytes: int  # the largest scratch: what the temp allocator must hold at least
    partition_peaks: list[int]  # per partition: the most planned bytes live at its instructions
    problems: list[str] = field(default_factory=list)

    @cached
    def scratch_by_partition(self) -> dict[int, Scratch]:
        """Each partition's scratch (the last one listed), for views that ask per partition."""
        return {s.partition: s for s in self.scratch}


@dataclass
class _Use:
    """What the instructions do with one planned tensor."""

    value: int
    arena: int
    offset: int
    nbytes: int
    first: int  # first instruction that mentions it (0 for an input)
    last: int  # last instruction that mentions it (the last one for an output)
    writer: int | None  # first instruction that writes it
    kind: str
    mentioned: int  # first instruction that mentions it (before any control-flow extension)


def control_regions(method: Method) -> list[tuple[int, int]]:
    """(first, last) instruction of each control-flow construct: a loop body a backward jump
    closes, and an if/else (`torch.cond`: a JumpFalseCall over the true branch, which ends with a
    jump over the false branch)."""
    regions = list(backward_jumps(method))
    n = len(method.instructions)
    for ins in method.instructions:
        if ins.kind is not JUMP_FALSE or ins.destination is None:
            continue
        if not 0 <= ins.chain < len(method.chains) or ins.destination <= ins.chain_position:
            continue
        base = method.chains[ins.chain].first_instruction
        end = base + ins.destination  # the first instruction after the true branch
        skip = method.instructions[end - 1] if 0 < end <= n else None
        if (
            skip is not None
            and skip.kind is JUMP_FALSE
            and skip.index != ins.index
            and skip.destination is not None
            and skip.destination > skip.chain_position
        ):
            end = base + skip.destination  # ... and after the false branch
        regions.append((ins.index, min(end, n) - 1))
    return regions


def _spans(method: Method, parts: MethodPartitions) -> _Spans:
    """Per tensor value: its first and last mention, its first write, and its first mention
    outside any construct's extension, by instruction.

    A value that enters or leaves a control-flow construct (mentioned inside and outside it: a
    condition, a branch's input or result, a loop-carried value) is held for the whole construct,
    as ExecuTorch plans it: there the construct is one node of the graph (`cond`, `while_loop`),
    its branches submodules planned on their own."""
    flow = parts.dataflow
    # Four dicts of ints, not a list per value: one pass over every instruction's tensors.
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    writer: dict[int, int] = {}
    for i, (io, reads) in enumerate(zip(flow.io, flow.edges, strict=True)):
        for e in reads:  # the instruction's tensor inputs, lists expanded (`tensor_values`)
            v = e.value
            if v not in first:
                first[v] = i
            last[v] = i
        for v in io.output_tensors:
            if v not in first:
                first[v] = i
            last[v] = i
            if v not in writer:
                writer[v] = i
    mentioned = dict(first)
    regions = control_regions(method)
    mentions: dict[int, set[int]] = {}
    if regions:
        for i, io in enumerate(flow.io):
            for v in tensor_values(method, io.inputs) + io.output_tensors:
                mentions.setdefault(v, set()).add(i)
        # The caller writes the inputs before the first instruction and reads the outputs after
        # the last: outside every construct.
        for v in tensor_values(method, method.inputs):
            mentions.setdefault(v, set()).add(-1)
        for v in tensor_values(method, method.outputs):
            mentions.setdefault(v, set()).add(len(flow.io))
    for start, end in regions:
        for v, at in mentions.items():
            inside = any(start <= i <= end for i in at)
            if inside and (any(i < start or i > end for i in at) or _carried(flow, v, start, end)):
                mentioned.setdefault(v, start)
                first[v] = min(first.get(v, start), start)
                last[v] = max(last.get(v, end), end)
    return _Spans(first, last, writer, mentioned)


@dataclass
class _Spans:
    """Per tensor value, by instruction (`_spans`): each dict holds the values mentioned."""

    first: dict[int, int]
    last: dict[int, int]
    writer: dict[int, int]  # values never written are missing
    mentioned: dict[int, int]  # first mention before any control-flow extension


def _carried(flow: Dataflow, v: int, start: int, end: int) -> bool:
    """Whether a loop body reads `v` as the previous iteration left it."""
    return any(e.value == v and start <= e.consumer <= end for e in flow.loop_edges)


def _uses(method: Method, parts: MethodPartitions) -> list[_Use]:
    last_ins = max(len(method.instructions) - 1, 0)
    spans = _spans(method, parts)
    inputs, outputs = set(method.inputs), set(method.outputs)
    tensors = method.tensors
    n = len(tensors)
    first_of, last_of = spans.first, spans.last
    writer_of, mentioned_of = spans.writer, spans.mentioned
    uses = []
    # Only the values something mentions, in value order: a planned tensor nothing mentions is
    # left out, so the others (most of a method's values) need not be looked at.
    for v in sorted({*first_of, *inputs, *outputs}):
        if not 0 <= v < n:
            continue
        t = tensors[v]
        if t is None or t.memory is None or t.memory.arena <= 0:
            continue
        first, last = first_of.get(v, 0), last_of.get(v, 0)
        kind = INTERMEDIATE
        if v in inputs:
            kind, first = (INPUT_OUTPUT if v in outputs else INPUT), 0
        elif v in outputs:
            kind = OUTPUT
        if v in outputs:
            last = last_ins
        uses.append(
            _Use(
                v,
                t.memory.arena,
                t.memory.offset,
                t.nbytes,
                first,
                last,
                writer_of.get(v),
                kind,
                mentioned_of.get(v, 0),
            )
        )
    return uses


_INPUT_KINDS = (INPUT, INPUT_OUTPUT)


def _view_base(uses: list[_Use], candidates: list[tuple[int, int]], u: _Use) -> int | None:
    """The latest written use of `candidates` (sorted by -available, index) available before `u`
    is first mentioned whose bytes overlap `u`'s."""
    start = bisect.bisect_right(candidates, (-u.mentioned, len(uses)))
    end = u.offset + u.nbytes
    for i in range(start, len(candidates)):
        w = uses[j := candidates[i][1]]
        if w.offset < end and u.offset < w.offset + w.nbytes:
            return j
    return None


def _group_views(uses: list[_Use], last_ins: int) -> list[int]:
    """Per use, the index of the use whose bytes it shares (itself for most).

    A tensor read before anything writes it either views the bytes of one written earlier (the
    latest written tensor of the same arena whose bytes overlap its own: a `memory.view`, which
    ExecuTorch plans as a view spec sharing its base's storage and lifetime), or, when there is
    none, carries state between calls and stays alive for the whole method."""
    root = list(range(len(uses)))
    # From which instruction on each tensor's bytes hold its value without a view's help: an
    # input's from the start, a tensor written before it is first mentioned's from that write;
    # None for the others (a view, or state), fixed up below.
    avail = [
        -1
        if u.kind in _INPUT_KINDS
        else (u.writer if u.writer is not None and u.writer <= u.mentioned else None)
        for u in uses
    ]
    # Per arena, the written uses, latest available first (ties: the earlier use first); the base
    # of a view is the first of them available before it is mentioned whose bytes overlap its own.
    written: dict[int, list[tuple[int, int]]] = {}
    for k, u in enumerate(uses):
        o = avail[k]
        if o is not None:
            written.setdefault(u.arena, []).append((-o, k))
    for candidates in written.values():
        candidates.sort()
    for k, u in enumerate(uses):
        if avail[k] is not None:
            continue
        base = _view_base(uses, written.get(u.arena, []), u)
        if base is None:
            u.kind, u.first, u.last = STATE, 0, last_ins
        else:
            root[k] = base
    for k in range(len(uses)):  # follow views of views to the written tensor
        if root[k] == k:
            continue  # most: no view
        seen = {k}
        while root[root[k]] != root[k] and root[root[k]] not in seen:
            seen.add(root[k])
            root[k] = root[root[k]]
    return root


def tensor_lives(method: Method, parts: MethodPartitions) -> list[TensorLife]:
    """The lifetime of every planned tensor the method mentions (see the module docstring); a
    view and the tensor it views share one lifetime, spanning both."""
    uses = _uses(method, parts)
    root = _group_views(uses, max(len(method.instructions) - 1, 0))
    span: dict[int, tuple[int, int]] = {}
    for k, u in enumerate(uses):
        got = span.get(r := root[k])
        if got is None:  # most: a tensor no view shares
            span[r] = (u.first, u.last)
        else:
            a, b = got
            span[r] = (a if a < u.first else u.first, b if b > u.last else u.last)
    lives = []
    for k, u in enumerate(uses):
        first, last = span[root[k]]
        lives.append(
            TensorLife(u.value, u.arena, u.offset, u.nbytes, first, last, u.writer, u.kind)
        )
    return lives


def _arena_uses(method: Method, lives: list[TensorLife], steps: int) -> list[ArenaUse]:
    sizes = method.non_const_buffer_sizes
    ids = sorted({i for i in range(1, len(sizes))} | {t.arena for t in lives})
    arenas = []
    for a in ids:
        use = live_bytes([t for t in lives if t.arena == a], steps)
        peak = max(use, default=0)
        size = sizes[a] if a < len(sizes) else 0
        arenas.append(ArenaUse(a, size, use, peak, use.index(peak) if use else -1))
    return arenas


def _bytes(lives: list[TensorLife]) -> int:
    """Bytes these tensors occupy, per arena each byte once."""
    arenas: dict[int, list[tuple[int, int]]] = {}
    for t in lives:
        arenas.setdefault(t.arena, []).append((t.offset, t.offset + t.nbytes))
    return sum(union_bytes(r) for r in arenas.values())


def _scratch(
    method: Method, parts: MethodPartitions, lives: list[TensorLife], live: list[int]
) -> list[Scratch]:
    flow = parts.dataflow
    out = []
    for p in parts.delegate_partitions:
        d = p.delegate_index
        if d is None or not 0 <= d < len(method.delegates) or not p.instructions:
            continue
        size = method.delegates[d].decoded.stats.get(SCRATCH_STAT)
        if not isinstance(size, int):
            continue
        call = p.instructions[0]
        io = set(flow.io[call].output_tensors) | set(tensor_values(method, flow.io[call].inputs))
        io_bytes = _bytes([t for t in lives if t.value in io])
        planned = live[call] if call < len(live) else 0
        out.append(Scratch(p.index, call, size, SCRATCH_HOME, planned, io_bytes))
    return out


def method_memory(method: Method, parts: MethodPartitions) -> MethodMemory:
    """The memory picture of one method (computed once, in `analyse`)."""
    steps = len(method.instructions)
    lives = tensor_lives(method, parts)
    arenas = _arena_uses(method, lives, steps)
    # Per instruction, every arena's live bytes (each arena's list has one entry per instruction).
    total = [sum(per) for per in zip(*(a.live_bytes for a in arenas), strict=True)] or [0] * steps
    peak = max(total, default=0)
    at = total.index(peak) if total else -1
    at_peak = sorted(
        (t for t in lives if t.first <= at <= t.last), key=lambda t: (-t.nbytes, t.value)
    )
    scratch = _scratch(method, parts, lives, total)
    problems = [
        f"arena {a.arena}: {a.peak_bytes} bytes live at instruction {a.peak_at}, more than its "
        f"planned {a.size} bytes"
        for a in arenas
        if a.peak_bytes > a.size
    ]
    return MethodMemory(
        tensors=lives,
        arenas=arenas,
        live_bytes=total,
        peak_live_bytes=peak,
        peak_at=at,
        live_at_peak=at_peak,
        scratch=scratch,
        peak_scratch_bytes=max((s.scratch_bytes for s in scratch), default=0),
        partition_peaks=[
            max((total[i] for i in p.instructions if i < steps), default=0)
            for p in parts.partitions
        ],
        problems=problems,
    )
