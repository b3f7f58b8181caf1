"""Constant values (issue 26): pytree specs as torch writes them, tensors stored in another dim
order, and the bounded texts. Values against ExecuTorch's reader: tests/oracle/test_constants.py."""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest
import torch
from torch.utils._pytree import tree_flatten, treespec_dumps

import pte_adapter
from pte_adapter.analysis.constants import (
    PREVIEW_ELEMENTS,
    NotConstant,
    TensorPreview,
    _logical,
)
from pte_adapter.program.pytree import MAX_DEPTH, TreeSpec, parse_treespec
from pte_adapter.render.constant_facts import TEXT_CHARS, TEXT_ITEMS, constant_text
from tests.support.examples import example


def _shape(spec: TreeSpec) -> Any:
    """The spec as plain data: leaves as '*', dicts with their keys."""
    if spec.is_leaf:
        return "*"
    if spec.keys:
        return {k: _shape(c) for k, c in zip(spec.keys, spec.children, strict=True)}
    return (spec.type, [_shape(c) for c in spec.children])


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        (5, "*"),
        ([2, 3], ("builtins.list", ["*", "*"])),
        ((1, "x"), ("builtins.tuple", ["*", "*"])),
        ({"a": 1, "b": [2.5, 3.5]}, {"a": "*", "b": ("builtins.list", ["*", "*"])}),
        ({"x": 1, 2: [3]}, {"x": "*", "2": ("builtins.list", ["*"])}),
        (collections.OrderedDict(a=1), {"a": "*"}),
        ([[1], []], ("builtins.list", [("builtins.list", ["*"]), ("builtins.list", [])])),
    ],
)
def test_specs_as_torch_writes_them(value: Any, shape: Any) -> None:
    leaves, spec = tree_flatten(value)
    parsed = parse_treespec(treespec_dumps(spec))
    assert parsed is not None
    assert _shape(parsed) == shape
    assert parsed.leaves == len(leaves)


def _nested(depth: int) -> str:
    node: dict[str, Any] = {"type": None, "context": None, "children_spec": []}
    for _ in range(depth):
        node = {"type": "builtins.list", "context": "null", "children_spec": [node]}
    return json.dumps([1, node])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[1]",
        '{"type": null}',
        '[1, {"type": 3, "children_spec": []}]',
        '[1, {"type": null, "children_spec": [{"type": null}]}]',  # a leaf with children
        '[1, {"type": "builtins.list", "children_spec": "x"}]',
        "[" * 100_000,
        _nested(MAX_DEPTH + 1),
    ],
)
def test_a_malformed_spec_is_no_spec(text: str) -> None:
    assert parse_treespec(text) is None


def test_a_spec_as_deep_as_allowed_is_read() -> None:
    spec = parse_treespec(_nested(MAX_DEPTH))
    assert spec is not None and spec.leaves == 1


@pytest.mark.parametrize(("sizes", "order"), [([1, 2, 3, 2], [0, 2, 3, 1]), ([2, 3], [1, 0])])
def test_values_stored_in_another_dim_order_are_shown_row_major(
    sizes: list[int], order: list[int]
) -> None:
    logical = torch.arange(torch.Size(sizes).numel()).reshape(sizes)
    stored = logical.permute(order).contiguous().flatten().tolist()
    assert list(_logical(tuple(stored), sizes, order)) == logical.flatten().tolist()


def test_the_llm_examples_methods_without_instructions_are_its_constant_methods() -> None:
    result = pte_adapter.analyse(pte_adapter.load(example("tiny_llama_xnnpack")))
    assert [m.name for m in result.methods if m.is_constant] == list(result.constant_methods)
    assert result.methods[0].name == "forward" and not result.methods[0].is_constant
    assert result.methods[0].constants.returns is None  # a method with work returns nothing here
    mask = result.constant_methods["get_stop_token_mask"]
    assert isinstance(mask, TensorPreview) and mask.numel == 128
    assert mask.values is not None and len(mask.values) == PREVIEW_ELEMENTS  # read no more
    eos = result.method("get_eos_ids")
    assert eos is not None and eos.constants.output_paths == {0: "[0]", 1: "[1]"}


def test_texts_are_bounded() -> None:
    assert constant_text("x" * 1000) == '"' + "x" * (TEXT_CHARS - 1) + "… (1000 characters)"
    assert constant_text(list(range(100))).endswith(f", {TEXT_ITEMS - 1}, … (100 items)]")
    assert constant_text((1,)) == "(1,)"
    assert constant_text({"a": [1.5, True]}) == '{"a": [1.5, True]}'
    assert constant_text(NotConstant("input 0")) == "<input 0>"
    big = TensorPreview("float32", (1000,), 1000, tuple(float(i) for i in range(PREVIEW_ELEMENTS)))
    assert constant_text(big).endswith(", 15, …] (first 16 of 1000)")
    assert constant_text(TensorPreview("quint4x2", (4,), 4, None, "not decoded")) == (
        "quint4x2[4] (not decoded)"
    )
    assert constant_text(TensorPreview("float32", (), 1, (0.5,))) == "float32[] 0.5"
