"""Build the typed `Program` from a `.pte` container (no delegate decoding here).

Slots, enums and union tags are ExecuTorch's `program.fbs`, generated into
`container/_generated/program_schema.py` (imported as `S`; `S.Tensor.sizes` is the slot of
`Tensor.sizes`). The struct format of each read is the field's schema type (`uint` is "I").
Cross-indices (operator, delegate, value, segment, buffer) are checked here: a bad index in one
instruction or value becomes a problem on its method, not an exception that loses the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.flatbuf import Table
from pte_adapter.container.pte import PteFile
from pte_adapter.container.sources import DataSources
from pte_adapter.errors import LimitExceededError, PteFormatError
from pte_adapter.program.direct_reads import Rows, instruction_at, value_at
from pte_adapter.program.model import (
    DELEGATE,
    INSTRUCTION_KIND_BY_TAG,
    INT_LIST,
    KERNEL,
    SHAPE_DYNAMISM,
    TENSOR_LIST,
    VALUE_KIND_BY_TAG,
    Chain,
    CompileSpec,
    ConstantData,
    Delegate,
    Instruction,
    InstructionKind,
    MemoryPlan,
    Method,
    NamedData,
    Operator,
    Program,
    Tensor,
    Value,
    ValueKind,
    ValuePayload,
)

# Structure a program may have (a real one has a few methods and at most tens of thousands of
# instructions; every instruction costs each view some work). Instruction, chain and method
# tables may not be shared either (`FlatBuffer.claim`): the work stays linear in the file's size.
# Each delegate call is a partition of its own, and a partition costs every view far more than
# an instruction: a 192-layer transformer lowered to XNNPACK makes about a thousand calls, each
# of a delegate entry of its own (an entry no call names is read for nothing).
MAX_METHODS = 1_000
MAX_INSTRUCTIONS = 500_000
MAX_DELEGATE_CALLS = 5_000
MAX_DELEGATES = 5_000

# The constant method ExecuTorch's emitter adds for a method that returns gradients.
TRAINING_GRADIENTS_PREFIX = "__et_training_gradients_index_"


def read_program(pte: PteFile, path: Path | None = None) -> Program:
    root = pte.root
    named = [
        NamedData(t.string(S.NamedData.key, "key") or "", t.int(S.NamedData.segment_index, "I"))
        for t in root.iter_tables(S.Program.named_data, "named_data")
    ]
    sources = DataSources(
        pte, {n.key: n.segment_index for n in named}, path.parent if path else None
    )
    program = Program(
        path=path,
        file_size=pte.size,
        version=root.int(S.Program.version, "I"),
        methods=[],
        named_data=named,
        num_segments=len(pte.segments),
        num_constant_buffers=root.vector_len(S.Program.constant_buffer),
        program_size=pte.header.program_size if pte.header else pte.size,
        segment_base_offset=pte.header.segment_base_offset if pte.header else 0,
        sources=sources,
    )
    constants = _ConstantIndex(pte, root)
    plans = root.iter_tables(S.Program.execution_plan, "execution_plan", once=True)
    budget = _Budget(pte.name)
    for i, plan in enumerate(plans):
        if i >= MAX_METHODS:
            raise LimitExceededError(
                f"more than {MAX_METHODS} methods (limit {MAX_METHODS})", part=pte.name
            )
        program.methods.append(_read_method(plan, i, pte, constants, sources, budget))
    names = {m.name for m in program.methods}
    for m in program.methods:
        m.trains = f"{TRAINING_GRADIENTS_PREFIX}{m.name}" in names
    return program


class _Budget:
    """The instructions and delegate calls left to read in the whole program: a chain that
    declares more is refused before one of its instructions is read, and the calls are counted
    as they are read."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.instructions = MAX_INSTRUCTIONS
        self.calls = MAX_DELEGATE_CALLS
        self.delegates = MAX_DELEGATES

    def delegate_entries(self, n: int) -> None:
        self.delegates -= n
        if self.delegates < 0:
            raise LimitExceededError(
                f"more than {MAX_DELEGATES} delegate entries (limit {MAX_DELEGATES})",
                part=self.part,
            )

    def chain(self, n: int) -> None:
        self.instructions -= n
        if self.instructions < 0:
            raise LimitExceededError(
                f"more than {MAX_INSTRUCTIONS} instructions (limit {MAX_INSTRUCTIONS})",
                part=self.part,
            )

    def call(self) -> None:
        self.calls -= 1
        if self.calls < 0:
            raise LimitExceededError(
                f"more than {MAX_DELEGATE_CALLS} delegate calls (limit {MAX_DELEGATE_CALLS}; "
                "each is a partition of its own)",
                part=self.part,
            )


