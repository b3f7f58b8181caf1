"""Place an ETDump's debug events on a program: which tensor of which instruction, in which run.

What the runtime logs with intermediate-output logging on (ExecuTorch 1.5.1, `Method::execute` and
the generated kernel wrappers): a KernelCall's `out` tensors, after it ran; a DelegateCall's every
argument, inputs then outputs (the runtime cannot tell them apart: `method.cpp`), after it ran;
and at the end of the run each method output, marked `output`. Each debug event carries the
(chain, instruction id) of the instruction it belongs to, like the profile events (`join.py`).
A delegate may log values of its own with its own debug id (inside the delegate, not placed here:
they are counted).

Which of an instruction's logged values are its outputs comes from the program's dataflow
(`analysis/dataflow.py`: a kernel's out-arguments, a delegate call's output arguments), and each
is checked against the program's value it was written to: its dtype and, for a static tensor, its
shape. A dump whose values do not fit was recorded running another program: that run is not
placed, and a problem says why (never half-applied).

The ETDump does not say which method a block ran: a run is matched to the method whose
instructions explain every one of its debug events (the profile join does the same from its
profile events; a dump with debug events only, as an emulated run writes, is matched the same way).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.analysis.dataflow import Dataflow
from pte_adapter.container.etdump import DebugEvent, ETDump, LoggedValue, RunData, TensorRef
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import (
    SCALAR_TYPES,
    InstructionKind,
    Method,
    Program,
    ValueKind,
    dtype_name,
)

# A RunData named so holds values an emulation computed, not a device (docs/numerics.md).
EMULATED_PREFIX: Final = "emulated"


@dataclass(frozen=True)
class LoggedOutput:
    """One tensor an instruction wrote, as one run logged it."""

    instruction: int  # method-level index
    position: int  # among the instruction's output tensors, 0-based
    outputs: int  # how many output tensors the instruction has
    value: int  # the program's value index it was written to
    tensor: TensorRef
    event: int  # the debug event's index in its run


@dataclass
class LoggedRun:
    """One run of a method: what each instruction wrote."""

    run: int  # RunData index in the file
    name: str  # the RunData's name ("Execute"; "emulated: ..." for an emulated run)
    outputs: list[LoggedOutput] = field(default_factory=list)
    method_outputs: list[TensorRef] = field(default_factory=list)
    delegate_values: int = 0  # values a delegate logged with its own debug id (not placed)

    @property
    def emulated(self) -> bool:
        return self.name.lower().startswith(EMULATED_PREFIX)


@dataclass
class MethodLogs:
    method: str
    runs: list[LoggedRun] = field(default_factory=list)


@dataclass
class ProgramLogs:
    """Every placed intermediate output of one ETDump, per method and run."""

    etdump: str  # its file name
    methods: dict[str, MethodLogs]
    debug_events: int  # debug events in the file (method outputs included)
    problems: list[str] = field(default_factory=list)

    @property
    def emulated(self) -> bool:
        return any(r.emulated for m in self.methods.values() for r in m.runs)

    @property
    def logged_outputs(self) -> int:
        return sum(len(r.outputs) for m in self.methods.values() for r in m.runs)


def _instruction_index(method: Method, e: DebugEvent) -> int | None:
    if not 0 <= e.chain_index < len(method.chains):
        return None
    chain = method.chains[e.chain_index]
    if not 0 <= e.instruction_id < chain.num_instructions:
        return None
    index = chain.first_instruction + e.instruction_id
    return index if 0 <= index < len(method.instructions) else None


def _tensors(value: LoggedValue | None) -> list[TensorRef]:
    return list(value.tensors) if value is not None else []


def _fits(method: Method, value: int, ref: TensorRef) -> str:
    """'' when a logged tensor can be the program's value `value`, else why not."""
    t = method.tensor(value)
    if t is None:
        return f"value {value} is not a tensor"
    if ref.scalar_type != t.scalar_type:
        return f"value {value} is {t.dtype}, the run logged {dtype_name(ref.scalar_type)}"
    if t.dynamism == "static" and list(ref.sizes) != list(t.sizes):
        return f"value {value} has shape {t.sizes}, the run logged {list(ref.sizes)}"
    return ""


