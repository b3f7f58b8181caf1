"""The one definition of a boundary crossing, on hand-built methods (one per case).

Real toolchains do not (yet) emit a delegate inside a loop, a freed delegate output or a tensor read
by two CPU islands, so these cases are built as `Method` objects directly. The rule being checked
is the one in `analysis/partitions.py` and docs/partitions.md: data reads only
(FreeCall/JumpFalseCall are control, MoveCall is looked through), each tensor once per direction per
receiving partition (the caller counts as one receiver), bytes by the same rule, loop-carried reads
included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pte_adapter.analysis.partitions import partition_method
from pte_adapter.analysis.program_analysis import analyse_method
from pte_adapter.analysis.summary import MethodSummary
from pte_adapter.program.delegate_graph import DecodedDelegate
from pte_adapter.program.model import (
    Chain,
    CompileSpec,
    Delegate,
    Instruction,
    InstructionKind,
    MemoryPlan,
    Method,
    Operator,
    Tensor,
    Value,
    ValueKind,
)

NPU = "EthosUBackend"
TO_NPU = f"CPU→{NPU}"
FROM_NPU = f"{NPU}→CPU"


@dataclass
class MethodBuilder:
    """A method in one chain; tensors are float32 [n] (4n bytes) so bytes tell tensors apart."""

    values: list[Value] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    operators: list[Operator] = field(default_factory=list)
    delegates: list[Delegate] = field(default_factory=list)

    def tensor(self, n: int) -> int:
        t = Tensor(6, [n], [0], "static", memory=MemoryPlan(1, 64 * len(self.values)))
        self.values.append(Value(len(self.values), ValueKind.TENSOR, t))
        return len(self.values) - 1

    def _add(self, ins: Instruction) -> int:
        ins.index = ins.chain_position = len(self.instructions)
        self.instructions.append(ins)
        return ins.index

    def kernel(self, name: str, inputs: list[int], out: int) -> int:
        self.operators.append(Operator(name, "out"))
        op = len(self.operators) - 1
        # Out-variant layout: schema args (out= included) then the result (the same value).
        return self._add(
            Instruction(0, 0, 0, InstructionKind.KERNEL, op_index=op, args=[*inputs, out, out])
        )

    def delegate(self, inputs: list[int], outputs: list[int]) -> int:
        decoded = DecodedDelegate(
            num_inputs=len(inputs), num_outputs=len(outputs), inner_op_count=1
        )
        self.delegates.append(
            Delegate(
                len(self.delegates), NPU, [CompileSpec("k", b"v")], "inline", 0, decoded=decoded
            )
        )
        return self._add(
            Instruction(
                0,
                0,
                0,
                InstructionKind.DELEGATE,
                delegate_index=len(self.delegates) - 1,
                args=[*inputs, *outputs],
            )
        )

    def free(self, v: int) -> int:
        return self._add(Instruction(0, 0, 0, InstructionKind.FREE, free_value=v))

    def move(self, src: int, dst: int) -> int:
        return self._add(Instruction(0, 0, 0, InstructionKind.MOVE, move_from=src, move_to=dst))

    def jump_false(self, cond: int, destination: int) -> int:
        return self._add(
            Instruction(
                0, 0, 0, InstructionKind.JUMP_FALSE, cond_value=cond, destination=destination
            )
        )

    def build(self, inputs: list[int], outputs: list[int]) -> Method:
        chain = Chain(0, inputs, outputs, 0, len(self.instructions))
        return Method(
            "forward",
            self.values,
            inputs,
            outputs,
            [chain],
            self.instructions,
            self.operators,
            self.delegates,
            [0, 64 * len(self.values)],
        )


def _summary(method: Method) -> MethodSummary:
    return analyse_method(method, None).summary


def test_tensor_read_by_two_cpu_islands_and_returned() -> None:
    """y leaves the NPU once per receiver: CPU island 2, CPU island 3 and the caller."""
    b = MethodBuilder()
    x, y, a, c, d = b.tensor(1), b.tensor(2), b.tensor(4), b.tensor(8), b.tensor(16)
    b.delegate([x], [y])  # NPU partition 1
    b.kernel("aten::relu", [y], a)  # CPU island 1
    b.delegate([a], [c])  # NPU partition 2
    b.kernel("aten::add", [y, c], d)  # CPU island 2 reads y again and c
    s = _summary(b.build([x], [y, d]))
    assert s.crossings == {TO_NPU: 2, FROM_NPU: 4}  # x, a / y ×3 receivers, c
    assert s.crossing_bytes == {TO_NPU: 4 * (1 + 4), FROM_NPU: 4 * (2 * 3 + 8)}
    assert s.handoffs == {}
    # Per partition: NPU partition 1 sends y to three receivers.
    by_name = {p.name: p for p in s.partitions}
    assert by_name["NPU partition 1 (EthosUBackend)"].bytes_out == 4 * 2 * 3
    assert by_name["CPU island 2"].bytes_in == 4 * (2 + 8)


def test_freed_delegate_output_is_not_a_crossing() -> None:
    """A FreeCall releases a value; it does not move data to the CPU."""
    b = MethodBuilder()
    x, y, spare, z = b.tensor(1), b.tensor(2), b.tensor(4), b.tensor(8)
    b.delegate([x], [y, spare])
    b.free(spare)
    b.kernel("aten::relu", [y], z)
    s = _summary(b.build([x], [z]))
    assert s.crossings == {TO_NPU: 1, FROM_NPU: 1}
    assert s.crossing_bytes == {TO_NPU: 4, FROM_NPU: 8}


def test_jump_condition_from_a_delegate_is_control_not_data() -> None:
    b = MethodBuilder()
    x, flag, z = b.tensor(1), b.tensor(2), b.tensor(4)
    b.delegate([x], [flag])
    b.jump_false(flag, 3)
    b.kernel("aten::relu", [x], z)
    s = _summary(b.build([x], [z]))
    assert s.crossings == {TO_NPU: 1}


def test_a_move_is_looked_through() -> None:
    """A delegate output moved into another value and returned crosses once, to the caller."""
    b = MethodBuilder()
    x, y, w = b.tensor(1), b.tensor(2), b.tensor(2)
    b.delegate([x], [y])
    b.move(y, w)
    parts = partition_method(b.build([x], [w]))
    assert [(c.source, c.target, c.direction, c.nbytes) for c in parts.crossings] == [
        ("method input", "NPU partition 1 (EthosUBackend)", TO_NPU, 4),
        ("NPU partition 1 (EthosUBackend)", "method output", FROM_NPU, 4 * 2),
    ]


def test_delegate_inside_a_loop() -> None:
    """The loop body starts with a CPU kernel that reads the NPU's output of the previous
    iteration: that read crosses too, though in instruction order nothing has written y yet."""
    b = MethodBuilder()
    x, h, y, cond = b.tensor(1), b.tensor(2), b.tensor(4), b.tensor(8)
    b.kernel("aten::add", [x, y], h)  # 0: loop body start, reads last iteration's y
    b.delegate([h], [y])  # 1
    b.kernel("aten::lt", [y], cond)  # 2
    b.jump_false(cond, 0)  # 3: backward jump -> loop over 0..3
    method = b.build([x], [y])
    parts = partition_method(method)
    assert [p.name for p in parts.partitions] == [
        "CPU island 1",
        "NPU partition 1 (EthosUBackend)",
        "CPU island 2",
    ]
    loop = [(e.value, e.producer, e.consumer) for e in parts.dataflow.loop_edges]
    assert (y, 1, 0) in loop
    s = analyse_method(method, None).summary
    # h into the NPU; y out to CPU island 1 (next iteration), CPU island 2 and the caller.
    assert s.crossings == {TO_NPU: 1, FROM_NPU: 3}
    assert s.crossing_bytes == {TO_NPU: 4 * 2, FROM_NPU: 3 * 4 * 4}


def test_partitions_are_numbered_in_instruction_order() -> None:
    b = MethodBuilder()
    x, a, c, d = b.tensor(1), b.tensor(2), b.tensor(4), b.tensor(8)
    b.kernel("aten::relu", [x], a)
    b.delegate([a], [c])
    b.delegate([c], [d])
    s = _summary(b.build([x], [d]))
    assert [p.name for p in s.partitions] == [
        "CPU island 1",
        "NPU partition 1 (EthosUBackend)",
        "NPU partition 2 (EthosUBackend)",
    ]
    assert s.handoffs == {f"{NPU}→{NPU}": 1}
    assert s.handoff_bytes == {f"{NPU}→{NPU}": 16}


def test_the_loop_tracing_bound_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from pte_adapter.analysis import dataflow

    b = MethodBuilder()
    x, h, y, cond = b.tensor(1), b.tensor(2), b.tensor(4), b.tensor(8)
    b.kernel("aten::add", [x, y], h)
    b.delegate([h], [y])
    b.kernel("aten::lt", [y], cond)
    b.jump_false(cond, 0)
    monkeypatch.setattr(dataflow, "LOOP_WORK_BASE", -10)
    s = _summary(b.build([x], [y]))
    assert len(s.problems) == 1 and "loop-carried values were not traced" in s.problems[0]
