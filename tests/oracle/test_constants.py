"""Constant values (issue 26) against ExecuTorch's own reading of the same files.

For every method of every example, each input and output that is a constant of the file (an
Int/Double/Bool/String value, a list of them, a constant tensor) has the value ExecuTorch's
deserializer reads there; a constant tensor's shown elements are the ones torch decodes from the
bytes the deserializer restored; and what a method without instructions returns is what torch's
own `tree_unflatten` builds from its outputs and its pytree spec. On the LLM example, the texts
Model Explorer and `summary` show read back to those values, and `--json` holds them.
"""

from __future__ import annotations

import ast
import math
import re
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._pytree import tree_unflatten, treespec_loads

import pte_adapter
from pte_adapter.analysis.constants import PREVIEW_ELEMENTS, NotConstant, TensorPreview
from pte_adapter.api import summarize
from pte_adapter.cli import EXIT_OK, main
from pte_adapter.explorer.convert import convert_path
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


class _NotConstant:
    """What the oracle side calls a value that is not a constant of the file."""


def _tensor(pte: Any, ev: Any) -> torch.Tensor | _NotConstant:
    """A constant tensor as torch reads the bytes the deserializer restored for it."""
    t = ev.val
    if t.allocation_info is not None or t.data_buffer_idx == 0 or t.extra_tensor_info:
        return _NotConstant()  # planned, mutable or external: no example returns such a constant
    dtype = TORCH_DTYPES[int(t.scalar_type)]
    sizes, order = list(t.sizes), list(t.dim_order)
    n = math.prod(sizes) * torch.empty((), dtype=dtype).element_size()
    raw = bytearray(bytes(pte.program.constant_buffer[t.data_buffer_idx].storage)[:n])
    stored = torch.frombuffer(raw, dtype=dtype).reshape([sizes[d] for d in order])
    return stored.permute([order.index(d) for d in range(len(sizes))])


def _oracle_value(pte: Any, plan: Any, index: int) -> Any:
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
        return _tensor(pte, ev)
    return _NotConstant()


def _same(ours: Any, theirs: Any) -> bool:
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
    if isinstance(theirs, _NotConstant):
        return isinstance(ours, NotConstant)
    if isinstance(theirs, (list, tuple)):
        return (
            type(ours) is type(theirs)
            and len(ours) == len(theirs)
            and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
        )
    if isinstance(theirs, dict):
        return (
            isinstance(ours, dict)
            and list(ours) == [str(k) for k in theirs]
            and all(_same(ours[str(k)], v) for k, v in theirs.items())
        )
    return type(ours) is type(theirs) and ours == theirs


def _oracle_returns(pte: Any, plan: Any) -> Any:
    leaves = [_oracle_value(pte, plan, i) for i in plan.outputs]
    spec = treespec_loads(plan.container_meta_type.encoded_out_str)
    return tree_unflatten(leaves, spec)


