"""The CPU kernels of an emulated run (`emulation.py`): one KernelCall of a committed program,
computed on this host from the arguments the instruction holds.

- `run_in_runtime`: by ExecuTorch's own kernel in its pip runtime, the instruction cut out of the
  program into a one-instruction program (`cut_program`: the program's values, operator table and
  memory plan unchanged, written by ExecuTorch's serializer; its delegates left out, so nothing
  but this kernel runs).
- `run_with_torch`: by torch's operator of the same name and overload, for a kernel the pip
  runtime does not have, with the instruction's arguments decoded from the program's values.

`out_values` names what the runtime logs for a KernelCall: the kernel wrappers ExecuTorch's
codegen writes (`codegen/gen.py`) log each `out` argument after the kernel returns.
"""

from __future__ import annotations

import copy
from functools import cache

import numpy as np

# ExecuTorch ScalarType value -> torch dtype name (for ScalarType arguments)
TORCH_DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 6: "float32"}


@cache
def runtime_operators() -> frozenset[str]:
    """The kernels ExecuTorch's pip runtime registers ("ns::name.overload"), the quantized
    library included."""
    import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed kernels)
    from executorch.extension.pybindings import portable_lib

    return frozenset(portable_lib._get_operator_names())


def operator_name(plan, op_index: int) -> str:
    op = plan.operators[op_index]
    return f"{op.name}.{op.overload}" if op.overload else op.name


def torch_op(name: str):
    """torch's OpOverload for "ns::name.overload"."""
    import executorch.kernels.quantized  # noqa: F401  (the quantized_decomposed .out schemas)
    import torch

    ns, rest = name.split("::")
    op, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), op), overload or "default")


def schema_arguments(name: str, args: list[int]):
    """The operator's schema arguments, checked against the instruction's argument list (the
    arguments, then one slot for what the kernel returns, as ExecuTorch's emitter writes them)."""
    schema = torch_op(name)._schema
    if len(args) != len(schema.arguments) + 1:
        raise ValueError(f"{name}: {len(args)} arguments for schema {schema}")
    return schema.arguments


def out_values(name: str, args: list[int]) -> list[int]:
    """The value ids the runtime's kernel wrapper logs after the kernel (codegen/gen.py): the
    `out` arguments of a kernel that has them and returns something, else the return slot."""
    schema = torch_op(name)._schema
    arguments = schema_arguments(name, args)
    outs = [args[i] for i, a in enumerate(arguments) if a.is_out]
    return outs if outs and schema.returns else [args[len(arguments)]]


def tensor_inputs(plan, name: str, args: list[int]) -> list[int]:
    """The non-constant tensor arguments that are not `out`: the kernel's inputs."""
    out = []
    for i, arg in enumerate(schema_arguments(name, args)):
        val = plan.values[args[i]].val
        if type(val).__name__ == "Tensor" and not arg.is_out:
            if val.data_buffer_idx:
                raise NotImplementedError(f"{name}: a constant tensor argument")
            out.append(args[i])
    return out


def cut_program(program, instruction: int, inputs: list[int], outputs: list[int]) -> bytes:
    """A program whose one method runs only `instruction` of the first method's chain 0, with
    `inputs` and `outputs` as the method's."""
    from executorch.exir._serialize._program import PTEFile, serialize_pte_binary
    from executorch.exir.schema import Chain

    plan = copy.copy(program.execution_plan[0])  # shallow: every field changed is replaced
    chosen = plan.chains[0].instructions[instruction]
    chain = Chain(
        inputs=list(inputs), outputs=list(outputs), instructions=[chosen], stacktrace=None
    )
    plan.inputs, plan.outputs, plan.chains, plan.delegates = (
        list(inputs),
        list(outputs),
        [chain],
        [],
    )
    cut = copy.copy(program)
    cut.execution_plan, cut.backend_delegate_data = [plan], []
    return bytes(serialize_pte_binary(PTEFile(program=cut)))


def run_in_runtime(pte: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """A program run once by ExecuTorch's pip runtime."""
    import torch
    from executorch.extension.pybindings import portable_lib

    runtime_operators()  # the quantized kernels registered
    module = portable_lib._load_for_executorch_from_buffer(pte)
    outputs = module.run_method("forward", tuple(torch.from_numpy(a.copy()) for a in inputs))
    return [o.numpy().copy() for o in outputs]


def run_with_torch(plan, name: str, args: list[int], values: dict) -> list[np.ndarray]:
    """torch's operator `name` called with the instruction's arguments; its `out` tensors."""
    import torch

    positional, keywords, outs = [], {}, []
    for i, arg in enumerate(schema_arguments(name, args)):
        value = _python_value(plan, args[i], values, arg, torch)
        if arg.is_out:
            outs.append(value)
        if arg.kwarg_only:
            keywords[arg.name] = value
        else:
            positional.append(value)
    torch_op(name)(*positional, **keywords)
    return [o.numpy().copy() for o in outs]


def _python_value(plan, vid: int, values: dict, arg, torch):
    """A program value as torch's operator takes it."""
    val = plan.values[vid].val
    kind = type(val).__name__
    if kind == "Tensor":
        if arg.is_out:
            dtype = getattr(torch, TORCH_DTYPES[int(val.scalar_type)])
            return torch.empty(tuple(val.sizes), dtype=dtype)
        return torch.from_numpy(values[vid].copy())
    if kind == "Int":
        if "ScalarType" in str(arg.type):
            return getattr(torch, TORCH_DTYPES[val.int_val])
        return val.int_val
    if kind in ("Double", "Bool"):
        return val.double_val if kind == "Double" else val.bool_val
    if kind == "Null":
        return None
    if kind == "IntList":
        return [plan.values[i].val.int_val for i in val.items]
    raise NotImplementedError(f"{kind} argument {arg.name}")
