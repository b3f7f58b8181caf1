"""One side of a comparison: a program, its ETRecord's layers and one recorded run's values.

`Side` places the run's debug events on the program once (`logged.py`), names each logged output
(its runtime operator as the Inspector names it, its layer from the ETRecord: `layers.py`, its
partition) and decodes its values on demand, dequantizing integers (`values.py`), each once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pte_adapter.analysis.numerics.layers import (
    NO_LAYER,
    OutputLayer,
    method_input_key,
    output_layer,
)
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
from pte_adapter.analysis.numerics.writers import (
    GraphIndex,
    MethodReaders,
    Written,
    call_writers,
    qdq_kernel,
)
from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.analysis.profile.join import kernel_event_name
from pte_adapter.analysis.source import ProgramSource
from pte_adapter.backends import group_prefix
from pte_adapter.container.debug_buffer import DebugBuffer
from pte_adapter.container.etdump import ETDump
from pte_adapter.container.etrecord import EtRecordMethod
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
    boundary: bool = False  # another partition reads it, or the method returns it

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
    _values: dict[tuple[str, int, int, int, int], Values] = field(default_factory=dict, init=False)
    _finders: dict[str, QuantParamsFinder] = field(default_factory=dict, init=False)
    # Per method: its exported graph indexed, and each delegate call's outputs' writers.
    _graphs: dict[str, GraphIndex] = field(default_factory=dict, init=False)
    _writers: dict[tuple[str, int], list[Written]] = field(default_factory=dict, init=False)
    _readers: dict[str, MethodReaders] = field(default_factory=dict, init=False)
    _names: dict[str, tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=dict, init=False
    )

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
        aten = bool(self.program.etrecord and self.program.etrecord.has_exported_program)
        out = []
        leaving = _leaving(parts)
        for o in run.outputs:
            layer = NO_LAYER
            if record is not None and src is not None:
                index = self._graph(method.name, record)
                ins = method.instructions[o.instruction]
                written = None
                if ins.kind is InstructionKind.DELEGATE:
                    written = self._call_writers(method, o.instruction, index)[o.position]
                layer = output_layer(
                    record,
                    aten,
                    src.instructions.get(o.instruction),
                    o.position,
                    o.outputs,
                    index=index,
                    written=written,
                    quantize=qdq_kernel(method, o.instruction),
                )
            part = parts.partitions[parts.partition_of[o.instruction]]
            place = (
                f"CPU island {part.number}"
                if part.is_cpu
                else f"{group_prefix(part.backend)} {part.number}"
            )
            out.append(
                SideOutput(
                    o,
                    layer,
                    runtime_ops(method, o.instruction),
                    part.index,
                    part.name,
                    place,
                    (o.instruction, o.value) in leaving,
                )
            )
        return out

    def inputs(self, method: Method, run: LoggedRun) -> dict[int, SideOutput]:
        """Method input position -> its value, where a delegate call logged it as an argument,
        keyed as a method input's (de)quantization is (`layers.method_input_key`)."""
        record = self.program.etrecord.methods.get(method.name) if self.program.etrecord else None
        names = record.user_inputs if record is not None else ()
        parts = self.partitions[method.name]
        out = {}
        for k, o in run.inputs.items():
            name = names[k] if k < len(names) else str(k)
            layer = OutputLayer((), f"input {name}", method_input_key(k), "", "", "")
            part = parts.partitions[parts.partition_of[o.instruction]]
            ops = runtime_ops(method, o.instruction)
            out[k] = SideOutput(o, layer, ops, part.index, part.name, "")
        return out

    def node_names(self, method: str) -> tuple[frozenset[str], frozenset[str]]:
        """(every node's names, ATen and edge; every node's origin) in the method's exported
        graph, gathered once (a reason for each unjoined output looks them up)."""
        found = self._names.get(method)
        if found is None:
            record = self.program.etrecord.methods.get(method) if self.program.etrecord else None
            nodes = record.nodes if record is not None else []
            names = frozenset(n for node in nodes for n in (node.aten_name, node.name) if n)
            origins = frozenset(node.origin for node in nodes if node.origin)
            found = self._names[method] = (names, origins)
        return found

    def _graph(self, method: str, record: EtRecordMethod) -> GraphIndex:
        index = self._graphs.get(method)
        if index is None:
            index = self._graphs[method] = GraphIndex(record)
        return index

    def _call_writers(self, method: Method, call: int, index: GraphIndex) -> list[Written]:
        """Which node wrote each output of a delegate call (`writers.py`), worked out once."""
        key = (method.name, call)
        found = self._writers.get(key)
        if found is None:
            assert self.source is not None
            src = self.source.methods.get(method.name)
            flow = self.partitions[method.name].dataflow
            readers = self._readers.get(method.name)
            if readers is None:  # one index of the method's readers for all its calls
                readers = self._readers[method.name] = MethodReaders(method, flow, src)
            outputs = []
            for v in flow.io[call].output_tensors:
                t = method.tensor(v)
                shape = tuple(t.sizes) if t is not None else ()
                outputs.append(readers.call_output(call, v, shape))
            handles = src.instructions[call].handles if src and call in src.instructions else []
            found = self._writers[key] = call_writers(index, handles, outputs)
        return found

    def values(self, method: Method, run: LoggedRun, o: LoggedOutput) -> Values:
        # By its debug event: a delegate's argument (a method input) shares its instruction
        # and position with one of its outputs.
        key = (method.name, run.run, o.event, o.position, o.outputs)
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
        quant = finder(o.value, o.tensor) or self._graph_quant(method, o)
        if quant is None:
            return Values(raw, None)
        return Values(raw, dequantize(raw, quant), quant)

    def _graph_quant(self, method: Method, o: LoggedOutput) -> QuantParams | None:
        """A delegate call's integer output that no kernel of the program (de)quantizes (one
        partition's output read by another): the parameters of the ETRecord's quantize node of
        the node proved to have written it (`writers.py`)."""
        record = self.program.etrecord.methods.get(method.name) if self.program.etrecord else None
        if record is None or self.source is None:
            return None
        if method.instructions[o.instruction].kind is not InstructionKind.DELEGATE:
            return None
        index = self._graph(method.name, record)
        node = self._call_writers(method, o.instruction, index)[o.position].node
        found = index.quantization(node) if node is not None else None
        if node is None or found is None:
            return None
        scale, zero, quantize = found
        source = f"the ETRecord's quantize node of {node.name} ({quantize.name})"
        return QuantParams((scale,), (zero,), None, source)


def _leaving(parts: MethodPartitions) -> set[tuple[int, int]]:
    """(instruction, value) of every tensor that leaves its partition: read by an instruction of
    another partition, or returned by the method."""
    flow = parts.dataflow
    out = {(e.producer, e.value) for e in flow.output_edges}
    for consumer, edges in enumerate(flow.edges):
        for e in edges:
            inside = 0 <= e.producer < len(parts.partition_of)
            if inside and parts.partition_of[e.producer] != parts.partition_of[consumer]:
                out.add((e.producer, e.value))
    return out


def runtime_ops(method: Method, index: int) -> tuple[str, ...]:
    """The runtime's name for an instruction, as the Inspector names its rows: a kernel's
    `native_call_<op>.<overload>` event, `DELEGATE_CALL` for a delegate call."""
    ins = method.instructions[index]
    if ins.kind is InstructionKind.DELEGATE:
        return (DELEGATE_CALL,)
    name = kernel_event_name(method, ins) if ins.kind is InstructionKind.KERNEL else None
    return (name,) if name else (ins.kind.value,)
