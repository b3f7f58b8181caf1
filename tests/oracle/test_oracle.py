"""Every example, read by pte_adapter, agrees with ExecuTorch's own deserializer.

The oracle (`deserialize_pte_binary`) is an independent reader of the same bytes: it goes through
flatc's JSON and ExecuTorch's schema dataclasses. It also moves segment data back into the program
(delegate payloads inline, constants into `constant_buffer`), which lets us compare the *bytes* our
offsets point at, not only the counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.container.ptd import PtdFile
from pte_adapter.container.pte import map_file
from pte_adapter.program.model import InstructionKind, Tensor, ValueKind
from tests.support.examples import EXAMPLES, oracle

VALUE_KIND_BY_ORACLE_CLASS = {
    "Null": ValueKind.NULL,
    "Int": ValueKind.INT,
    "Bool": ValueKind.BOOL,
    "Double": ValueKind.DOUBLE,
    "Tensor": ValueKind.TENSOR,
    "String": ValueKind.STRING,
    "IntList": ValueKind.INT_LIST,
    "DoubleList": ValueKind.DOUBLE_LIST,
    "BoolList": ValueKind.BOOL_LIST,
    "TensorList": ValueKind.TENSOR_LIST,
    "OptionalTensorList": ValueKind.OPTIONAL_TENSOR_LIST,
}
INSTRUCTION_KIND_BY_ORACLE_CLASS = {
    "KernelCall": InstructionKind.KERNEL,
    "DelegateCall": InstructionKind.DELEGATE,
    "MoveCall": InstructionKind.MOVE,
    "JumpFalseCall": InstructionKind.JUMP_FALSE,
    "FreeCall": InstructionKind.FREE,
}


def _oracle_instructions(plan: Any) -> list[Any]:
    return [ins.instr_args for chain in plan.chains for ins in chain.instructions]


def test_methods_instructions_operators(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    ours = pte_adapter.load(example_pte)
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    assert [m.name for m in ours.methods] == [p.name for p in theirs.execution_plan]
    for method, plan in zip(ours.methods, theirs.execution_plan, strict=True):
        assert method.problems == []
        assert method.inputs == list(plan.inputs)
        assert method.outputs == list(plan.outputs)
        assert method.non_const_buffer_sizes == list(plan.non_const_buffer_sizes)
        assert [(o.name, o.overload) for o in method.operators] == [
            (o.name, o.overload) for o in plan.operators
        ]
        assert [(c.inputs, c.outputs, c.num_instructions) for c in method.chains] == [
            (list(c.inputs), list(c.outputs), len(c.instructions)) for c in plan.chains
        ]
        oracle_ins = _oracle_instructions(plan)
        assert len(method.instructions) == len(oracle_ins)
        for ins, call in zip(method.instructions, oracle_ins, strict=True):
            assert ins.kind is INSTRUCTION_KIND_BY_ORACLE_CLASS[type(call).__name__]
            if ins.kind is InstructionKind.KERNEL:
                assert (ins.op_index, ins.args) == (call.op_index, list(call.args))
            elif ins.kind is InstructionKind.DELEGATE:
                assert (ins.delegate_index, ins.args) == (call.delegate_index, list(call.args))
            elif ins.kind is InstructionKind.MOVE:
                assert (ins.move_from, ins.move_to) == (call.move_from, call.move_to)
            elif ins.kind is InstructionKind.JUMP_FALSE:
                assert (ins.cond_value, ins.destination) == (
                    call.cond_value_index,
                    call.destination_instruction,
                )
            elif ins.kind is InstructionKind.FREE:
                assert ins.free_value == call.value_index


def test_values_and_tensors(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    ours = pte_adapter.load(example_pte)
    pte: Any = oracle(example_pte, oracle_cache)
    theirs = pte.program
    checked: Counter[str] = Counter()
    for method, plan in zip(ours.methods, theirs.execution_plan, strict=True):
        assert len(method.values) == len(plan.values)
        for value, ev in zip(method.values, plan.values, strict=True):
            cls = type(ev.val).__name__
            assert value.kind is VALUE_KIND_BY_ORACLE_CLASS[cls], value.index
            if cls == "Tensor":
                t = value.payload
                assert isinstance(t, Tensor)
                assert t.scalar_type == int(ev.val.scalar_type)
                assert t.sizes == list(ev.val.sizes)
                assert t.dim_order == list(ev.val.dim_order)
                assert t.dynamism == ev.val.shape_dynamism.name.lower()
                alloc = ev.val.allocation_info
                if alloc is None:
                    assert t.memory is None
                else:
                    assert t.memory is not None
                    assert t.memory.arena == alloc.memory_id
                    assert t.memory.offset == (
                        alloc.memory_offset_low | alloc.memory_offset_high << 32
                    )
                _check_constant_bytes(ours, t, ev.val, pte, example_pte.parent)
                checked[t.constant.kind if t.constant else "planned"] += 1
            elif cls in ("Int", "Bool", "Double", "String"):
                field = {
                    "Int": "int_val",
                    "Bool": "bool_val",
                    "Double": "double_val",
                    "String": "string_val",
                }[cls]
                expected = getattr(ev.val, field)
                if cls == "Double" and isinstance(expected, str):  # inf/nan spelled as text
                    expected = float(expected)
                assert value.payload == expected or (expected != expected)  # nan
            elif cls in ("IntList", "DoubleList", "BoolList", "TensorList", "OptionalTensorList"):
                assert list(value.payload or []) == list(ev.val.items)  # type: ignore[arg-type]
    # The examples that hold external and mutable tensors really had their bytes compared.
    if example_pte.stem == "xnnpack_ptd":
        assert checked["external"] > 0
    if example_pte.stem == "mutable_buffer":
        assert checked["mutable_segment"] == 2


_PTD_CACHE: dict[Path, Any] = {}


def _oracle_ptd(path: Path) -> Any:
    """ExecuTorch's own FlatTensor deserializer: key -> bytes of a .ptd file."""
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    if path not in _PTD_CACHE:
        _PTD_CACHE[path] = FlatTensorSerializer().deserialize(Cord(path.read_bytes()))
    return _PTD_CACHE[path]