class _ConstantIndex:
    """Resolves `data_buffer_idx` to bytes in the constant segment or the legacy inline buffers."""

    def __init__(self, pte: PteFile, root: Table) -> None:
        self.pte = pte
        seg = root.table(S.Program.constant_segment, "constant_segment")
        self.segment_index = seg.int(S.SubsegmentOffsets.segment_index, "I") if seg else None
        self.offsets = seg.ints(S.SubsegmentOffsets.offsets, "Q", "offsets") if seg else []
        self.inline = root.tables(S.Program.constant_buffer, "constant_buffer") if not seg else []
        if seg is not None and not self.offsets:
            self.segment_index = None
        self.mutable = [
            (
                t.int(S.SubsegmentOffsets.segment_index, "I"),
                t.ints(S.SubsegmentOffsets.offsets, "Q", "offsets"),
            )
            for t in root.iter_tables(S.Program.mutable_data_segments, "mutable_data_segments")
        ]
        self._delegate_data: list[Table] | None = None
        self._root = root

    def delegate_data(self) -> list[Table]:
        """The inline delegate payloads, read once for every delegate that names one."""
        if self._delegate_data is None:
            self._delegate_data = self._root.tables(
                S.Program.backend_delegate_data, "backend_delegate_data"
            )
        return self._delegate_data

    def constant(self, idx: int, nbytes: int) -> ConstantData:
        if self.segment_index is not None:
            data = ConstantData("constant_segment", idx, source=self.pte.name, size=nbytes)
            if 0 < idx < len(self.offsets) and self.segment_index < len(self.pte.segments):
                span = self.pte.segments[self.segment_index]
                data.offset = span.offset + self.offsets[idx]
            return data
        data = ConstantData("inline_buffer", idx, source=self.pte.name)
        if 0 < idx < len(self.inline):
            found = self.inline[idx].bytes_span(S.Buffer.storage, "storage")
            if found:
                data.offset, data.size = found
        return data

    def mutable_initial(self, segment: int, idx: int, nbytes: int) -> ConstantData:
        data = ConstantData("mutable_segment", idx, source=self.pte.name, size=nbytes)
        if 0 <= segment < len(self.mutable):
            seg_index, offsets = self.mutable[segment]
            if 0 < idx < len(offsets) and seg_index < len(self.pte.segments):
                data.offset = self.pte.segments[seg_index].offset + offsets[idx]
        return data


