"""What a program needs from the runtime that loads it: the CPU kernels its methods call, each with
its kernel keys, and the backends of its delegates.

A *kernel key* is the dtype and dim order of every tensor argument of one kernel call, written as
ExecuTorch's `gen_oplist` writes it into `et_kernel_metadata` (codegen/tools/gen_oplist.py over
codegen/tools/selective_build.cpp, ExecuTorch 1.5.1): `v1/` then, per argument that is a tensor,
`<ScalarType value>;<dim order, comma-separated>`, joined by `|`. A tensor list counts as its first
tensor (an empty one counts as nothing); an optional tensor list as its first tensor that is
there. An argument of any other kind adds nothing, and a call without tensors is `v1`. Every
number comes from the program's own tensors (`Tensor.scalar_type`, `Tensor.dim_order`).

`gen_oplist` lists every operator of every method's operator table and the kernel keys of every
`KernelCall`; a runtime resolves each `KernelCall`'s operator when it loads the method, and
initialises every entry of the method's delegate table with its backend (ExecuTorch
runtime/executor/method.cpp). So what a runtime must have is the operators called and the backends
of the delegate tables; what a selective build lists is every operator of the tables.

Computed once per method (`MethodAnalysis.kernel_keys`, `MethodAnalysis.needs`) and merged per
program (`ProgramAnalysis.needs`); `pte-adapter ops` merges several programs the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.analysis.source import MethodSource, ModuleRef
from pte_adapter.program.cached import cached
from pte_adapter.program.model import (
    DELEGATE,
    KERNEL,
    OPTIONAL_TENSOR_LIST,
    TENSOR,
    TENSOR_KINDS,
    TENSOR_LIST,
    Method,
    Tensor,
)

KEY_VERSION = "v1"
# The operator namespaces ExecuTorch's own kernel libraries register (the portable kernels with
# their prim ops, dim-order and copy ops, and the quantized kernels: the libraries of its pip
# runtime); any other namespace is a custom operator, which the runtime has only when it links
# the library that registers it (tests/oracle/test_needs.py checks this against the wheel).
STANDARD_NAMESPACES = frozenset(
    {"aten", "dim_order_ops", "et_copy", "executorch_prim", "quantized_decomposed"}
)
# Custom namespaces whose library is known: where it is in ExecuTorch's source tree.
KNOWN_LIBRARIES = {"cortex_m": "Arm's Cortex-M kernels (ExecuTorch backends/cortex_m)"}


class TensorMeta(NamedTuple):
    scalar_type: int  # the tensor's ScalarType value, as stored
    dim_order: tuple[int, ...]


@dataclass(frozen=True)
class KernelKey:
    """The dtypes and dim orders of one kernel call's tensor arguments. A method holds one object
    per distinct key (`method_kernel_keys`), so what is worked out of a key is worked out once."""

    tensors: tuple[TensorMeta, ...]

    @cached
    def text(self) -> str:
        """`v1/6;0,1,2,3|6;0,1,2,3`, exactly as `gen_oplist` writes it."""
        if not self.tensors:
            return KEY_VERSION
        return f"{KEY_VERSION}/" + "|".join(
            f"{t.scalar_type};{','.join(map(str, t.dim_order))}" for t in self.tensors
        )


class Call(NamedTuple):
    """One instruction that needs a kernel or a backend (a tuple: a large program has thousands)."""

    program: str  # the program's file, as it was opened
    method: str
    instruction: int
    partition: str  # "CPU island 1", "NPU partition 2 (EthosUBackend)"
    layers: tuple[ModuleRef, ...] = ()  # the ETRecord's layers of the call, when one belongs
    kernel_key: KernelKey | None = None  # a KernelCall's


@dataclass
class OperatorNeed:
    name: str  # "aten::avg_pool3d.out", as the operator table writes it
    programs: list[str] = field(default_factory=list)  # whose operator tables list it
    calls: list[Call] = field(default_factory=list)  # none: in a table, never called

    @property
    def kernel_keys(self) -> list[str]:
        """Its distinct kernel keys, sorted: its `et_kernel_metadata` entry."""
        return sorted({c.kernel_key.text for c in self.calls if c.kernel_key is not None})

    @property
    def namespace(self) -> str:
        return self.name.split("::", 1)[0] if "::" in self.name else ""

    @property
    def custom(self) -> bool:
        """Not in a namespace of ExecuTorch's own kernel libraries."""
        return self.namespace not in STANDARD_NAMESPACES

    @property
    def library(self) -> str:
        """The library known to register a custom operator's namespace; "" when none is."""
        return KNOWN_LIBRARIES.get(self.namespace, "")


