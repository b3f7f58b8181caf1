"""Defaults said once, not on every port (render/facts.py, docs/model-explorer.md "Defaults"): on
real examples, every tensor port shows its dim order and shape dynamism exactly when they differ
from the default, as ExecuTorch's own deserializer reads them; requires_grad never shows in a
program without a training method, and its count is in the graph's `defaults_not_shown`; an
XNNPACK node shows `flags` exactly when the payload sets one.
"""

from __future__ import annotations

from typing import Any

import pytest

import pte_adapter
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.facts import dim_order_text
from tests.support.examples import example, oracle

# XNNPACK (node flags, requires_grad set by torch), free_call (dynamic shapes, a [1, 0] dim order),
# an Ethos-U program and a TOSA one (4-d tensors, static).
EXAMPLES = ["tiny_gpt_xnnpack", "mv2_xnnpack_int8", "free_call", "mv2_lrn_ethosu85", "mv2_tosa"]


def _ports(graphs: list[Any]) -> dict[tuple[str, str], dict[str, str]]:
    """Each method-level tensor port's attributes, by (method graph, value index)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for g in graphs:
        for n in g.nodes:
            for m in [*n.outputsMetadata, *n.inputsMetadata]:
                attrs = {kv.key: kv.value for kv in m.attrs}
                if "value_index" in attrs:
                    out.setdefault((g.id, attrs["value_index"]), {}).update(attrs)
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_tensor_port_shows_exactly_its_non_default_values(name: str) -> None:
    pte = example(name)
    graphs = convert_path(pte)
    ports = _ports(graphs)
    theirs: Any = oracle(pte).program  # type: ignore[attr-defined]
    shown = {"dim_order": 0, "shape_dynamism": 0}
    checked = 0
    for plan in theirs.execution_plan:
        for index, ev in enumerate(plan.values):
            attrs = ports.get((plan.name, str(index)))
            if attrs is None or type(ev.val).__name__ != "Tensor":
                continue
            checked += 1
            order, rank = list(ev.val.dim_order), len(ev.val.sizes)
            if order == list(range(rank)):
                assert "dim_order" not in attrs, (plan.name, index)
            else:
                assert attrs["dim_order"].startswith(str(order)), (plan.name, index)
                shown["dim_order"] += 1
            dynamism = ev.val.shape_dynamism.name.lower()
            if dynamism == "static":
                assert "shape_dynamism" not in attrs, (plan.name, index)
            else:
                assert attrs["shape_dynamism"].startswith(dynamism), (plan.name, index)
                shown["shape_dynamism"] += 1
            # No example has a training method: the flag is counted on the graph, never per port.
            assert "requires_grad" not in attrs, (plan.name, index)
            # A planned tensor's bytes are in its memory_plan ("(N bytes of M)"), not twice.
            if ev.val.allocation_info is not None:
                assert "nbytes" not in attrs and " bytes" in attrs["memory_plan"], (
                    plan.name,
                    index,
                )
            else:
                assert "memory_plan" not in attrs and int(attrs["nbytes"]) >= 0, (plan.name, index)
    assert checked >= 2
    if name == "free_call":  # the non-defaults are there to be seen
        assert shown["dim_order"] >= 1 and shown["shape_dynamism"] >= 4


def test_the_graph_says_the_defaults_once_and_counts_requires_grad() -> None:
    pte = example("tiny_gpt_xnnpack")
    graphs = {g.id: g for g in convert_path(pte)}
    program = pte_adapter.load(pte)
    for method in program.methods:
        assert not method.trains
        flagged = sum(
            1 for v in method.values if getattr(v.payload, "requires_grad", False) is True
        )
        text = graphs[method.name].groupNodeAttributes[""]["defaults_not_shown"]
        assert "dim_order: contiguous" in text and "shape_dynamism: static" in text
        assert "an XNNPACK node's flags: 0" in text
        assert (f"requires_grad is set on {flagged} " in text) == (flagged > 0)
        assert flagged > 0  # torch had requires_grad on the exported model's tensors


@pytest.mark.parametrize("name", ["tiny_gpt_xnnpack", "mv2_xnnpack_fp32"])
def test_an_xnnpack_node_shows_flags_exactly_when_set(name: str) -> None:
    result = pte_adapter.analyse(pte_adapter.load(example(name)))
    seen = {True: 0, False: 0}
    for method in result.program.methods:
        for d in method.delegates:
            for graph in d.decoded.graphs:
                for node in graph.nodes:
                    flags = node.params.get("flags")
                    if flags is None:
                        continue
                    seen[flags != 0] += 1
                    assert ("flags" in node.attrs) == (flags != 0), node.id
                    if flags:
                        assert int(node.attrs["flags"], 16) == flags
    assert seen[False] > 0


def test_a_named_dim_order_is_named() -> None:
    assert dim_order_text([0, 1, 2, 3], 4) is None
    assert dim_order_text([], 0) is None
    assert dim_order_text([0, 2, 3, 1], 4) == "[0, 2, 3, 1] (channels_last)"
    assert dim_order_text([1, 0], 2) == "[1, 0] (not contiguous)"
    assert dim_order_text([], 3) == "[]"  # a file without dim orders: shown as it is


def test_a_program_without_xnnpack_or_flagged_tensors_has_only_the_tensor_defaults() -> None:
    graphs = convert_path(example("mv2_lrn_ethosu85"))
    text = graphs[0].groupNodeAttributes[""]["defaults_not_shown"]
    assert "XNNPACK" not in text and "requires_grad is set" not in text


@pytest.mark.parametrize("name", EXAMPLES)
def test_an_instruction_node_says_its_kind_unless_it_is_a_kernel_call(name: str) -> None:
    """A kernel call is labelled with its operator (its full name the `operator` attribute), a
    delegate call with its backend id: neither kind is an attribute; every other kind (a move, a
    jump, a free) is."""
    pte = example(name)
    theirs: Any = oracle(pte).program  # type: ignore[attr-defined]
    graphs = {g.id: g for g in convert_path(pte)}
    seen: dict[str, int] = {}
    for plan in theirs.execution_plan:
        instructions = [i for chain in plan.chains for i in chain.instructions]
        for node in graphs[plan.name].nodes:
            attrs = {kv.key: kv.value for kv in node.attrs}
            if "instruction" not in attrs:
                continue
            args = instructions[int(attrs["instruction"])].instr_args
            kind = type(args).__name__
            seen[kind] = seen.get(kind, 0) + 1
            if kind == "KernelCall":
                assert "kind" not in attrs, node.id
                op = plan.operators[args.op_index]
                assert attrs["operator"] == op.name + (f".{op.overload}" if op.overload else "")
                # Drawn without ATen's namespace and the out variant's suffix, which every kernel
                # has: `aten::mul.Scalar_out` as `mul.Scalar`, `aten::add.out` as `add`.
                name = op.name[len("aten::") :] if op.name.startswith("aten::") else op.name
                overload = op.overload.removesuffix("out").removesuffix("_")
                assert node.label == (f"{name}.{overload}" if overload else name), node.id
            elif kind == "DelegateCall":
                assert (
                    "backend_id" not in attrs
                    and node.label == plan.delegates[args.delegate_index].id
                )
                assert attrs["kind"] == kind
            else:
                assert attrs["kind"] == kind
    assert seen.get("KernelCall", 0) + seen.get("DelegateCall", 0) > 0


def test_an_xnnpack_node_is_named_by_its_kind_and_not_told_it_again() -> None:
    # In the method graph (a MobileNetV2 is not folded) and in separate graphs (a GPT is).
    for name in ("mv2_xnnpack_int8", "tiny_gpt_xnnpack"):
        graphs = convert_path(example(name))
        ops = [
            (n.label, {kv.key for kv in n.attrs})
            for g in graphs
            for n in g.nodes
            if n.id.startswith("op_") or any(kv.key == "view" for kv in n.attrs)
        ]
        assert len(ops) > 20, name
        assert all("kind" not in keys and "debug_handle" in keys for _, keys in ops), name
