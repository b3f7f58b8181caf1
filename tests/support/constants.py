"""ExecuTorch's reading of the constant values of a program (issue 26), and reading our texts of
them back: shared by tests/oracle/test_constants.py and tests/e2e/test_browser_constants.py.

The oracle is `deserialize_pte_binary` for the values, torch for a constant tensor's elements
(decoded from the bytes the deserializer restored) and torch's `tree_unflatten` for how a
method's outputs nest (its pytree spec)."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import torch
from torch.utils._pytree import tree_unflatten, treespec_loads

from pte_adapter.analysis.constants import PREVIEW_ELEMENTS, NotConstant, TensorPreview
from tests.support.examples import example, oracle

LLM = "tiny_llama_xnnpack"
# ScalarType value -> torch dtype, for the dtypes the examples hold (c10/core/ScalarType.h order).
TORCH_DTYPES = {
    0: torch.uint8,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    11: torch.bool,
    15: torch.bfloat16,
}


class OracleNotConstant:
    """What the oracle side calls a value that is not a constant of the file."""


def oracle_tensor(pte: Any, ev: Any) -> torch.Tensor | OracleNotConstant:
    """A constant tensor as torch reads the bytes the deserializer restored for it."""
    t = ev.val
    # Planned, mutable or external tensors: no example returns one as a constant.
    if t.allocation_info is not None or t.data_buffer_idx == 0 or t.extra_tensor_info:
        return OracleNotConstant()
    dtype = TORCH_DTYPES[int(t.scalar_type)]
    sizes, order = list(t.sizes), list(t.dim_order)
    n = math.prod(sizes) * torch.empty((), dtype=dtype).element_size()
    raw = bytearray(bytes(pte.program.constant_buffer[t.data_buffer_idx].storage)[:n])
    stored = torch.frombuffer(raw, dtype=dtype).reshape([sizes[d] for d in order])
    return stored.permute([order.index(d) for d in range(len(sizes))])


def oracle_value(pte: Any, plan: Any, index: int) -> Any:
    """Value `index` of the plan as the deserializer has it (OracleNotConstant for a tensor that
    is not a constant)."""
    ev = plan.values[index]
    cls = type(ev.val).__name__
    if cls == "Null":
        return None
    if cls in ("Int", "Bool", "Double", "String"):
        return getattr(ev.val, f"{cls.lower()}_val")
    if cls in ("DoubleList", "BoolList"):
        return list(ev.val.items)
    if cls == "IntList":
        return [plan.values[i].val.int_val for i in ev.val.items]
    if cls == "Tensor":
        return oracle_tensor(pte, ev)
    return OracleNotConstant()


def same_value(ours: Any, theirs: Any) -> bool:
    """Equal, and of the same kind (True is not 1), a tensor by its type and shown elements."""
    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, TensorPreview) or ours.values is None:
            return False
        expected = theirs.flatten()[:PREVIEW_ELEMENTS].tolist()
        return (
            ours.shape == tuple(theirs.shape)
            and ours.dtype == str(theirs.dtype).removeprefix("torch.")
            and list(ours.values) == expected
        )
    if isinstance(theirs, OracleNotConstant):
        return isinstance(ours, NotConstant)
    if isinstance(theirs, (list, tuple)):
        return (
            type(ours) is type(theirs)
            and len(ours) == len(theirs)
            and all(same_value(a, b) for a, b in zip(ours, theirs, strict=True))
        )
    if isinstance(theirs, dict):
        return (
            isinstance(ours, dict)
            and list(ours) == [str(k) for k in theirs]
            and all(same_value(ours[str(k)], v) for k, v in theirs.items())
        )
    return type(ours) is type(theirs) and ours == theirs


def oracle_returns(pte: Any, plan: Any) -> Any:
    """What the method returns: its outputs nested by torch's reading of its pytree spec."""
    leaves = [oracle_value(pte, plan, i) for i in plan.outputs]
    spec = treespec_loads(plan.container_meta_type.encoded_out_str)
    return tree_unflatten(leaves, spec)


def read_back(text: str) -> Any:
    """A shown value read back into Python: literals, and `dtype[shape] [values]` tensors."""
    tensor = re.fullmatch(r"(\w+)\[([\d, ]*)\] (\[.*?\])(?: \(first \d+ of \d+\))?", text)
    if tensor is None:
        return ast.literal_eval(text)
    values = ast.literal_eval(tensor.group(3).replace(", …", ""))
    flat = torch.tensor(values).flatten().tolist() if values else []
    return tensor.group(1), ast.literal_eval(f"[{tensor.group(2)}]"), flat


def shown_is(text: str, theirs: Any) -> bool:
    """The text reads back to the oracle's value; a float32 element to the same stored float."""
    back = read_back(text)
    if isinstance(theirs, torch.Tensor):
        dtype, shape, flat = back
        expected = theirs.flatten()[:PREVIEW_ELEMENTS]
        if theirs.is_floating_point():  # shortest text that reads back to the same float32
            flat = torch.tensor(flat, dtype=theirs.dtype).tolist()
        return (dtype, shape, flat) == (
            str(theirs.dtype).removeprefix("torch."),
            list(theirs.shape),
            expected.tolist(),
        )
    if isinstance(theirs, (list, tuple)):
        return list(back) == list(theirs) and all(
            type(a) is type(b) for a, b in zip(back, theirs, strict=True)
        )
    return type(back) is type(theirs) and back == theirs


def llm_returns() -> dict[str, Any]:
    """The LLM example's methods without instructions and what each returns, by the oracle."""
    pte: Any = oracle(example(LLM))
    plans = pte.program.execution_plan
    return {
        p.name: oracle_returns(pte, p) for p in plans if not any(c.instructions for c in p.chains)
    }
