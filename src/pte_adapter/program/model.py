"""A small typed model of an ExecuTorch program, independent of Model Explorer.

Plain dataclasses; `program.reader` builds them from a `.pte`. Field comments say where each
number comes from in the file (ExecuTorch `schema/program.fbs`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pte_adapter.container._generated.program_schema import (
    InstructionArguments,
    KernelTypes,
    ScalarType,
    TensorShapeDynamism,
)
from pte_adapter.container.pte import Span
from pte_adapter.program.cached import cached
from pte_adapter.program.delegate_graph import DecodedDelegate

if TYPE_CHECKING:
    from pte_adapter.container.bundle import BundleFile
    from pte_adapter.container.etrecord import EtRecord
    from pte_adapter.container.sources import DataSources

# The name users read (torch's dtype name) and the bytes per element of each ScalarType. The schema
# (`scalar_type.fbs`, generated into `ScalarType`) gives only values and its own names; an element's
# size is a fact of the C type the runtime stores (runtime/core/portable_type/scalar_type.h), so this
# table stays by hand, keyed by the generated names. A ScalarType the schema adds shows its schema
# name and size 0 until it is added here (tests/oracle/test_scalar_types.py fails until then).
_ELEMENT_TYPES: dict[ScalarType, tuple[str, float]] = {
    ScalarType.BYTE: ("uint8", 1),
    ScalarType.CHAR: ("int8", 1),
    ScalarType.SHORT: ("int16", 2),
    ScalarType.INT: ("int32", 4),
    ScalarType.LONG: ("int64", 8),
    ScalarType.HALF: ("float16", 2),
    ScalarType.FLOAT: ("float32", 4),
    ScalarType.DOUBLE: ("float64", 8),
    ScalarType.BOOL: ("bool", 1),
    ScalarType.QINT8: ("qint8", 1),
    ScalarType.QUINT8: ("quint8", 1),
    ScalarType.QINT32: ("qint32", 4),
    ScalarType.BFLOAT16: ("bfloat16", 2),
    ScalarType.QUINT4X2: ("quint4x2", 1),
    ScalarType.QUINT2X4: ("quint2x4", 1),
    ScalarType.BITS16: ("bits16", 2),
    ScalarType.FLOAT8E5M2: ("float8_e5m2", 1),
    ScalarType.FLOAT8E4M3FN: ("float8_e4m3fn", 1),
    ScalarType.FLOAT8E5M2FNUZ: ("float8_e5m2fnuz", 1),
    ScalarType.FLOAT8E4M3FNUZ: ("float8_e4m3fnuz", 1),
    ScalarType.UINT16: ("uint16", 2),
    ScalarType.UINT32: ("uint32", 4),
    ScalarType.UINT64: ("uint64", 8),
}
# ExecuTorch's exporter also numbers the complex types (exir/scalar_type.py) although the schema
# leaves them out as not implemented by the runtime: kept so that such a tensor is still named.
_COMPLEX_TYPES: dict[int, tuple[str, float]] = {
    8: ("complex32", 4),
    9: ("complex64", 8),
    10: ("complex128", 16),
}
# ScalarType value -> (name, bytes per element).
SCALAR_TYPES: dict[int, tuple[str, float]] = {
    t.value: _ELEMENT_TYPES.get(t, (t.name.lower(), 0)) for t in ScalarType
} | _COMPLEX_TYPES

# The floating-point dtypes, by the names above.
FLOAT_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16"})

# TensorShapeDynamism value -> "static" | "dynamic_bound" | "dynamic_unbound".
SHAPE_DYNAMISM: dict[int, str] = {d.value: d.name.lower() for d in TensorShapeDynamism}


_DTYPE_NAMES: dict[int, str] = {t: name for t, (name, _size) in SCALAR_TYPES.items()}


def dtype_name(scalar_type: int) -> str:
    # Asked for every tensor on every port: the fallback's text is made only when it is needed.
    name = _DTYPE_NAMES.get(scalar_type)
    return name if name is not None else f"scalar_type_{scalar_type}"


class ValueKind(enum.Enum):
    """The `KernelTypes` union member of an EValue (tags: `VALUE_KIND_BY_TAG`)."""

    NULL = "null"
    INT = "int"
    BOOL = "bool"
    DOUBLE = "double"
    TENSOR = "tensor"
    STRING = "string"
    INT_LIST = "int_list"  # items are indices of Int values
    DOUBLE_LIST = "double_list"
    BOOL_LIST = "bool_list"
    TENSOR_LIST = "tensor_list"  # items are indices of Tensor values
    OPTIONAL_TENSOR_LIST = "optional_tensor_list"  # -1 = None
    UNKNOWN = "unknown"  # a tag this reader does not know (newer schema); shown, not fatal


# The members the views test most, as module constants: in Python 3.11 reading `ValueKind.TENSOR`
# goes through the enum class's attribute hook (about 70 ns, a global 11 ns), and the analysis and
# the render plan ask several per value and instruction.
TENSOR, TENSOR_LIST, OPTIONAL_TENSOR_LIST = (
    ValueKind.TENSOR,
    ValueKind.TENSOR_LIST,
    ValueKind.OPTIONAL_TENSOR_LIST,
)
INT, INT_LIST, NULL, STRING = ValueKind.INT, ValueKind.INT_LIST, ValueKind.NULL, ValueKind.STRING
BOOL, DOUBLE = ValueKind.BOOL, ValueKind.DOUBLE
TENSOR_LISTS = (TENSOR_LIST, OPTIONAL_TENSOR_LIST)  # the kinds whose items are tensor values
TENSOR_KINDS = (TENSOR, *TENSOR_LISTS)  # the kinds that stand for tensors


VALUE_KIND_BY_TAG: dict[int, ValueKind] = {
    KernelTypes.Null: ValueKind.NULL,
    KernelTypes.Int: ValueKind.INT,
    KernelTypes.Bool: ValueKind.BOOL,
    KernelTypes.Double: ValueKind.DOUBLE,
    KernelTypes.Tensor: ValueKind.TENSOR,
    KernelTypes.String: ValueKind.STRING,
    KernelTypes.IntList: ValueKind.INT_LIST,
    KernelTypes.DoubleList: ValueKind.DOUBLE_LIST,
    KernelTypes.BoolList: ValueKind.BOOL_LIST,
    KernelTypes.TensorList: ValueKind.TENSOR_LIST,
    KernelTypes.OptionalTensorList: ValueKind.OPTIONAL_TENSOR_LIST,
}


@dataclass
class MemoryPlan:
    """Where the memory planner put a tensor: `allocation_info`."""

    arena: int  # memory_id, an index into non_const_buffer_sizes (0 is unused)
    offset: int  # memory_offset_low | memory_offset_high << 32


@dataclass
class ConstantData:
    """Where a constant tensor's bytes live."""

    kind: str  # "constant_segment" | "inline_buffer" | "external" | "mutable_segment"
    buffer_index: int  # data_buffer_idx (or mutable subsegment index)
    key: str = ""  # fully qualified name for external (.ptd) tensors
    source: str = ""  # file that holds the bytes ("" = not found)
    offset: int | None = None  # absolute byte offset in `source`, when resolved
    size: int | None = None  # bytes stored, when known


