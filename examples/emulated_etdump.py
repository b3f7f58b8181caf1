"""An ETDump and its debug buffer written as ExecuTorch's runtime writes them, for a run that did
not happen on the runtime (the emulated run of `build_emulated.py`).

What the runtime writes, learned from ExecuTorch's sources (`devtools/etdump/etdump_flatcc.cpp`,
`data_sinks/buffer_data_sink.cpp`, `runtime/executor/method.cpp`, the kernel wrappers that
`codegen/gen.py` generates), and checked against the pip runtime's own ETDumps:

- a KernelCall logs what its generated wrapper logs (its `out` arguments, or the return slot),
  a DelegateCall every one of its arguments (inputs and outputs: the runtime cannot tell them
  apart), each as one `DebugEvent` carrying the instruction's `chain_index` and
  `instruction_id`; after the method, each program output is logged again with `chain_index` -1
  (stored as the unsigned 2**64 - 1), `instruction_id` 0 and `output` set;
- a tensor's bytes go into the debug buffer at the next 64-byte boundary (`BufferDataSink`, whose
  default alignment is 64: here the buffer itself starts aligned, so the first offset is 0; the
  pip runtime's buffer comes from `new[]`, so its offsets start wherever 64-byte alignment falls),
  the padding zeroed; the event's `Tensor` records scalar type, sizes, contiguous strides and the
  offset;
- the file is a size-prefixed FlatBuffer of `etdump_schema_flatcc.fbs`.

The document is built from ExecuTorch's own dataclasses (`executorch.devtools.etdump.schema_flatcc`)
and serialised by ExecuTorch's own path (`serialize._serialize_from_etdump_to_json`, the schema
files the package ships, and its `flatc`), with `--size-prefixed` as the runtime writes it
(`serialize_to_etdump_flatcc` leaves the prefix out). It holds no profile events: nothing here was
timed.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ALIGNMENT = 64  # BufferDataSink's default
UNSET_CHAIN = 2**64 - 1  # kUnsetChainId (-1) in DebugEvent's unsigned chain_index
UNSET_INSTRUCTION = 0  # kUnsetDebugHandle

# numpy dtype -> the name of its ExecuTorch ScalarType (executorch.exir.scalar_type.ScalarType)
SCALAR_TYPES = {
    np.dtype(np.uint8): "BYTE",
    np.dtype(np.int8): "CHAR",
    np.dtype(np.int16): "SHORT",
    np.dtype(np.int32): "INT",
    np.dtype(np.int64): "LONG",
    np.dtype(np.float32): "FLOAT",
    np.dtype(np.float64): "DOUBLE",
    np.dtype(np.bool_): "BOOL",
}


def logged_by(plan, instr_args) -> list[int]:
    """The value ids the runtime logs for one instruction, in order: a KernelCall's `out`
    arguments, every argument of a DelegateCall; nothing for the other kinds."""
    from examples.emulated_kernels import operator_name, out_values

    kind = type(instr_args).__name__
    if kind == "DelegateCall":
        return list(instr_args.args)
    if kind == "KernelCall":
        return out_values(operator_name(plan, instr_args.op_index), list(instr_args.args))
    return []


def contiguous_strides(sizes: tuple[int, ...]) -> list[int]:
    """The strides ExecuTorch gives a tensor of `sizes` in the default dim order."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return strides[::-1]


@dataclass
class DebugBuffer:
    """The debug buffer as `BufferDataSink` fills it, from an aligned start."""

    data: bytearray = field(default_factory=bytearray)

    def write(self, array: np.ndarray) -> int:
        """Append `array`'s bytes at the next aligned offset; that offset."""
        raw = np.ascontiguousarray(array).tobytes()
        if not raw:
            return -1  # an empty tensor: the runtime records offset -1 and writes nothing
        start = -(-len(self.data) // ALIGNMENT) * ALIGNMENT
        self.data += bytes(start - len(self.data)) + raw
        return start


def _tensor(array: np.ndarray, buffer: DebugBuffer):
    from executorch.devtools.etdump import schema_flatcc as s
    from executorch.exir.scalar_type import ScalarType

    return s.Tensor(
        scalar_type=ScalarType[SCALAR_TYPES[array.dtype]],
        sizes=list(array.shape),
        strides=contiguous_strides(array.shape),
        offset=buffer.write(array),
    )


def value_event(
    chain: int,
    instruction: int,
    value: np.ndarray | list[np.ndarray],
    buffer: DebugBuffer,
    *,
    output: bool = False,
):
    """One `DebugEvent` for a tensor (an array) or a tensor list (a list of arrays), its bytes
    written into `buffer`."""
    from executorch.devtools.etdump import schema_flatcc as s

    is_list = isinstance(value, list)
    entry = s.Value(
        val=(s.ValueType.TENSOR_LIST if is_list else s.ValueType.TENSOR).value,
        tensor=None if is_list else _tensor(value, buffer),
        tensor_list=s.TensorList([_tensor(a, buffer) for a in value]) if is_list else None,
        int_value=None,
        float_value=None,
        double_value=None,
        bool_value=None,
        output=s.Bool(True) if output else None,
    )
    event = s.DebugEvent(
        name=None,
        chain_index=chain,
        instruction_id=instruction,
        delegate_debug_id_int=-1,  # the schema default: not a delegate-logged event
        delegate_debug_id_str=None,
        debug_entry=entry,
    )
    return s.Event(profile_event=None, allocation_event=None, debug_event=event)


def write_etdump(run_name: str, events: list, path: Path) -> bytes:
    """`path`: an ETDump with one run of `events`, size-prefixed as ETDumpGen writes it."""
    from executorch.devtools.etdump import schema_flatcc as s
    from executorch.devtools.etdump import serialize
    from executorch.exir._serialize._flatbuffer import _get_flatc_path

    run = s.RunData(name=run_name, bundled_input_index=-1, allocators=None, events=events)
    doc = s.ETDumpFlatCC(version=0, run_data=[run])
    name = serialize.ETDUMP_FLATCC_SCHEMA_NAME
    with tempfile.TemporaryDirectory() as d:
        serialize._write_schema(d, name)
        serialize._write_schema(d, serialize.SCALAR_TYPE_SCHEMA_NAME)
        (Path(d) / f"{name}.json").write_text(serialize._serialize_from_etdump_to_json(doc))
        cmd = [_get_flatc_path(), "--binary", "--size-prefixed", "-o", d]
        subprocess.run([*cmd, f"{d}/{name}.fbs", f"{d}/{name}.json"], check=True)
        data = (Path(d) / f"{name}.etdp").read_bytes()
    path.write_bytes(data)
    return data
