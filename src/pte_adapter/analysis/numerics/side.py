"""One side of a comparison: a program, its ETRecord's layers and one recorded run's values.

`Side` places the run's debug events on the program once (`logged.py`), names each logged output
(its runtime operator as the Inspector names it, its layer from the ETRecord: `layers.py`, its
partition) and decodes its values on demand, dequantizing integers (`values.py`), each once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pte_adapter.analysis.numerics.layers import NO_LAYER, OutputLayer, output_layer
from pte_adapter.analysis.numerics.logged import (
    LoggedOutput,
    LoggedRun,
    ProgramLogs,
    place_debug_events,
)
from pte_adapter.analysis.numerics.values import (
    QuantParams,
    QuantParamsFinder,
    decode,
    dequantize,
    is_float,
)
from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.analysis.profile.join import kernel_event_name
from pte_adapter.analysis.source import ProgramSource
from pte_adapter.backends import group_prefix
from pte_adapter.container.debug_buffer import DebugBuffer
from pte_adapter.container.etdump import ETDump
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import InstructionKind, Method, Program

if TYPE_CHECKING:
    from pte_adapter.analysis.numerics.values import Array

DELEGATE_CALL = "DELEGATE_CALL"


@dataclass
class RecordedRun:
    """A program's recorded run as given or found: its ETDump, and its debug buffer (or why there
    is none to read)."""

    dump: ETDump
    buffer: DebugBuffer | None
    buffer_problem: str = ""


@dataclass(frozen=True)
class SideOutput:
    logged: LoggedOutput
    layer: OutputLayer
    runtime_ops: tuple[str, ...]
    partition: int
    partition_name: str
    place: str  # the partition in short: `XNNPACK partition 1`, `CPU island 2`

    @property
    def instruction(self) -> int:
        return self.logged.instruction


@dataclass
class Values:
    """A logged tensor's values as real numbers, or why they cannot be had."""

    raw: Array | None  # as logged (integers as integers), float64
    real: Array | None  # integers dequantized; floats as logged; None: no parameters known
    quant: QuantParams | None = None
    problem: str = ""


@dataclass
class Side:
    program: Program
    partitions: dict[str, MethodPartitions]
    source: ProgramSource | None
    run: RecordedRun
    logs: ProgramLogs = field(init=False)
    _values: dict[tuple[str, int, int, int], Values] = field(default_factory=dict, init=False)
    _finders: dict[str, QuantParamsFinder] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        flows = {name: p.dataflow for name, p in self.partitions.items()}
        self.logs = place_debug_events(self.program, self.run.dump, flows)

    @property
    def name(self) -> str:
        return self.program.path.name if self.program.path else "<program>"

    def method(self, name: str) -> Method | None:
        return next((m for m in self.program.methods if m.name == name), None)

    def runs(self, method: str) -> list[LoggedRun]:
        logs = self.logs.methods.get(method)
        return logs.runs if logs is not None else []

    def outputs(self, method: Method, run: LoggedRun) -> list[SideOutput]:
        parts = self.partitions[method.name]
        src = self.source.methods.get(method.name) if self.source else None
        record = None
        if self.program.etrecord is not None and src is not None:
            record = self.program.etrecord.methods.get(method.name)
        aten = bool(self.program.etrecord and self.program.etrecord.has_aten_graph)
        out = []
        for o in run.outputs:
            layer = NO_LAYER
            if record is not None and src is not None:
                layer = output_layer(
                    record, aten, src.instructions.get(o.instruction), o.position, o.outputs
                )
            part = parts.partitions[parts.partition_of[o.instruction]]
            place = (
                f"CPU island {part.number}"
                if part.is_cpu
                else f"{group_prefix(part.backend)} {part.number}"
            )
            out.append(
                SideOutput(
                    o, layer, runtime_ops(method, o.instruction), part.index, part.name, place
                )
            )
        return out

    def values(self, method: Method, run: LoggedRun, o: LoggedOutput) -> Values:
        key = (method.name, run.run, o.instruction, o.position)
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = self._decode(method, o)
        return found

    def _decode(self, method: Method, o: LoggedOutput) -> Values:
        if self.run.buffer is None:
            return Values(None, None, problem=self.run.buffer_problem or "no debug buffer")
        try:
            raw = decode(self.run.buffer, o.tensor)
        except PteFormatError as e:
            return Values(None, None, problem=str(e))
        if is_float(o.tensor):
            return Values(raw, raw)
        finder = self._finders.get(method.name)
        if finder is None:
            flow = self.partitions[method.name].dataflow
            finder = self._finders[method.name] = QuantParamsFinder(self.program, method, flow)
        quant = finder(o.value, o.tensor)
        if quant is None:
            return Values(raw, None)
        return Values(raw, dequantize(raw, quant), quant)


def runtime_ops(method: Method, index: int) -> tuple[str, ...]:
    """The runtime's name for an instruction, as the Inspector names its rows: a kernel's
    `native_call_<op>.<overload>` event, `DELEGATE_CALL` for a delegate call."""
    ins = method.instructions[index]
    if ins.kind is InstructionKind.DELEGATE:
        return (DELEGATE_CALL,)
    name = kernel_event_name(method, ins) if ins.kind is InstructionKind.KERNEL else None
    return (name,) if name else (ins.kind.value,)