# Element counts above this are shown as this: no real tensor is bigger, and multiplying the
# dimensions of a corrupt shape (thousands of them, each up to 2**31) would build integers of
# millions of digits.
NUMEL_CAP = 1 << 62


def saturating_numel(sizes: list[int]) -> int:
    """The product of the sizes (a negative size counts as 0), capped at `NUMEL_CAP`."""
    if any(s <= 0 for s in sizes):
        return 0
    n = 1
    for s in sizes:
        n *= s
        if n > NUMEL_CAP:
            return NUMEL_CAP
    return n


@dataclass
class Tensor:
    scalar_type: int
    sizes: list[int]
    dim_order: list[int]
    dynamism: str  # "static" | "dynamic_bound" | "dynamic_unbound"
    storage_offset: int = 0
    requires_grad: bool = False
    layout: int = 0
    memory: MemoryPlan | None = None  # set for memory-planned (activation) tensors
    constant: ConstantData | None = None  # set for constants and initialised mutable buffers
    fqn: str = ""  # extra_tensor_info.fully_qualified_name

    @property
    def dtype(self) -> str:
        return dtype_name(self.scalar_type)

    # Cached: the analysis and the plan ask a tensor's size many times (every crossing, every
    # what-if scenario, every port), and a read tensor's sizes and type never change.
    @cached
    def numel(self) -> int:
        return saturating_numel(self.sizes)

    @cached
    def nbytes(self) -> int:
        per = SCALAR_TYPES.get(self.scalar_type, ("", 0))[1]
        return int(self.numel * per)


