"""Inputs drawn as Model Explorer shows them (render/plan/inputs.py): on every example, what its
panel lists for each input is unchanged by leaving out what the source's output already says, and
every input it lists nowhere (no edge) is in the node's attributes instead.

Model Explorer's rule, from its web app (`genInputMetadataList`): a selected node's inputs are
listed one per incoming edge; each shows the input's own metadata, and under it every key of the
source output's metadata that the input does not set (except `__tensor_tag`), sorted by key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.render.plan import program as plan_program
from pte_adapter.render.plan.graph import Edge, Graph, Node, Port
from pte_adapter.render.plan.inputs import input_attribute_key, port_text
from pte_adapter.render.plan.instructions import OUTPUTS_ID
from tests.support.examples import EXAMPLE_PTES, example


def _listed(graph: Graph) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """What Model Explorer's panel lists for each (node, incoming edge)."""
    outputs = {(n.id, p.id): p.attrs for n in graph.nodes for p in n.outputs}
    out: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for node in graph.nodes:
        own = {p.id: p.attrs for p in node.inputs}
        for i, e in enumerate(node.edges):
            merged = dict(own.get(e.target_input, {}))
            for k, v in outputs.get((e.source, e.source_output), {}).items():
                if k not in merged and k != "__tensor_tag":
                    merged[k] = v
            out[(node.id, i)] = sorted(merged.items())
    return out


def _edgeless(node: Node) -> list[Port]:
    with_edge = {e.target_input for e in node.edges}
    return [p for p in node.inputs if p.id not in with_edge]


def _plans(pte: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Graph], list[Graph]]:
    """The plan as drawn, and the same plan with every input's full metadata."""
    result = pte_adapter.analyse(pte_adapter.load(pte))
    shown = plan_program.program_plan(result).graphs
    monkeypatch.setattr(plan_program, "show_inputs", lambda graph, keep_edgeless=None: None)
    full = plan_program.program_plan(result).graphs
    return shown, full


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_model_explorer_lists_the_same_inputs(pte: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown, full = _plans(pte, monkeypatch)
    assert [g.id for g in shown] == [g.id for g in full]
    left_out = 0
    for after, before in zip(shown, full, strict=True):
        assert [n.id for n in after.nodes] == [n.id for n in before.nodes]
        assert _listed(after) == _listed(before), after.id
        for a, b in zip(after.nodes, before.nodes, strict=True):
            left_out += sum(len(p.attrs) for p in b.inputs) - sum(len(p.attrs) for p in a.inputs)
            if a.id == OUTPUTS_ID:
                # Constant outputs keep their ports (their values are attributes of their own).
                assert _edgeless(a) == _edgeless(b)
                continue
            assert not _edgeless(a), (after.id, a.id)
            for port in _edgeless(b):
                if not port.attrs or any(port.attrs == o.attrs for o in b.outputs):
                    continue  # nothing to show, or the node's own output shows it
                key = input_attribute_key(b, port)
                assert a.attrs.get(key) == port_text(port), (after.id, a.id, key)
            # Nothing else of the node changed.
            extra = {k for k in a.attrs if k not in b.attrs}
            assert {k: a.attrs[k] for k in b.attrs} == b.attrs
            assert all(k.startswith("input") for k in extra), extra
    # Not vacuous: every example draws inputs whose metadata its sources already show.
    assert left_out > 0


def test_a_constant_weight_is_an_attribute_of_its_reader() -> None:
    """The portable-kernel layer norm of the toy GPT reads its weight and bias from the constant
    segment: no node writes them, so no edge brings them, and its attributes show both."""
    program = pte_adapter.load(example("tiny_gpt_xnnpack"))
    graph = plan_program.program_plan(pte_adapter.analyse(program)).graphs[0]
    norms = [n for n in graph.nodes if n.attrs.get("operator") == "aten::native_layer_norm.out"]
    assert norms
    method = program.methods[0]
    for node in norms:
        ins = method.instructions[int(str(node.attrs["instruction"]))]
        weight, bias = ins.args[2], ins.args[3]
        for key, value in (("input1", weight), ("input2", bias)):
            text = str(node.attrs[key])
            tensor = method.tensor(value)
            assert tensor is not None and tensor.constant is not None
            assert f"value_index: {value}" in text.splitlines()
            assert f"constant: constant_segment[{tensor.constant.buffer_index}]" in text
            assert f"nbytes: {tensor.nbytes}" in text


def test_the_rule_sees_a_dropped_key_that_differs() -> None:
    """The comparison above fails when an input loses a key its source shows otherwise."""
    graph = Graph("g")
    graph.nodes = [
        Node("a", "a", outputs=[Port("0", {"shape": "[1, 2]"})]),
        Node("b", "b", inputs=[Port("0", {"shape": "[2]"})], edges=[Edge("a", "0", "0")]),
    ]
    before = _listed(graph)
    graph.nodes[1].inputs = []
    assert _listed(graph) != before