def _read_tensor(t: Table, constants: _ConstantIndex, sources: DataSources) -> Tensor:
    alloc = t.table(S.Tensor.allocation_info, "allocation_info")
    tensor = Tensor(
        scalar_type=t.int(S.Tensor.scalar_type, "b"),
        sizes=t.ints(S.Tensor.sizes, "i", "sizes"),
        dim_order=t.ints(S.Tensor.dim_order, "B", "dim_order"),
        dynamism=SHAPE_DYNAMISM.get(t.int(S.Tensor.shape_dynamism, "b"), "unknown"),
        storage_offset=t.int(S.Tensor.storage_offset, "i"),
        requires_grad=t.bool(S.Tensor.requires_grad),
        layout=t.int(S.Tensor.layout, "b"),
    )
    if alloc is not None:
        low = alloc.int(S.AllocationDetails.memory_offset_low, "I")
        high = alloc.int(S.AllocationDetails.memory_offset_high, "I")
        tensor.memory = MemoryPlan(alloc.int(S.AllocationDetails.memory_id, "I"), low | high << 32)
    extra = t.table(S.Tensor.extra_tensor_info, "extra_tensor_info")
    if extra is not None:
        tensor.fqn = (
            extra.string(S.ExtraTensorInfo.fully_qualified_name, "fully_qualified_name") or ""
        )
    buffer_idx = t.int(S.Tensor.data_buffer_idx, "I")
    if (
        extra is not None
        and extra.int(S.ExtraTensorInfo.location, "b") == S.TensorDataLocation.EXTERNAL
    ):
        tensor.constant = ConstantData("external", buffer_idx, key=tensor.fqn)
        where = sources.locate(tensor.fqn) if tensor.fqn else None
        if where is not None:
            tensor.constant.source = where[0]
            tensor.constant.offset = where[1].offset
            tensor.constant.size = where[1].size
    elif alloc is None and buffer_idx > 0:
        tensor.constant = constants.constant(buffer_idx, tensor.nbytes)
    elif alloc is not None and buffer_idx > 0:
        # A memory-planned tensor with a data buffer is a mutable buffer with an initial value;
        # the index points into mutable_data_segments[extra.mutable_data_segments_idx].offsets.
        segment = (
            extra.int(S.ExtraTensorInfo.mutable_data_segments_idx, "Q") if extra is not None else 0
        )
        tensor.constant = constants.mutable_initial(segment, buffer_idx, tensor.nbytes)
    return tensor


def _read_value(index: int, ev: Table, constants: _ConstantIndex, sources: DataSources) -> Value:
    tag, val = ev.union(S.EValue.val, "val")
    kind = VALUE_KIND_BY_TAG.get(tag, ValueKind.UNKNOWN)
    payload: ValuePayload = None
    if val is not None:
        if kind is ValueKind.INT:
            payload = val.int(S.Int.int_val, "q")
        elif kind is ValueKind.BOOL:
            payload = val.bool(S.Bool.bool_val)
        elif kind is ValueKind.DOUBLE:
            payload = val.float(S.Double.double_val, "d")
        elif kind is ValueKind.STRING:
            payload = val.string(S.String.string_val, "string_val") or ""
        elif kind is ValueKind.TENSOR:
            payload = _read_tensor(val, constants, sources)
        elif kind is ValueKind.INT_LIST:
            payload = val.ints(S.IntList.items, "q", "items")
        elif kind is ValueKind.DOUBLE_LIST:
            payload = [float(x) for x in val.scalars(S.DoubleList.items, "d", "items")]
        elif kind is ValueKind.BOOL_LIST:
            payload = [bool(x) for x in val.ints(S.BoolList.items, "B", "items")]
        elif kind is ValueKind.TENSOR_LIST:
            payload = val.ints(S.TensorList.items, "i", "items")
        elif kind is ValueKind.OPTIONAL_TENSOR_LIST:
            payload = val.ints(S.OptionalTensorList.items, "i", "items")
    return Value(index, kind, payload)


def _read_values(plan: Table, constants: _ConstantIndex, sources: DataSources) -> list[Value]:
    """`_read_value` of each EValue, read straight from the buffer (`value_at`) when every check
    passes; a value that fails one (a corrupt file, or a kind read seldom) is read again the
    checked way, with the budget as it was, and so raises or reads as it always did."""
    fb = plan.fb
    values: list[Value] = []
    rows = Rows(constants)
    for i, pos in enumerate(plan.iter_positions(S.ExecutionPlan.values, "values")):
        tables_left, unpack_left = fb.tables_left, fb.unpack_left
        value = value_at(fb, i, pos, rows)
        if value is None:
            fb.tables_left, fb.unpack_left = tables_left, unpack_left
            value = _read_value(i, fb.table_at(pos, "values", plan, i), constants, sources)
        values.append(value)
    return values


