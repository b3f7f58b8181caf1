"""Which values each instruction reads and writes, and who produced each value it reads.

Rules (from how ExecuTorch's emitter writes instructions, `exir/emit/_emitter.py`):

- KernelCall: args are the operator schema's arguments (out-variant `out=` tensors included) followed
  by the flattened return value(s). So the last arg is the result (a TensorList's items when the op
  returns several tensors), and any earlier arg equal to a result is the out-argument for it: both
  are outputs, everything else is an input. (An op whose schema returns nothing would have its last
  input taken as output; ExecuTorch programs do not contain such kernels outside `prim` ops.)
- DelegateCall: args are the delegate's inputs then its outputs. The split is not stored in the
  program. When the payload decoder knows the counts (Ethos-U VelaIO blocks, XNNPACK input/output
  ids, TOSA graph I/O) they are used. Otherwise the *dataflow rule*: the trailing args that no earlier
  instruction wrote, and that are neither method inputs nor constants, are outputs.
- MoveCall: reads move_from, writes move_to. JumpFalseCall reads its condition. FreeCall reads
  (releases) its value.

Producers are tracked in instruction order, so a value written twice (control flow, moves) is read
from its latest writer. A backward JumpFalseCall makes a loop: a read inside the loop body also sees
what the body writes after it, one iteration earlier. Those reads are kept apart
(`Dataflow.loop_edges`) so a graph stays acyclic while the analysis still counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.program.cached import cached
from pte_adapter.program.model import (
    DELEGATE,
    FREE,
    JUMP_FALSE,
    KERNEL,
    MOVE,
    TENSOR_LISTS,
    Instruction,
    Method,
    Tensor,
)

# Where an instruction input comes from, besides another instruction.
FROM_METHOD_INPUT = -1
FROM_CONSTANT = -2
FROM_NOWHERE = -3  # e.g. a memory-planned tensor nothing wrote yet (an uninitialised buffer)


@dataclass
class InstructionIO:
    inputs: list[int] = field(default_factory=list)  # value indices, argument order
    outputs: list[int] = field(default_factory=list)
    split_rule: str = ""  # how a DelegateCall's args were split: "payload" | "dataflow"
    # The tensors written, lists expanded, each once: these are the node's outputs in a graph.
    output_tensors: list[int] = field(default_factory=list)


@dataclass
class TensorEdge:
    """One tensor flowing from a producer into an instruction input."""

    value: int  # the tensor's value index
    producer: int  # instruction index, or FROM_METHOD_INPUT / FROM_CONSTANT / FROM_NOWHERE
    producer_output: int  # position among the producer's outputs (method input position)
    consumer: int  # instruction index (len(instructions) = the method's outputs)
    consumer_input: int  # position among the consumer's tensor inputs


@dataclass
class Dataflow:
    io: list[InstructionIO]
    # Per instruction: the tensors it reads (lists expanded), with where each came from.
    edges: list[list[TensorEdge]]
    # The method's outputs, as edges into a virtual consumer len(instructions).
    output_edges: list[TensorEdge]
    # Reads inside a loop body of values the body writes later: the previous iteration's writer.
    loop_edges: list[TensorEdge] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @cached
    def readers(self) -> dict[int, set[int]]:
        """`instruction_readers`, made once: the partitioner's reasons and the what-if both ask
        (and only read it)."""
        return instruction_readers(self)


# Loop-carried reads are looked up per loop body; a hostile file with many long, overlapping loops
# would cost (instructions x loops), so the work is capped and the cap reported.
LOOP_WORK_BASE = 1_000_000


def tensor_values(method: Method, value_indices: list[int]) -> list[int]:
    """Expand TensorList / OptionalTensorList values into their tensors; drop non-tensors."""
    items = method.tensor_items
    n = len(items)
    out: list[int] = []
    for v in value_indices:
        if 0 <= v < n:
            out.extend(items[v])
    return out


def _kernel_io(method: Method, ins: Instruction) -> InstructionIO:
    args = ins.args
    if not args:
        return InstructionIO()
    items = method.tensor_items
    n = len(items)
    result = args[-1]
    written = set(items[result]) if 0 <= result < n else set()
    outs = {result, *written}
    # The `out` list of an op returning nothing (`split_with_sizes_copy.out(..., Tensor(a!)[] out)`)
    # is a list value of its own holding the same tensors as the result: it is written too.
    if written:
        values = method.values
        lists = TENSOR_LISTS
        for a in args[:-1]:
            if (
                0 <= a < n
                and values[a].kind in lists
                and a not in outs
                and written.issuperset(items[a])
            ):
                outs.add(a)
    # Keep each output once, in argument order; one pass (most calls write one tensor).
    inputs: list[int] = []
    outputs: list[int] = []
    for a in args:
        if a not in outs:
            inputs.append(a)
        elif a not in outputs:
            outputs.append(a)
    return InstructionIO(inputs, outputs)


def _is_defined(method: Method, v: int, written: set[int], method_inputs: set[int]) -> bool:
    if v in written or v in method_inputs or not 0 <= v < len(method.values):
        return True
    payload = method.values[v].payload
    if isinstance(payload, Tensor):
        return payload.constant is not None
    if method.values[v].kind in TENSOR_LISTS:
        items = tensor_values(method, [v])
        return all(_is_defined(method, i, written, method_inputs) for i in items)
    return True  # ints, lists of ints, strings... are always "defined"


def _delegate_io(
    method: Method,
    ins: Instruction,
    num_outputs: int | None,
    written: set[int],
    method_inputs: set[int],
) -> InstructionIO:
    args = ins.args
    if num_outputs is not None and 0 <= num_outputs <= len(args):
        cut = len(args) - num_outputs
        return InstructionIO(args[:cut], args[cut:], "payload")
    cut = len(args)
    while cut > 0 and not _is_defined(method, args[cut - 1], written, method_inputs):
        cut -= 1
    return InstructionIO(args[:cut], args[cut:], "dataflow")


def instruction_io(
    method: Method,
    ins: Instruction,
    written: set[int],
    method_inputs: set[int],
) -> InstructionIO:
    if ins.kind is KERNEL:
        return _kernel_io(method, ins)
    if ins.kind is DELEGATE:
        n_out = None
        if ins.delegate_index is not None and 0 <= ins.delegate_index < len(method.delegates):
            decoded = method.delegates[ins.delegate_index].decoded
            n_out = decoded.num_outputs
            n_in = decoded.num_inputs
            # The runtime binds the payload's inputs to the first arguments and writes the rest:
            # when the two counts do not add up (Vela merges outputs the lowered module returns
            # twice; mv2_residual_cpu_ethosu85), the inputs' count decides.
            if n_in is not None and (n_out is None or n_in + n_out != len(ins.args)):
                n_out = len(ins.args) - n_in
        return _delegate_io(method, ins, n_out, written, method_inputs)
    if ins.kind is MOVE:
        return InstructionIO([ins.move_from or 0], [ins.move_to or 0])
    if ins.kind is JUMP_FALSE:
        return InstructionIO([ins.cond_value or 0], [])
    if ins.kind is FREE:
        return InstructionIO([ins.free_value or 0], [])
    return InstructionIO()


def analyse_dataflow(method: Method) -> Dataflow:
    method_inputs = set(method.inputs)
    input_position = {v: i for i, v in enumerate(method.inputs)}
    written: set[int] = set()
    producer: dict[int, tuple[int, int]] = {}  # tensor value -> (instruction, output position)
    io_list: list[InstructionIO] = []
    edges: list[list[TensorEdge]] = []

    def source(v: int) -> tuple[int, int]:
        if v in producer:
            return producer[v]
        if v in input_position:
            return FROM_METHOD_INPUT, input_position[v]
        payload = method.values[v].payload if 0 <= v < len(method.values) else None
        if isinstance(payload, Tensor) and payload.constant is not None:
            return FROM_CONSTANT, 0
        return FROM_NOWHERE, 0

    items = method.tensor_items
    n = len(items)
    for ins in method.instructions:
        io = instruction_io(method, ins, written, method_inputs)
        io_list.append(io)
        ins_edges = []
        index = ins.index
        pos = 0
        for a in io.inputs:  # `tensor_values` in line: one call less per instruction
            if 0 <= a < n:
                for v in items[a]:
                    # Most reads are of what an earlier instruction wrote: found without a call.
                    p, out_pos = producer[v] if v in producer else source(v)
                    ins_edges.append(TensorEdge(v, p, out_pos, index, pos))
                    pos += 1
        edges.append(ins_edges)
        outputs = io.outputs
        # Most instructions write one tensor: nothing to expand or to keep once.
        if len(outputs) == 1 and 0 <= outputs[0] < n and len(items[outputs[0]]) <= 1:
            io.output_tensors = list(items[outputs[0]])
        else:
            io.output_tensors = list(dict.fromkeys(tensor_values(method, outputs)))
        for pos, v in enumerate(io.output_tensors):
            producer[v] = (index, pos)
        written.update(outputs)
        written.update(io.output_tensors)

    end = len(method.instructions)
    output_edges = []
    for pos, v in enumerate(method.outputs):
        p, out_pos = source(v)
        output_edges.append(TensorEdge(v, p, out_pos, end, pos))
    flow = Dataflow(io_list, edges, output_edges)
    _add_loop_edges(method, flow)
    return flow


def backward_jumps(method: Method) -> list[tuple[int, int]]:
    """(first, last) method-level instruction indices of each loop body a backward jump closes."""
    loops = []
    for ins in method.instructions:
        if ins.kind is not JUMP_FALSE or ins.destination is None:
            continue
        if not 0 <= ins.chain < len(method.chains) or ins.destination > ins.chain_position:
            continue
        first = method.chains[ins.chain].first_instruction + max(ins.destination, 0)
        loops.append((first, ins.index))
    return loops


def _add_loop_edges(method: Method, flow: Dataflow) -> None:
    budget = LOOP_WORK_BASE + 4 * len(method.instructions)
    seen: set[tuple[int, int, int]] = set()
    for first, last in backward_jumps(method):
        writers: dict[int, list[tuple[int, int]]] = {}
        for j in range(first, last + 1):
            for pos, v in enumerate(flow.io[j].output_tensors):
                writers.setdefault(v, []).append((j, pos))
        budget -= last - first + 1
        for i in range(first, last + 1):
            for e in flow.edges[i]:
                found = writers.get(e.value, [])
                budget -= len(found) + 1
                if budget < 0:
                    flow.problems.append(
                        "loop-carried values were not traced through every loop (too much loop "
                        "work for this file); boundary crossings may be undercounted"
                    )
                    return
                for j, pos in found:
                    if j >= i and (e.value, j, i) not in seen:
                        seen.add((e.value, j, i))
                        flow.loop_edges.append(TensorEdge(e.value, j, pos, i, e.consumer_input))


def instruction_readers(flow: Dataflow) -> dict[int, set[int]]:
    """Instruction -> the instructions that read what it wrote (the method's caller as -1)."""
    out: dict[int, set[int]] = {}
    for edges in flow.edges:
        for e in edges:
            if e.producer >= 0:
                out.setdefault(e.producer, set()).add(e.consumer)
    for e in flow.output_edges:
        if e.producer >= 0:
            out.setdefault(e.producer, set()).add(-1)
    return out
