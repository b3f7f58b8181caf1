"""Place ETDump events on a program: which instruction, which partition, which method run.

What the runtime logs (ExecuTorch 1.5.1 `Method::execute`; names are fixed strings in the runtime):
- one `Method::execute` event per run, chain -1: the whole run;
- per instruction, an instruction event at (chain, instruction id): `OPERATOR_CALL` for a KernelCall,
  `DELEGATE_CALL`, `JF_CALL`, `MOVE_CALL`, `FREE_CALL`; the portable kernels also log a nested
  `native_call_<op>.<overload>` event at the same instruction (the kernel without argument handling);
- delegate-internal events: a delegate logs its own work with a delegate debug id (int or string)
  at the (chain, instruction id) of its DelegateCall. XNNPACK logs one per runtime operator
  (`Convolution (NHWC, QC8) IGEMM #1`); those names are XNNPACK's runtime operators, which are not
  the serialised nodes (1x1 convolutions run as "Fully Connected", clamps are fused), so they are
  placed on the delegate partition, not on decoded inner nodes;
- load events (`Program::load_method`, `Method::init`, chain -1) in a "Default" block.

The ETDump does not say which method a block ran, nor which program: a run is matched to the method
whose instructions explain every instruction event in it (kind and, for kernels, operator name).
A run no method explains means the profile came from another program: it is refused with
`ProfileMismatchError`, never half-applied. Events that belong to no instruction are listed as
unplaced, never dropped.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.analysis.partitions import MethodPartitions, is_glue, partition_method
from pte_adapter.container.etdump import ETDump, ProfileEvent, RunData
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Instruction, InstructionKind, Method, Program

METHOD_EVENT: Final = "Method::execute"
# The parts of a run's time (`time_split`), in display order.
SPLIT_KEYS: Final = ("delegates", "cpu_compute", "glue", "control", "runtime")
KERNEL_EVENT_PREFIX: Final = "native_call_"
# Instruction event name -> the instruction kind it is logged for.
INSTRUCTION_EVENTS: Final = {
    "OPERATOR_CALL": InstructionKind.KERNEL,
    "DELEGATE_CALL": InstructionKind.DELEGATE,
    "JF_CALL": InstructionKind.JUMP_FALSE,
    "MOVE_CALL": InstructionKind.MOVE,
    "FREE_CALL": InstructionKind.FREE,
}


class ProfileMismatchError(PteFormatError):
    """The ETDump was recorded running a different program."""


@dataclass(frozen=True)
class PlacedEvent:
    """One profile event and where it belongs."""

    run: int  # index of its RunData in the file
    event: ProfileEvent
    role: str  # instruction | kernel | delegate | method | load | unplaced
    method: str = ""
    instruction: int | None = None  # method-level instruction index
    partition: int | None = None  # index into the method's partitions
    reason: str = ""  # for unplaced events: why


@dataclass
class MethodRun:
    """One execution of a method, as the ETDump recorded it (times in ticks)."""

    number: int  # 0-based among this method's runs
    run: int  # RunData index in the file
    total: int | None  # Method::execute duration; None when the event is missing
    instruction_time: dict[int, int] = field(default_factory=dict)  # instruction -> ticks
    instruction_calls: dict[int, int] = field(default_factory=dict)
    kernel_time: dict[int, int] = field(default_factory=dict)  # native_call_* ticks
    # delegate-internal events by the instruction index of their DelegateCall
    delegate_events: dict[int, list[ProfileEvent]] = field(default_factory=dict)


@dataclass
class MethodProfile:
    method: Method
    partitions: MethodPartitions
    runs: list[MethodRun] = field(default_factory=list)


@dataclass
class ProgramProfile:
    etdump: ETDump
    methods: list[MethodProfile]
    placed: list[PlacedEvent]  # every profile event of the file, in file order
    problems: list[str] = field(default_factory=list)

    @property
    def unplaced(self) -> list[PlacedEvent]:
        return [p for p in self.placed if p.role == "unplaced"]

    def method(self, name: str) -> MethodProfile | None:
        for m in self.methods:
            if m.method.name == name:
                return m
        return None


def kernel_event_name(method: Method, ins: Instruction) -> str | None:
    """The `native_call_*` name the portable runtime logs for a KernelCall (namespace dropped)."""
    op = method.operator_of(ins.op_index)
    if op is None:
        return None
    base = op.name.split("::")[-1]
    return KERNEL_EVENT_PREFIX + (f"{base}.{op.overload}" if op.overload else base)


def _instruction_at(method: Method, event: ProfileEvent) -> Instruction | None:
    if not 0 <= event.chain_index < len(method.chains):
        return None
    chain = method.chains[event.chain_index]
    if not 0 <= event.instruction_id < chain.num_instructions:
        return None
    index = chain.first_instruction + event.instruction_id
    return method.instructions[index] if 0 <= index < len(method.instructions) else None


def _is_instruction_event(e: ProfileEvent) -> bool:
    return e.chain_index >= 0 and (
        e.name in INSTRUCTION_EVENTS
        or e.name.startswith(KERNEL_EVENT_PREFIX)
        or e.is_delegate_internal
    )


def _explain(method: Method, e: ProfileEvent) -> str:
    """'' when `method` explains the event, else why not."""
    ins = _instruction_at(method, e)
    where = f"chain {e.chain_index} instruction {e.instruction_id}"
    if ins is None:
        return f"'{e.label}' at {where}: method '{method.name}' has no such instruction"
    if e.is_delegate_internal:
        expected = InstructionKind.DELEGATE
    elif e.name.startswith(KERNEL_EVENT_PREFIX):
        expected = InstructionKind.KERNEL
        want = kernel_event_name(method, ins)
        if ins.kind is expected and want is not None and want != e.name:
            return f"'{e.label}' at {where}: method '{method.name}' runs '{want}' there"
    else:
        expected = INSTRUCTION_EVENTS[e.name]
    if ins.kind is not expected:
        return (
            f"'{e.label}' at {where}: method '{method.name}' has a {ins.kind.value} there, "
            f"not a {expected.value}"
        )
    return ""


def _match_method(program: Program, run: RunData) -> tuple[Method | None, str]:
    """The method that explains every instruction event of the run (best coverage wins)."""
    events = [e for e in run.profile_events if _is_instruction_event(e)]
    best: tuple[float, Method] | None = None
    first_reason = ""
    for method in program.methods:
        reasons = [r for r in (_explain(method, e) for e in events) if r]
        if reasons:
            first_reason = first_reason or reasons[0]
            continue
        seen = {(e.chain_index, e.instruction_id) for e in events if e.name in INSTRUCTION_EVENTS}
        calls = sum(
            1
            for i in method.instructions
            if i.kind in (InstructionKind.KERNEL, InstructionKind.DELEGATE)
        )
        coverage = len(seen) / calls if calls else 0.0
        if best is None or coverage > best[0]:
            best = (coverage, method)
    return (best[1] if best else None), first_reason


def join_profile(
    program: Program, etdump: ETDump, partitions: dict[str, MethodPartitions] | None = None
) -> ProgramProfile:
    """Place every profile event of `etdump` on `program` (on `partitions`, the analysis's
    partitions of each method, when given).

    Raises `ProfileMismatchError` when a run cannot have come from this program."""
    known = partitions or {}
    methods = {
        m.name: MethodProfile(m, known.get(m.name) or partition_method(m)) for m in program.methods
    }
    placed: list[PlacedEvent] = []
    problems: list[str] = []
    matches: dict[tuple[tuple[str, int, int, bool], ...], tuple[Method | None, str]] = {}
    for run in etdump.runs:
        if not any(_is_instruction_event(e) for e in run.profile_events):
            for e in run.profile_events:
                role = "method" if e.name == METHOD_EVENT else "load" if e.chain_index < 0 else ""
                placed.append(
                    PlacedEvent(
                        run.index,
                        e,
                        role or "unplaced",
                        reason=(
                            ""
                            if role
                            else "not an instruction event, and no instruction ran in its block"
                        ),
                    )
                )
            continue
        # Runs of one method log the same events: match each distinct sequence once.
        signature = tuple(
            (e.name, e.chain_index, e.instruction_id, e.is_delegate_internal)
            for e in run.profile_events
            if _is_instruction_event(e)
        )
        if signature not in matches:
            matches[signature] = _match_method(program, run)
        method, reason = matches[signature]
        if method is None:
            names = ", ".join(f"'{m.name}'" for m in program.methods) or "none"
            raise ProfileMismatchError(
                f"this profile was recorded running another program: run {run.index} "
                f"('{run.name}') fits none of its methods ({names}); first mismatch: {reason}",
                part=etdump.name,
            )
        placed.extend(_place_run(methods[method.name], run))
    for mp in methods.values():
        if mp.runs and any(r.total is None for r in mp.runs):
            problems.append(f"method '{mp.method.name}': some runs have no {METHOD_EVENT} event")
    if not any(mp.runs for mp in methods.values()):
        problems.append("the profile holds no method runs (no Execute block with events)")
    return ProgramProfile(etdump, list(methods.values()), placed, problems)


def _place_run(mp: MethodProfile, run: RunData) -> list[PlacedEvent]:
    method = mp.method
    mr = MethodRun(len(mp.runs), run.index, None)
    mp.runs.append(mr)
    out: list[PlacedEvent] = []
    delegate_events: dict[int, list[ProfileEvent]] = defaultdict(list)
    for e in run.profile_events:
        if e.name == METHOD_EVENT and e.chain_index < 0:
            mr.total = (mr.total or 0) + e.duration
            out.append(PlacedEvent(run.index, e, "method", method.name))
            continue
        ins = _instruction_at(method, e) if _is_instruction_event(e) else None
        if ins is None:
            out.append(
                PlacedEvent(
                    run.index,
                    e,
                    "unplaced",
                    method.name,
                    reason="not at an instruction of the method",
                )
            )
            continue
        part = mp.partitions.partition_of[ins.index]
        if e.is_delegate_internal:
            role = "delegate"
            delegate_events[ins.index].append(e)
        elif e.name.startswith(KERNEL_EVENT_PREFIX):
            role = "kernel"
            mr.kernel_time[ins.index] = mr.kernel_time.get(ins.index, 0) + e.duration
        else:
            role = "instruction"
            mr.instruction_time[ins.index] = mr.instruction_time.get(ins.index, 0) + e.duration
            mr.instruction_calls[ins.index] = mr.instruction_calls.get(ins.index, 0) + 1
        out.append(PlacedEvent(run.index, e, role, method.name, ins.index, part))
    mr.delegate_events = dict(delegate_events)
    return out


def instruction_label(method: Method, index: int) -> str:
    """What an instruction runs: its operator, its delegate's id, or its kind."""
    ins = method.instructions[index]
    op = method.operator_of(ins.op_index)
    if ins.kind is InstructionKind.KERNEL and op is not None:
        return op.full_name
    if (
        ins.kind is InstructionKind.DELEGATE
        and ins.delegate_index is not None
        and (0 <= ins.delegate_index < len(method.delegates))
    ):
        return method.delegates[ins.delegate_index].id
    return ins.kind.value


def time_split(mp: MethodProfile, run: MethodRun) -> dict[str, int]:
    """Where one run's time went (ticks): delegates, CPU compute, glue, control flow, and the
    runtime's own overhead (the part of Method::execute inside no instruction event)."""
    split = {"delegates": 0, "cpu_compute": 0, "glue": 0, "control": 0}
    method = mp.method
    for index, ticks in run.instruction_time.items():
        ins = method.instructions[index]
        if ins.kind is InstructionKind.DELEGATE:
            split["delegates"] += ticks
        elif ins.kind is InstructionKind.KERNEL:
            op = method.operator_of(ins.op_index)
            name = op.full_name if op is not None else "unknown op"
            split["glue" if is_glue(name) else "cpu_compute"] += ticks
        else:
            split["control"] += ticks
    if run.total is not None:
        split["runtime"] = run.total - sum(split.values())
    return split


def partition_time(mp: MethodProfile, run: MethodRun, partition: int) -> int:
    """Ticks of one partition in one run: its instruction events summed."""
    return sum(
        run.instruction_time.get(i, 0) for i in mp.partitions.partitions[partition].instructions
    )