def _read_instruction(ins: Table, index: int, chain: int, position: int) -> Instruction:
    tag, call = ins.union(S.Instruction.instr_args, "instr_args")
    kind = INSTRUCTION_KIND_BY_TAG.get(tag, InstructionKind.UNKNOWN)
    out = Instruction(index, chain, position, kind)
    if call is None:
        return out
    if kind is InstructionKind.KERNEL:
        out.op_index = call.int(S.KernelCall.op_index, "i")
        out.args = call.ints(S.KernelCall.args, "i", "args")
    elif kind is InstructionKind.DELEGATE:
        out.delegate_index = call.int(S.DelegateCall.delegate_index, "i")
        out.args = call.ints(S.DelegateCall.args, "i", "args")
    elif kind is InstructionKind.MOVE:
        out.move_from = call.int(S.MoveCall.move_from, "i")
        out.move_to = call.int(S.MoveCall.move_to, "i")
    elif kind is InstructionKind.JUMP_FALSE:
        out.cond_value = call.int(S.JumpFalseCall.cond_value_index, "i")
        out.destination = call.int(S.JumpFalseCall.destination_instruction, "i")
    elif kind is InstructionKind.FREE:
        out.free_value = call.int(S.FreeCall.value_index, "i")
    return out


def _read_delegate(index: int, d: Table, pte: PteFile, constants: _ConstantIndex) -> Delegate:
    specs = []
    for cs in d.iter_tables(S.BackendDelegate.compile_specs, "compile_specs"):
        raw = cs.bytes_view(S.CompileSpec.value, "value")
        key = cs.string(S.CompileSpec.key, "key") or ""
        specs.append(CompileSpec(key, bytes(raw) if raw is not None else b""))
    processed = d.table(S.BackendDelegate.processed, "processed")
    ref = S.BackendDelegateDataReference
    location = processed.int(ref.location, "b") if processed else S.DataLocation.INLINE
    data_index = processed.int(ref.index, "I") if processed else 0
    delegate = Delegate(
        index=index,
        id=d.string(S.BackendDelegate.id, "id") or "",
        compile_specs=specs,
        storage="segment" if location == S.DataLocation.SEGMENT else "inline",
        data_index=data_index,
    )
    try:
        if location == S.DataLocation.SEGMENT:
            if data_index >= len(pte.segments):
                raise PteFormatError(
                    f"delegate {index} ({delegate.id}) payload is segment {data_index}, but the "
                    f"program has {len(pte.segments)} segments",
                    part=pte.name,
                )
            span = pte.segments[data_index]
            pte.view(span, f"delegate {index} payload")  # bounds check only
            delegate.payload_offset, delegate.payload_size = span.offset, span.size
        else:
            inline = constants.delegate_data()
            if data_index >= len(inline):
                raise PteFormatError(
                    f"delegate {index} ({delegate.id}) payload is inline entry {data_index}, but "
                    f"the program has {len(inline)} inline entries",
                    part=pte.name,
                )
            entry = inline[data_index]
            found = entry.bytes_span(S.BackendDelegateInlineData.data, "data")
            if found is None:
                raise PteFormatError(
                    f"delegate {index} inline entry {data_index} has no data", part=pte.name
                )
            delegate.payload_offset, delegate.payload_size = found
    except PteFormatError as e:
        delegate.problems.append(str(e))
    return delegate