@dataclass
class BackendNeed:
    backend: str  # the delegate's backend id
    programs: list[str] = field(default_factory=list)
    delegates: int = 0  # entries in the delegate tables (each initialised at load)
    calls: list[Call] = field(default_factory=list)


@dataclass
class RuntimeNeeds:
    """The kernels and backends of one method, one program, or several merged."""

    programs: list[str] = field(default_factory=list)
    operators: list[OperatorNeed] = field(default_factory=list)  # by name
    backends: list[BackendNeed] = field(default_factory=list)  # by backend id
    problems: list[str] = field(default_factory=list)

    @property
    def called(self) -> list[OperatorNeed]:
        """The operators some instruction calls: the CPU kernels a runtime must have."""
        return [op for op in self.operators if op.calls]

    @property
    def kernel_key_count(self) -> int:
        return sum(len(op.kernel_keys) for op in self.called)

    def kernel_metadata(self) -> dict[str, list[str]]:
        """`gen_oplist`'s `et_kernel_metadata`: each called operator's kernel keys."""
        return {op.name: op.kernel_keys for op in self.called}


def tensor_meta(method: Method, a: int, problems: list[str], where: str) -> TensorMeta | None:
    """What argument value `a` adds to a kernel key (module docstring): its tensor's, a tensor
    list's first, an optional tensor list's first present, or nothing. What cannot be read (an
    index out of range, a list item that is not a tensor) is a problem and adds nothing, where
    `gen_oplist` would read past the table."""
    values = method.values
    if not 0 <= a < len(values):
        problems.append(f"{where}: argument {a} is not a value of the method")
        return None
    value = values[a]
    payload = value.payload
    if value.kind is TENSOR:
        tensor = payload if isinstance(payload, Tensor) else None
        if tensor is None:
            problems.append(f"{where}: value {a} should be a tensor and is not")
    elif value.kind is TENSOR_LIST and isinstance(payload, list):
        tensor = method.tensor(int(payload[0])) if payload else None
        if payload and tensor is None:
            problems.append(f"{where}: value {payload[0]} should be a tensor and is not")
    elif value.kind is OPTIONAL_TENSOR_LIST and isinstance(payload, list):
        present = (method.tensor(int(i)) for i in payload if i != -1)
        tensor = next((t for t in present if t is not None), None)
    else:
        return None
    return TensorMeta(tensor.scalar_type, tuple(tensor.dim_order)) if tensor is not None else None