@pytest.mark.parametrize("ptd", sorted(EXAMPLES.glob("*.ptd")), ids=lambda p: p.stem)
def test_ptd_entries_and_tensor_layouts(ptd: Path) -> None:
    """Every named entry of a `.ptd`: its segment's bytes and its tensor layout (when it has one)."""
    from executorch.extension.flat_tensor.serialize.serialize import _deserialize_to_flat_tensor

    ours = PtdFile(map_file(ptd), ptd.name)
    data = ptd.read_bytes()
    theirs = _deserialize_to_flat_tensor(data)
    assert ours.version == theirs.version
    assert list(ours.entries) == [n.key for n in theirs.named_data]
    payload = _oracle_ptd(ptd)
    layouts = 0
    for named in theirs.named_data:
        entry = ours.entries[named.key]
        expected = bytes(payload.buffers[payload.named_data[named.key].buffer_index])
        assert data[entry.span.offset : entry.span.end] == expected
        layout = named.tensor_layout
        if layout is None:
            assert (entry.scalar_type, entry.sizes, entry.dim_order) == (None, [], [])
            continue
        layouts += 1
        assert entry.scalar_type == int(layout.scalar_type)
        assert (entry.sizes, entry.dim_order) == (list(layout.sizes), list(layout.dim_order))
    if ptd.stem == "xnnpack_weights":  # its tensors carry layouts (the Ethos-U blob does not)
        assert layouts > 0


