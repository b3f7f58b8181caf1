"""Constant values (issue 26) against ExecuTorch's own reading of the same files.

For every method of every example, each input and output that is a constant of the file (an
Int/Double/Bool/String value, a list of them, a constant tensor) has the value ExecuTorch's
deserializer reads there; a constant tensor's shown elements are the ones torch decodes from the
bytes the deserializer restored; and what a method without instructions returns is what torch's
own `tree_unflatten` builds from its outputs and its pytree spec. On the LLM example, the texts
Model Explorer and `summary` show read back to those values, and `--json` holds them.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
import torch

import pte_adapter
from pte_adapter.analysis.constants import PREVIEW_ELEMENTS
from pte_adapter.api import summarize
from pte_adapter.cli import EXIT_OK, main
from pte_adapter.explorer.convert import convert_path
from tests.support.constants import (
    LLM,
    OracleNotConstant,
    llm_returns,
    oracle_returns,
    oracle_value,
    same_value,
    shown_is,
)
from tests.support.examples import example, oracle


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
            theirs = {p: oracle_value(pte, plan, v) for p, v in enumerate(positions)}
            constant = {p: v for p, v in theirs.items() if not isinstance(v, OracleNotConstant)}
            assert sorted(ours) == sorted(constant), ma.name
            for pos, value in constant.items():
                assert same_value(ours[pos], value), (ma.name, pos, ours[pos], value)
                compared += 1
        if not plan.chains or not any(c.instructions for c in plan.chains):
            assert ma.is_constant
            returns = oracle_returns(pte, plan)
            assert same_value(ma.constants.returns, returns), (
                ma.name,
                ma.constants.returns,
                returns,
            )
            assert same_value(result.constant_methods[ma.name], returns)
        assert ma.constants.problems == []
    assert list(result.constant_methods) == [
        p.name for p in pte.program.execution_plan if not any(c.instructions for c in p.chains)
    ]
    if example_pte.stem == LLM:  # every kind of value an LLM export stores was compared
        kinds = {type(v).__name__ for v in result.constant_methods.values()}
        assert kinds == {"int", "list", "bool", "float", "str", "TensorPreview"}
        assert compared == 15  # 14 methods, get_eos_ids returning two values


def test_model_explorer_shows_each_constant_methods_value() -> None:
    """Each constant method's graph says what it returns (graph attribute `returns`) and its Graph
    Outputs node the value of each output; every method graph lists them all."""
    expected = llm_returns()
    graphs = {g.id: g for g in convert_path(example(LLM))}
    assert len(expected) == 14
    for name, value in expected.items():
        attrs = graphs[name].groupNodeAttributes[""]  # type: ignore[index]
        assert shown_is(attrs["returns"], value), (name, attrs["returns"], value)
        outputs = next(n for n in graphs[name].nodes if n.id == "outputs")
        leaves = value if isinstance(value, list) else [value]
        # Attributes (what Model Explorer shows of a node without incoming edges) ...
        node_attrs = {kv.key: str(kv.value) for kv in outputs.attrs}
        whole = ["returns"] if len(leaves) > 1 else []  # one output is the whole
        assert list(node_attrs) == [*whole, *(f"output{i}" for i in range(len(leaves)))]
        assert shown_is(node_attrs.get("returns", node_attrs["output0"]), value), node_attrs
        # ... and each output's metadata (in the JSON and for tools), its value first.
        assert len(outputs.inputsMetadata) == len(leaves)
        for port, leaf in zip(outputs.inputsMetadata, leaves, strict=True):
            shown = {kv.key: kv.value for kv in port.attrs}
            assert port.attrs[0].key == "value"
            assert shown["value"] == node_attrs[f"output{port.id}"]
            assert shown_is(str(shown["value"]), leaf), (name, shown, leaf)
            if isinstance(value, list):
                assert shown["returned_as"] == f"{name}()[{port.id}]"
    for graph in graphs.values():
        if graph.id in expected or graph.id == "forward":
            lines = graph.groupNodeAttributes[""]["constant_methods"].split("\n")  # type: ignore[index]
            assert [line.split(" = ", 1)[0] for line in lines] == list(expected)
            for line in lines:
                name, text = line.split(" = ", 1)
                assert shown_is(text, expected[name]), line


def test_summary_shows_each_constant_methods_value(capsys: pytest.CaptureFixture[str]) -> None:
    """`summary` prints one block of constant methods, a line each in the program's order, and
    `--json` gives each value typed."""
    expected = llm_returns()
    assert main(["summary", str(example(LLM))]) == EXIT_OK
    text = capsys.readouterr().out
    assert text.count("\nmethod ") == 1  # forward only: no block of '0 instructions' per method
    block = text.split("\nconstant methods (14; ", 1)[1].splitlines()[1:]
    assert [line.split("=", 1)[0].strip() for line in block] == list(expected)
    for line in block:
        name, shown = (part.strip() for part in line.split("=", 1))
        assert shown_is(shown, expected[name]), line
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