def method_kernel_keys(method: Method) -> tuple[dict[int, KernelKey], list[str]]:
    """Each KernelCall's kernel key, by instruction index (one object per distinct key), and what
    could not be read (said once per argument value)."""
    keys: dict[int, KernelKey] = {}
    problems: list[str] = []
    values = method.values
    n = len(values)
    kernel = KERNEL
    operators = len(method.operators)
    # What each argument value adds to a key, worked out once (None: nothing).
    adds: dict[int, TensorMeta | None] = {}
    metas: dict[tuple[int, tuple[int, ...]], TensorMeta] = {}
    distinct: dict[tuple[TensorMeta, ...], KernelKey] = {}
    for ins in method.instructions:
        # `Method.operator_of` in line: a call that names an operator of the table.
        if ins.kind is not kernel or (o := ins.op_index) is None or not 0 <= o < operators:
            continue
        call: list[TensorMeta] = []
        for a in ins.args:
            if a in adds:
                meta = adds[a]
            elif 0 <= a < n and type(tensor := (value := values[a]).payload) is Tensor:
                # A method has a handful of dtype and dim order pairs: one TensorMeta each.
                pair = (tensor.scalar_type, tuple(tensor.dim_order))
                meta = metas.get(pair)
                if meta is None:
                    meta = metas[pair] = TensorMeta(*pair)
                adds[a] = meta
            elif 0 <= a < n and value.kind not in TENSOR_KINDS:
                # A scalar, a string, a list of ints: not read by `tensor_meta`, adds nothing.
                meta = adds[a] = None
            else:  # a tensor list, or something that cannot be read
                where = f"{method.name} instruction {ins.index}"
                meta = adds[a] = tensor_meta(method, a, problems, where)
            if meta is not None:
                call.append(meta)
        found = tuple(call)
        key = distinct.get(found)
        if key is None:
            key = distinct[found] = KernelKey(found)
        keys[ins.index] = key
    return keys, problems


def method_needs(
    program: str,
    method: Method,
    parts: MethodPartitions,
    source: MethodSource | None,
    keys: dict[int, KernelKey],
    problems: list[str] | None = None,
) -> RuntimeNeeds:
    """What one method needs: its operator table's operators with the calls to each, and its
    delegate table's backends with the calls to each."""
    ops = {op.full_name: OperatorNeed(op.full_name, [program]) for op in method.operators}
    backends: dict[str, BackendNeed] = {}
    for delegate in method.delegates:
        need = backends.setdefault(delegate.id, BackendNeed(delegate.id, [program]))
        need.delegates += 1
    names = [p.name for p in parts.partitions]  # each partition's name, looked up once
    partition_of = parts.partition_of
    for ins in method.instructions:
        layers = _layers(source, ins.index) if source is not None else ()
        part = names[partition_of[ins.index]]
        if ins.index in keys:
            op = method.operator_of(ins.op_index)
            assert op is not None  # method_kernel_keys keyed only resolvable calls
            call = Call(program, method.name, ins.index, part, layers, keys[ins.index])
            ops[op.full_name].calls.append(call)
        elif ins.kind is DELEGATE:
            d = ins.delegate_index
            if d is not None and 0 <= d < len(method.delegates):
                backend = backends[method.delegates[d].id]
                backend.calls.append(Call(program, method.name, ins.index, part, layers))
    return RuntimeNeeds(
        [program],
        [ops[name] for name in sorted(ops)],
        [backends[b] for b in sorted(backends)],
        list(problems or []),
    )


def _layers(source: MethodSource | None, index: int) -> tuple[ModuleRef, ...]:
    found = source.instructions.get(index) if source is not None else None
    return tuple(found.modules) if found is not None else ()


def merge_needs(parts: list[RuntimeNeeds]) -> RuntimeNeeds:
    """Methods (or programs) together, as `gen_oplist` merges them: operators and backends by
    name, their programs united, their calls in the order given."""
    ops: dict[str, OperatorNeed] = {}
    backends: dict[str, BackendNeed] = {}
    out = RuntimeNeeds()
    for needs in parts:
        out.programs += [p for p in needs.programs if p not in out.programs]
        out.problems += needs.problems
        for op in needs.operators:
            merged = ops.setdefault(op.name, OperatorNeed(op.name))
            merged.programs += [p for p in op.programs if p not in merged.programs]
            merged.calls += op.calls
        for b in needs.backends:
            mb = backends.setdefault(b.backend, BackendNeed(b.backend))
            mb.programs += [p for p in b.programs if p not in mb.programs]
            mb.delegates += b.delegates
            mb.calls += b.calls
    out.operators = [ops[name] for name in sorted(ops)]
    out.backends = [backends[b] for b in sorted(backends)]
    return out