def _read_method(
    plan: Table,
    plan_index: int,
    pte: PteFile,
    constants: _ConstantIndex,
    sources: DataSources,
    budget: _Budget,
) -> Method:
    name = plan.string(S.ExecutionPlan.name, "name") or f"method_{plan_index}"
    values = _read_values(plan, constants, sources)
    operators = [
        Operator(
            t.string(S.Operator.name, "name") or "", t.string(S.Operator.overload, "overload") or ""
        )
        for t in plan.iter_tables(S.ExecutionPlan.operators, "operators")
    ]
    budget.delegate_entries(plan.vector_len(S.ExecutionPlan.delegates))
    delegates = [
        _read_delegate(i, d, pte, constants)
        for i, d in enumerate(plan.iter_tables(S.ExecutionPlan.delegates, "delegates"))
    ]
    chains: list[Chain] = []
    instructions: list[Instruction] = []
    fb = plan.fb
    for ci, chain in enumerate(plan.iter_tables(S.ExecutionPlan.chains, "chains", once=True)):
        first = len(instructions)
        budget.chain(chain.vector_len(S.Chain.instructions))
        for pos, at in enumerate(chain.iter_positions(S.Chain.instructions, "instructions")):
            # As `_read_values`: straight from the buffer, else (the budget restored) the
            # checked way; each instruction's table claimed once (`iter_tables(once=True)`).
            tables_left, unpack_left = fb.tables_left, fb.unpack_left
            instruction = instruction_at(fb, at, len(instructions), ci, pos, chain.pos)
            if instruction is None:
                fb.tables_left, fb.unpack_left = tables_left, unpack_left
                ins = fb.table_at(at, "instructions", chain, pos)
                fb.claim("instructions", at, chain.pos, pos)
                instruction = _read_instruction(ins, len(instructions), ci, pos)
            if instruction.kind is DELEGATE:
                budget.call()
            instructions.append(instruction)
        chains.append(
            Chain(
                ci,
                chain.ints(S.Chain.inputs, "i", "inputs"),
                chain.ints(S.Chain.outputs, "i", "outputs"),
                first,
                len(instructions) - first,
            )
        )
    method = Method(
        name=name,
        values=values,
        inputs=plan.ints(S.ExecutionPlan.inputs, "i", "inputs"),
        outputs=plan.ints(S.ExecutionPlan.outputs, "i", "outputs"),
        chains=chains,
        instructions=instructions,
        operators=operators,
        delegates=delegates,
        non_const_buffer_sizes=plan.ints(
            S.ExecutionPlan.non_const_buffer_sizes, "q", "non_const_buffer_sizes"
        ),
    )
    meta = plan.table(S.ExecutionPlan.container_meta_type, "container_meta_type")
    if meta is not None:
        cm = S.ContainerMetadata
        method.input_structure = meta.string(cm.encoded_inp_str, "encoded_inp_str") or ""
        method.output_structure = meta.string(cm.encoded_out_str, "encoded_out_str") or ""
    method.problems.extend(_check_indices(method))
    return method


def _check_indices(m: Method) -> list[str]:
    """Cross-index checks: every index an instruction or list uses must exist."""
    problems: list[str] = []
    nv = len(m.values)

    def outside(indices: list[int]) -> bool:
        return bool(indices) and (min(indices) < 0 or max(indices) >= nv)

    for v in m.values:
        if (
            (v.kind is TENSOR_LIST or v.kind is INT_LIST)
            and isinstance(v.payload, list)
            and outside(cast(list[int], v.payload))  # the reader's ints
        ):
            problems.append(f"value {v.index}: tensor list refers to a missing value")
    for i in m.inputs + m.outputs:
        if outside([i]):
            problems.append(f"method input/output refers to value {i}; there are {nv}")
    calls = {KERNEL: len(m.operators), DELEGATE: len(m.delegates)}
    for ins in m.instructions:
        # The commonest case first: a call whose operator or delegate and arguments all exist.
        number = ins.op_index if ins.kind is KERNEL else ins.delegate_index
        args = ins.args
        if 0 <= (number or 0) < calls.get(ins.kind, 0) and (
            not args or (min(args) >= 0 and max(args) < nv)
        ):
            continue
        found: list[str] = []  # what is wrong with the instruction (seldom anything)
        if ins.kind is InstructionKind.UNKNOWN:
            found.append("unknown instruction kind")
        if ins.kind is InstructionKind.KERNEL and m.operator_of(ins.op_index or 0) is None:
            found.append(f"operator index {ins.op_index} out of range")
        if ins.kind is InstructionKind.DELEGATE and not (
            0 <= (ins.delegate_index or 0) < len(m.delegates)
        ):
            found.append(f"delegate index {ins.delegate_index} out of range")
        used = ins.args
        if ins.kind is InstructionKind.MOVE:
            used = [ins.move_from or 0, ins.move_to or 0]
        elif ins.kind is InstructionKind.JUMP_FALSE:
            used = [ins.cond_value or 0]
            chain = m.chains[ins.chain]
            if not 0 <= (ins.destination or 0) <= chain.num_instructions:
                found.append(f"jump destination {ins.destination} outside its chain")
        elif ins.kind is InstructionKind.FREE:
            used = [ins.free_value or 0]
        if outside(used):
            found.append(f"refers to a value index outside 0..{nv - 1}")
        if found:
            where = f"instruction {ins.index} ({ins.kind.value})"
            problems.extend(f"{where}: {text}" for text in found)
    return problems