ValuePayload = int | bool | float | str | list[int] | list[float] | list[bool] | Tensor | None


@dataclass
class Value:
    index: int
    kind: ValueKind
    payload: ValuePayload = None  # Tensor for TENSOR; list of value indices for *_LIST of values


@dataclass
class Operator:
    name: str  # e.g. "aten::convolution"
    overload: str  # e.g. "out"

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name


class InstructionKind(enum.Enum):
    """The `InstructionArguments` union member of an instruction (tags: `INSTRUCTION_KIND_BY_TAG`)."""

    KERNEL = "KernelCall"
    DELEGATE = "DelegateCall"
    MOVE = "MoveCall"
    JUMP_FALSE = "JumpFalseCall"
    FREE = "FreeCall"
    UNKNOWN = "UnknownInstruction"  # a union tag this reader does not know


# As the value kinds above: the instruction kinds every per-instruction loop tests.
KERNEL, DELEGATE = InstructionKind.KERNEL, InstructionKind.DELEGATE
MOVE, FREE, JUMP_FALSE = InstructionKind.MOVE, InstructionKind.FREE, InstructionKind.JUMP_FALSE


INSTRUCTION_KIND_BY_TAG: dict[int, InstructionKind] = {
    InstructionArguments.KernelCall: InstructionKind.KERNEL,
    InstructionArguments.DelegateCall: InstructionKind.DELEGATE,
    InstructionArguments.MoveCall: InstructionKind.MOVE,
    InstructionArguments.JumpFalseCall: InstructionKind.JUMP_FALSE,
    InstructionArguments.FreeCall: InstructionKind.FREE,
}


@dataclass
class Instruction:
    index: int  # position in the method, chains concatenated
    chain: int
    chain_position: int  # index within its chain (jump destinations count within the chain)
    kind: InstructionKind
    op_index: int | None = None  # KernelCall
    delegate_index: int | None = None  # DelegateCall
    args: list[int] = field(default_factory=list)  # KernelCall / DelegateCall value indices
    move_from: int | None = None
    move_to: int | None = None
    cond_value: int | None = None  # JumpFalseCall
    destination: int | None = None  # JumpFalseCall: instruction index within the chain
    free_value: int | None = None  # FreeCall


@dataclass
class CompileSpec:
    key: str
    value: bytes

    @property
    def text(self) -> str:
        """The value as text when it is printable UTF-8, else a short hex dump."""
        try:
            s = self.value.decode("utf-8")
            if all(c.isprintable() or c in "\n\t" for c in s):
                return s
        except UnicodeDecodeError:
            pass
        if len(self.value) in (1, 4, 8):  # small ints (bools, enums) are common
            return str(int.from_bytes(self.value, "little"))
        head = self.value[:32].hex(" ")
        return f"0x[{head}{' ...' if len(self.value) > 32 else ''}] ({len(self.value)} bytes)"


@dataclass
class Delegate:
    index: int  # index in the method's delegates
    id: str  # backend id, e.g. "EthosUBackend"
    compile_specs: list[CompileSpec]
    storage: str  # "inline" (backend_delegate_data) | "segment"
    data_index: int  # index into backend_delegate_data or segments
    payload_offset: int | None = None  # absolute offset in the .pte, when valid
    payload_size: int | None = None
    decoded: DecodedDelegate = field(default_factory=DecodedDelegate)
    problems: list[str] = field(default_factory=list)

    def spec(self, key: str) -> str | None:
        for s in self.compile_specs:
            if s.key == key:
                return s.text
        return None


@dataclass
class Chain:
    index: int
    inputs: list[int]
    outputs: list[int]
    first_instruction: int  # method-level index of its first instruction
    num_instructions: int


