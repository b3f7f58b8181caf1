"""Independent readings shared by several test modules: ExecuTorch's deserializer's instruction
stream cut into backend runs and its tensor sizes, and tosa-tools' generated readers on a TOSA
flatbuffer.

(ExecuTorch's reading of a whole example is `tests/support/examples.oracle()`.)
"""

from __future__ import annotations

import importlib
from typing import Any

from pte_adapter.program.model import SCALAR_TYPES


def instruction_runs(plan: Any) -> list[tuple[str, list[Any]]]:
    """Maximal runs of (backend id | "CPU") over the instruction stream of one execution plan as
    ExecuTorch's deserializer reads it (`oracle(path).program.execution_plan[i]`)."""
    runs: list[tuple[str, list[Any]]] = []
    for call in (x.instr_args for c in plan.chains for x in c.instructions):
        if type(call).__name__ == "DelegateCall":
            runs.append((plan.delegates[call.delegate_index].id, [call]))
        elif runs and runs[-1][0] == "CPU":
            runs[-1][1].append(call)
        else:
            runs.append(("CPU", [call]))
    return runs


def value_nbytes(plan: Any, v: int) -> int:
    """Bytes of tensor value `v` of an execution plan as ExecuTorch's deserializer reads it."""
    t = plan.values[v].val
    n = 1
    for s in t.sizes:
        n *= s
    return int(n * SCALAR_TYPES[int(t.scalar_type)][1])


def tosa_enum(module: str) -> dict[int, str]:
    """value -> name of one of tosa-tools' generated enums (`Op`, `DType`, `Attribute` ...)."""
    cls = getattr(importlib.import_module(f"tosa.{module}"), module)
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def tosa_oracle_graph(buf: bytes) -> dict[tuple[str, str], dict[str, Any]]:
    """(region, block) -> ops/tensors/io as tosa-tools' readers report them."""
    from tosa.TosaGraph import TosaGraph

    ops_by_value = tosa_enum("Op")
    dtypes = tosa_enum("DType")
    attr_names = tosa_enum("Attribute")
    g = TosaGraph.GetRootAs(buf, 0)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in range(g.RegionsLength()):
        region = g.Regions(r)
        for b in range(region.BlocksLength()):
            blk = region.Blocks(b)
            ops = []
            for i in range(blk.OperatorsLength()):
                op = blk.Operators(i)
                attrs: dict[str, Any] = {}
                if op.AttributeType():
                    name = attr_names[op.AttributeType()]
                    cls = getattr(importlib.import_module(f"tosa.{name}"), name)
                    table = op.Attribute()
                    a = cls()
                    a.Init(table.Bytes, table.Pos)
                    attrs = {"__table__": a}
                ops.append(
                    {
                        "kind": ops_by_value[op.Op()],
                        "inputs": [op.Inputs(j).decode() for j in range(op.InputsLength())],
                        "outputs": [op.Outputs(j).decode() for j in range(op.OutputsLength())],
                        "attr": attrs.get("__table__"),
                    }
                )
            tensors = {}
            for i in range(blk.TensorsLength()):
                t = blk.Tensors(i)
                tensors[t.Name().decode()] = {
                    "shape": [int(x) for x in t.ShapeAsNumpy()] if t.ShapeLength() else [],
                    "dtype": dtypes[t.Type()],
                    "data": t.DataLength(),
                }
            shapes = {}
            for i in range(blk.ShapesLength()):
                sh = blk.Shapes(i)
                shapes[sh.Name().decode()] = {"rank": sh.Rank(), "data": sh.DataLength()}
            out[(region.Name().decode(), blk.Name().decode())] = {
                "shapes": shapes,
                "ops": ops,
                "tensors": tensors,
                "inputs": [blk.Inputs(j).decode() for j in range(blk.InputsLength())],
                "outputs": [blk.Outputs(j).decode() for j in range(blk.OutputsLength())],
            }
    return out