def test_constant_values_are_the_deserializers(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    result = pte_adapter.analyse(pte_adapter.load(example_pte))
    pte: Any = oracle(example_pte, oracle_cache)
    compared = 0
    for ma, plan in zip(result.methods, pte.program.execution_plan, strict=True):
        for ours, positions in (
            (ma.constants.inputs, plan.inputs),
            (ma.constants.outputs, plan.outputs),
        ):
            theirs = {p: _oracle_value(pte, plan, v) for p, v in enumerate(positions)}
            constant = {p: v for p, v in theirs.items() if not isinstance(v, _NotConstant)}
            assert sorted(ours) == sorted(constant), ma.name
            for pos, value in constant.items():
                assert _same(ours[pos], value), (ma.name, pos, ours[pos], value)
                compared += 1
        if not plan.chains or not any(c.instructions for c in plan.chains):
            assert ma.is_constant
            returns = _oracle_returns(pte, plan)
            assert _same(ma.constants.returns, returns), (ma.name, ma.constants.returns, returns)
            assert _same(result.constant_methods[ma.name], returns)
        assert ma.constants.problems == []
    assert list(result.constant_methods) == [
        p.name for p in pte.program.execution_plan if not any(c.instructions for c in p.chains)
    ]
    if example_pte.stem == LLM:  # every kind of value an LLM export stores was compared
        kinds = {type(v).__name__ for v in result.constant_methods.values()}
        assert kinds == {"int", "list", "bool", "float", "str", "TensorPreview"}
        assert compared == 15  # 14 methods, get_eos_ids returning two values


def _read_back(text: str) -> Any:
    """A shown value read back into Python: literals, and `dtype[shape] [values]` tensors."""
    tensor = re.fullmatch(r"(\w+)\[([\d, ]*)\] (\[.*?\])(?: \(first \d+ of \d+\))?", text)
    if tensor is None:
        return ast.literal_eval(text)
    values = ast.literal_eval(tensor.group(3).replace(", …", ""))
    flat = torch.tensor(values).flatten().tolist() if values else []
    return tensor.group(1), ast.literal_eval(f"[{tensor.group(2)}]"), flat


def _shown_is(text: str, theirs: Any) -> bool:
    """The text reads back to the oracle's value; a float32 element to the same stored float."""
    back = _read_back(text)
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


def _llm_returns() -> dict[str, Any]:
    pte: Any = oracle(example(LLM))
    plans = pte.program.execution_plan
    return {
        p.name: _oracle_returns(pte, p) for p in plans if not any(c.instructions for c in p.chains)
    }


def test_model_explorer_shows_each_constant_methods_value() -> None:
    """Each constant method's graph says what it returns (graph attribute `returns`) and its Graph
    Outputs node the value of each output; every method graph lists them all."""
    expected = _llm_returns()
    graphs = {g.id: g for g in convert_path(example(LLM))}
    assert len(expected) == 14
    for name, value in expected.items():
        attrs = graphs[name].groupNodeAttributes[""]  # type: ignore[index]
        assert _shown_is(attrs["returns"], value), (name, attrs["returns"], value)
        outputs = next(n for n in graphs[name].nodes if n.id == "outputs")
        leaves = value if isinstance(value, list) else [value]
        assert len(outputs.inputsMetadata) == len(leaves)
        for port, leaf in zip(outputs.inputsMetadata, leaves, strict=True):
            shown = {kv.key: kv.value for kv in port.attrs}
            assert port.attrs[0].key == "value"
            assert _shown_is(str(shown["value"]), leaf), (name, shown, leaf)
            if isinstance(value, list):
                assert shown["returned_as"] == f"{name}()[{port.id}]"
    for graph in graphs.values():
        if graph.id in expected or graph.id == "forward":
            lines = graph.groupNodeAttributes[""]["constant_methods"].split("\n")  # type: ignore[index]
            assert [line.split(" = ", 1)[0] for line in lines] == list(expected)
            for line in lines:
                name, text = line.split(" = ", 1)
                assert _shown_is(text, expected[name]), line


def test_summary_shows_each_constant_methods_value(capsys: pytest.CaptureFixture[str]) -> None:
    """`summary` prints one block of constant methods, a line each in the program's order, and
    `--json` gives each value typed."""
    expected = _llm_returns()
    assert main(["summary", str(example(LLM))]) == EXIT_OK
    text = capsys.readouterr().out
    assert text.count("\nmethod ") == 1  # forward only: no block of '0 instructions' per method
    block = text.split("\nconstant methods (14; ", 1)[1].splitlines()[1:]
    assert [line.split("=", 1)[0].strip() for line in block] == list(expected)
    for line in block:
        name, shown = (part.strip() for part in line.split("=", 1))
        assert _shown_is(shown, expected[name]), line
    data = summarize(pte_adapter.load(example(LLM)))["constant_methods"]
    assert list(data) == list(expected)
    for name, value in expected.items():
        if isinstance(value, torch.Tensor):
            flat = value.flatten()[:PREVIEW_ELEMENTS].tolist()
            value = {"dtype": str(value.dtype)[6:], "shape": list(value.shape), "values": flat}
        assert data[name] == value and type(data[name]) is type(value), name


def test_float32_text_is_the_shortest_that_reads_back() -> None:
    """0.02 stored as float32 is 0.019999999552965164: shown as 0.02, kept exact in the JSON."""
    data = summarize(pte_adapter.load(example(LLM)))["constant_methods"]["get_kv_cache_scales"]
    assert data["values"][0] == struct.unpack("<f", struct.pack("<f", 0.02))[0] != 0.02
    attrs = {g.id: g for g in convert_path(example(LLM))}["get_kv_cache_scales"]
    assert attrs.groupNodeAttributes[""]["returns"] == (  # type: ignore[index]
        "float32[2, 2] [[0.02, 0.015], [0.031, 0.027]]"
    )