@dataclass
class Method:
    name: str
    values: list[Value]
    inputs: list[int]
    outputs: list[int]
    chains: list[Chain]
    instructions: list[Instruction]
    operators: list[Operator]
    delegates: list[Delegate]
    non_const_buffer_sizes: list[int]  # arena sizes; index 0 is unused by convention
    problems: list[str] = field(default_factory=list)
    # container_meta_type: the pytree specs (torch's `treespec_dumps` JSON) of what the method
    # takes and returns; `program.pytree` reads them. "" when the file has none.
    input_structure: str = ""
    output_structure: str = ""
    # The program holds ExecuTorch's `__et_training_gradients_index_<name>` constant method
    # (exir/emit/_emit_program.py): this method returns gradients, so requires_grad means trained.
    trains: bool = False

    def operator_of(self, op_index: int | None) -> Operator | None:
        """The operator table's entry `op_index` (a `KernelCall`'s), or None when there is none
        (no index, or one out of range: the reader reports that as a problem of the method)."""
        if op_index is None or not 0 <= op_index < len(self.operators):
            return None
        return self.operators[op_index]

    # Cached: the analysis names every kernel call, and a method calls few operators many times.
    @cached
    def operator_names(self) -> list[str]:
        """Each operator of the table's full name ("aten::add.out"), in table order."""
        return [op.full_name for op in self.operators]

    def kernel_operator(self, index: int) -> str:
        """The full operator name of instruction `index`'s kernel ("aten::add.out"); "" for
        another kind of instruction or an index out of range."""
        if not 0 <= index < len(self.instructions):
            return ""
        op = self.operator_of(self.instructions[index].op_index)
        return op.full_name if op is not None else ""

    def tensor(self, index: int) -> Tensor | None:
        tensors = self.tensors
        return tensors[index] if 0 <= index < len(tensors) else None

    # Cached, as a read method's values never change: the analysis and the plan ask for tensors
    # by value index tens of thousands of times on a large program.
    @cached
    def tensors(self) -> list[Tensor | None]:
        """Each value's tensor (None for a value that holds none), by value index."""
        return [v.payload if isinstance(v.payload, Tensor) else None for v in self.values]

    @cached
    def tensor_items(self) -> list[tuple[int, ...]]:
        """The tensors each value stands for, by value index: a tensor value itself, the items of
        a (optional) tensor list that are tensor values, nothing for any other value."""
        n = len(self.values)
        tensor, lists = TENSOR, TENSOR_LISTS
        kinds = [v.kind for v in self.values]
        out: list[tuple[int, ...]] = []
        for index, v in enumerate(self.values):
            if v.kind is tensor:
                out.append((index,))
            elif v.kind in lists and isinstance(v.payload, list):
                items = [int(i) for i in v.payload]
                out.append(tuple(i for i in items if 0 <= i < n and kinds[i] is tensor))
            else:
                out.append(())
        return out


@dataclass
class NamedData:
    key: str
    segment_index: int


@dataclass
class Program:
    path: Path | None
    file_size: int  # of the file read: the `.pte`, or the bundle that holds it
    version: int
    methods: list[Method]
    named_data: list[NamedData]
    num_segments: int
    num_constant_buffers: int  # legacy inline constant_buffer entries
    program_size: int  # bytes of the FlatBuffer part (from the extended header, else the file)
    segment_base_offset: int
    sources: DataSources | None = None  # the .pte and any .ptd beside it; resolves named data
    # The ETRecord found beside it (or named), as read; whether it belongs to this program is
    # decided by the analysis (`analysis.source_match.match_source`).
    etrecord: EtRecord | None = None
    problems: list[str] = field(default_factory=list)
    # The BundledProgram the program was read from (`.bpte`): its test cases; `file_size` is then
    # the bundle's, and every offset of the program is within the program's bytes.
    bundle: BundleFile | None = None

    def delegate_payload(self, delegate: Delegate) -> memoryview | None:
        """The delegate's payload bytes (a zero-copy view); None when the file is not at hand.

        Raises PteFormatError when the recorded span lies outside the file."""
        if self.sources is None or delegate.payload_offset is None or delegate.payload_size is None:
            return None
        return self.sources.pte.view(
            Span(delegate.payload_offset, delegate.payload_size),
            f"delegate {delegate.index} payload",
        )

    def tensor_bytes(self, tensor: Tensor, limit: int) -> memoryview | None:
        """The first `limit` bytes of a constant tensor's data (a zero-copy view, never more); None
        when the file is not at hand or the data's place is unknown.

        Raises PteFormatError when the recorded place lies outside its file."""
        c = tensor.constant
        if self.sources is None or c is None:
            return None
        if c.kind == "external":
            found = self.sources.find(c.key) if c.key else None
            return None if found is None else found.data[:limit]
        if c.offset is None:
            return None
        size = limit if c.size is None else min(limit, c.size)
        return self.sources.pte.view(Span(c.offset, size), "constant tensor data")

    def method(self, name: str) -> Method:
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(name)