def _instruction_outputs(
    method: Method, flow: Dataflow, index: int, events: list[DebugEvent]
) -> tuple[list[tuple[int, TensorRef, int]], str]:
    """(value, tensor, event index) for each output tensor an instruction logged, or why its
    events do not fit it."""
    ins = method.instructions[index]
    io = flow.io[index]
    outs = io.output_tensors
    if ins.kind is InstructionKind.KERNEL:
        logged = [(t, e.index) for e in events for t in _tensors(e.value)]
    elif ins.kind is InstructionKind.DELEGATE:
        # One event per argument, inputs first; an emulation may log the outputs only.
        if len(events) == len(ins.args):
            picked = [e for arg, e in zip(ins.args, events, strict=True) if arg in io.outputs]
        else:
            picked = events[-len(io.outputs) :] if io.outputs else []
        logged = [(t, e.index) for e in picked for t in _tensors(e.value)]
    else:
        return [], f"instruction {index} is a {ins.kind.value}: it logs no values"
    if len(logged) != len(outs):
        return [], (
            f"instruction {index} logged {len(logged)} tensors as its outputs, it writes "
            f"{len(outs)}"
        )
    placed = []
    for v, (t, event) in zip(outs, logged, strict=True):
        why = _fits(method, v, t)
        if why:
            return [], f"instruction {index}: {why}"
        placed.append((v, t, event))
    return placed, ""


def _place(method: Method, flow: Dataflow, run: RunData) -> tuple[LoggedRun | None, str]:
    """The run's values on `method`'s instructions, or why they do not fit it."""
    logged = LoggedRun(run.index, run.name)
    by_instruction: dict[int, list[DebugEvent]] = defaultdict(list)
    for e in run.debug_events:
        if e.value is not None and e.value.is_output:
            logged.method_outputs.extend(_tensors(e.value))
            continue
        if e.is_delegate_internal:
            logged.delegate_values += 1
            continue
        index = _instruction_index(method, e)
        if index is None:
            where = f"chain {e.chain_index} instruction {e.instruction_id}"
            return (
                None,
                f"a value logged at {where}: method '{method.name}' has no such instruction",
            )
        by_instruction[index].append(e)
    for index in sorted(by_instruction):
        placed, why = _instruction_outputs(method, flow, index, by_instruction[index])
        if why:
            return None, why
        n = len(placed)
        logged.outputs.extend(
            LoggedOutput(index, pos, n, v, t, event) for pos, (v, t, event) in enumerate(placed)
        )
    return logged, ""


@dataclass
class _Placed:
    name: str
    run: LoggedRun


def _place_run(
    program: Program, flows: dict[str, Dataflow], run: RunData
) -> tuple[_Placed | None, list[str]]:
    """The run placed on the first method that explains it, else why none does."""
    reasons = []
    for method in program.methods:
        placed, why = _place(method, flows[method.name], run)
        if placed is not None:
            return _Placed(method.name, placed), []
        reasons.append(why)
    return None, reasons


def place_debug_events(program: Program, etdump: ETDump, flows: dict[str, Dataflow]) -> ProgramLogs:
    """Every run's logged values placed on the method it ran (`flows`: each method's dataflow,
    as the analysis made it). Never raises: what cannot be placed is a problem."""
    logs = ProgramLogs(etdump.name, {m.name: MethodLogs(m.name) for m in program.methods}, 0)
    for run in etdump.runs:
        logs.debug_events += len(run.debug_events)
        try:
            if not any(not (e.value is not None and e.value.is_output) for e in run.debug_events):
                continue
            placed_on, reasons = _place_run(program, flows, run)
        except PteFormatError as e:  # a malformed value table: the run's values are not used
            logs.problems.append(f"run {run.index} ('{run.name}') of {etdump.name}: {e}")
            continue
        if placed_on is not None:
            logs.methods[placed_on.name].runs.append(placed_on.run)
        else:
            logs.problems.append(
                f"run {run.index} ('{run.name}') of {etdump.name} fits none of the program's "
                f"methods, its values are not used (recorded running another program?): "
                f"{reasons[0] if reasons else 'the program has no methods'}"
            )
    if logs.debug_events == 0:
        logs.problems.append(no_debug_events(etdump.name))
    return logs


def no_debug_events(etdump: str) -> str:
    """What to say of an ETDump without debug events, and how to record them."""
    return (
        f"{etdump} holds no debug events (no intermediate outputs): record them with a debug "
        "buffer: in Python `_load_for_executorch(pte, enable_etdump=True, "
        "debug_buffer_size=N)` then `write_etdump_result_to_file(etdump, debug_buffer)`; in C++ "
        "`ETDumpGen::set_debug_buffer(buffer)` with the event tracer's debug log level at "
        "intermediate outputs (docs/numerics.md)"
    )


def element_size(ref: TensorRef) -> int:
    """Bytes per element of a logged tensor's dtype (0: a dtype whose size is not known)."""
    return int(SCALAR_TYPES.get(ref.scalar_type, ("", 0))[1])


def is_tensor_value(method: Method, value: int) -> bool:
    return 0 <= value < len(method.values) and method.values[value].kind is ValueKind.TENSOR
