"""The emulated run of `mv2_lrn_ethosu85` (examples/build_emulated.py) read back with ExecuTorch's
own readers, the program's instructions as ExecuTorch's deserializer gives them, and the float
reference rebuilt (it is ~115 MB, so it is not committed).

- `EMULATED`, `PROGRAM`: the committed files; `provenance()`: their JSON.
- `logged()`: every debug event of the emulated ETDump (`deserialize_from_etdump_flatcc`) with its
  tensor read from the debug buffer (numpy: offset, sizes, scalar type).
- `instructions()`: the program's chain-0 instructions, each with its inputs and outputs (value
  ids) worked out from the argument lists alone, and its partition as people number them.
- `build_float_reference(folder)`: `examples/float_reference.py` (the session fixture
  `float_reference` in tests/conftest.py builds it once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from tests.support.examples import EXAMPLES

PROGRAM = EXAMPLES / "mv2_lrn_ethosu85.pte"
EMULATED = EXAMPLES / "emulated" / "mv2_lrn_ethosu85.emulated"
ETDUMP = EMULATED.with_name(EMULATED.name + ".etdp")
DEBUG_BUFFER = EMULATED.with_name(EMULATED.name + ".debug_buffer.bin")
PROVENANCE = EMULATED.with_name(EMULATED.name + ".json")
FLOAT_STEM = "mv2_lrn_float"

# ExecuTorch ScalarType name -> numpy dtype
DTYPES = {
    "BYTE": np.uint8,
    "CHAR": np.int8,
    "SHORT": np.int16,
    "INT": np.int32,
    "LONG": np.int64,
    "FLOAT": np.float32,
    "DOUBLE": np.float64,
    "BOOL": np.bool_,
}


@dataclass
class Stored:
    """One tensor of a debug event: where it is in the debug buffer and what it holds."""

    scalar_type: str
    offset: int
    sizes: list[int]
    strides: list[int]
    array: np.ndarray


@dataclass
class Logged:
    """One debug event: its place and its tensor (or, for a tensor list, tensors)."""

    chain: int
    instruction: int
    output: bool  # a program output (logged after the method)
    kind: str  # "Tensor" or "TensorList"
    tensors: list[Stored]

    @property
    def array(self) -> np.ndarray:
        assert self.kind == "Tensor", self.kind
        return self.tensors[0].array

    @property
    def offset(self) -> int:
        return self.tensors[0].offset

    @property
    def sizes(self) -> list[int]:
        return self.tensors[0].sizes

    @property
    def strides(self) -> list[int]:
        return self.tensors[0].strides


def _stored(t, data: bytes) -> Stored:
    dtype = np.dtype(DTYPES[t.scalar_type.name])
    count = int(np.prod(t.sizes))
    if count == 0:  # an empty tensor: offset -1, nothing in the buffer
        array = np.empty(t.sizes, dtype)
    else:
        end = t.offset + count * dtype.itemsize
        assert t.offset >= 0 and end <= len(data), f"event outside the buffer: {t}"
        array = np.frombuffer(data, dtype, count, t.offset).reshape(t.sizes)
    return Stored(t.scalar_type.name, t.offset, list(t.sizes), list(t.strides), array)


def logged(etdump: Path = ETDUMP, buffer: Path = DEBUG_BUFFER) -> tuple[object, list[Logged]]:
    """(the deserialised ETDump, its debug events in order with their tensors)."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    doc = deserialize_from_etdump_flatcc(etdump.read_bytes())
    data = buffer.read_bytes()
    out = []
    for run in doc.run_data:
        for event in run.events or []:
            d = event.debug_event
            if d is None:
                continue
            entry = d.debug_entry
            if entry.tensor_list is not None:
                tensors = [_stored(t, data) for t in entry.tensor_list.tensors]
            else:
                tensors = [_stored(entry.tensor, data)]
            flag = bool(entry.output and entry.output.bool_val)
            out.append(Logged(d.chain_index, d.instruction_id, flag, entry.val, tensors))
    return doc, out


@cache
def provenance() -> dict:
    return json.loads(PROVENANCE.read_text())


@cache
def program():
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(PROGRAM.read_bytes()).program


@dataclass
class Instruction:
    index: int
    kind: str  # "KernelCall" or "DelegateCall"
    name: str  # "ns::op.overload" or the backend id
    args: list[int]
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    partition: str = ""  # "NPU partition 1", "CPU island 2"


def instructions() -> list[Instruction]:
    """Chain 0 of the first method. A kernel's outputs are its schema's `out` arguments; a
    delegate's inputs are the arguments some earlier instruction (or the method's input) made,
    its outputs the rest. Delegate calls number NPU partitions, runs of kernels CPU islands."""
    plan = program().execution_plan[0]
    made = set(plan.inputs)
    out: list[Instruction] = []
    npu = cpu = 0
    for k, ins in enumerate(plan.chains[0].instructions):
        a = ins.instr_args
        if type(a).__name__ == "DelegateCall":
            npu += 1
            i = Instruction(k, "DelegateCall", plan.delegates[a.delegate_index].id, list(a.args))
            i.inputs = [v for v in i.args if v in made]
            i.outputs = [v for v in i.args if v not in made]
            i.partition = f"NPU partition {npu}"
        else:
            op = plan.operators[a.op_index]
            name = f"{op.name}.{op.overload}"
            i = Instruction(k, "KernelCall", name, list(a.args))
            schema = _schema(name)
            i.outputs = [i.args[n] for n, s in enumerate(schema.arguments) if s.is_out]
            tensors = [i.args[n] for n, s in enumerate(schema.arguments) if not s.is_out]
            i.inputs = [v for v in tensors if type(plan.values[v].val).__name__ == "Tensor"]
            if not out or out[-1].kind != "KernelCall":
                cpu += 1
            i.partition = f"CPU island {cpu}"
        made.update(i.outputs)
        out.append(i)
    return out


def _schema(name: str):
    import executorch.kernels.quantized  # noqa: F401  (the quantized_decomposed .out schemas)
    import torch

    ns, rest = name.split("::")
    op, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), op), overload)._schema


def scalar_args(index: int) -> list[object]:
    """The scalar values of instruction `index`'s arguments (None for tensors and lists)."""
    plan = program().execution_plan[0]
    out: list[object] = []
    for v in plan.chains[0].instructions[index].instr_args.args:
        val = plan.values[v].val
        out.append(getattr(val, "int_val", getattr(val, "double_val", None)))
    return out


def build_float_reference(folder: Path) -> Path:
    """The float reference in `folder`; the path of its program."""
    from examples.float_reference import build_float_reference as build

    build(folder)
    return folder / f"{FLOAT_STEM}.pte"