def _check_constant_bytes(
    program: Any, t: Tensor, oracle_tensor: Any, pte: Any, folder: Path
) -> None:
    """Our constant offset points at the same bytes the oracle restored for that tensor:
    constant segment, mutable segment (initial values) and external `.ptd` data alike."""
    c = t.constant
    if c is None:
        return
    assert c.buffer_index == oracle_tensor.data_buffer_idx
    if c.kind == "constant_segment":
        expected = bytes(pte.program.constant_buffer[c.buffer_index].storage)[: t.nbytes]
        source = program.sources.pte.data
    elif c.kind == "mutable_segment":
        expected = bytes(pte.mutable_data[c.buffer_index].storage)[: t.nbytes]
        source = program.sources.pte.data
    elif c.kind == "external":
        payload = _oracle_ptd(folder / c.source)
        entry = payload.named_data[oracle_tensor.extra_tensor_info.fully_qualified_name]
        expected = bytes(payload.buffers[entry.buffer_index])[: t.nbytes]
        source = (folder / c.source).read_bytes()
    else:
        raise AssertionError(f"no example holds {c.kind} tensors; compare them here when one does")
    assert c.offset is not None
    got = bytes(source[c.offset : c.offset + t.nbytes])
    assert len(got) == t.nbytes and got == expected


def test_delegates_and_payload_bytes(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    ours = pte_adapter.load(example_pte)
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    for method, plan in zip(ours.methods, theirs.execution_plan, strict=True):
        assert [d.id for d in method.delegates] == [d.id for d in plan.delegates]
        for d, od in zip(method.delegates, plan.delegates, strict=True):
            assert d.problems == []
            assert [(s.key, s.value) for s in d.compile_specs] == [
                (s.key, bytes(s.value)) for s in od.compile_specs
            ]
            # The oracle restores segment payloads into backend_delegate_data.
            expected = bytes(theirs.backend_delegate_data[od.processed.index].data)
            payload = ours.delegate_payload(d)
            assert payload is not None
            assert bytes(payload) == expected


def test_named_data_bytes(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    ours = pte_adapter.load(example_pte)
    named = oracle(example_pte, oracle_cache).named_data  # type: ignore[attr-defined]
    keys = sorted(named.pte_data) if named else []
    assert sorted(n.key for n in ours.named_data) == keys
    assert ours.sources is not None
    for key in keys:
        found = ours.sources.find(key)
        assert found is not None
        buffer = named.buffers[named.pte_data[key].buffer_index]
        expected = bytes(getattr(buffer, "buffer", buffer))
        assert bytes(found.data) == expected


@pytest.mark.parametrize("kind", list(InstructionKind))
def test_every_instruction_kind_is_exercised(kind: InstructionKind) -> None:
    """The examples together contain every instruction kind the schema has."""
    if kind is InstructionKind.UNKNOWN:
        pytest.skip("not a schema kind")
    from tests.support.examples import EXAMPLE_PTES

    seen = {
        ins.kind
        for p in EXAMPLE_PTES
        for m in pte_adapter.load(p, decode_delegates=False).methods
        for ins in m.instructions
    }
    assert kind in seen


def test_load_bytes_reads_what_the_oracle_reads(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    """`load_bytes` (no path, no side files) gives the same program as the oracle."""
    ours = pte_adapter.load_bytes(example_pte.read_bytes(), example_pte.name)
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    assert ours.path is None
    assert [m.name for m in ours.methods] == [p.name for p in theirs.execution_plan]
    for method, plan in zip(ours.methods, theirs.execution_plan, strict=True):
        oracle_ins = _oracle_instructions(plan)
        assert [i.kind for i in method.instructions] == [
            INSTRUCTION_KIND_BY_ORACLE_CLASS[type(c).__name__] for c in oracle_ins
        ]
        assert [(o.name, o.overload) for o in method.operators] == [
            (o.name, o.overload) for o in plan.operators
        ]
        for d, od in zip(method.delegates, plan.delegates, strict=True):
            expected = bytes(theirs.backend_delegate_data[od.processed.index].data)
            payload = ours.delegate_payload(d)
            assert payload is not None and bytes(payload) == expected
            # Decoded from the bytes alone: the same inner operations as from the file.
            from_file = pte_adapter.load(example_pte).method(method.name).delegates[d.index]
            assert d.decoded.inner_op_count == from_file.decoded.inner_op_count
