"""Source mapping and rejection reasons, checked against ExecuTorch's own devtools.

Oracle 1: `executorch.devtools.etrecord.parse_etrecord` (torch's deserialiser of the same zip)
gives, per method, instruction id -> debug handles, the delegate map, and the edge graph whose
nodes carry `debug_handle`, `nn_module_stack` and `stack_trace`. Ours (torch-free) must give the
same instruction -> handles -> modules mapping for every example that has an ETRecord.

Oracle 2: the partitioners' own reasons (Arm's `WhyNoPartitionReporter`, XNNPACK's
`WhyNoPartition`), captured while the example was built (`<stem>.rejections.json`, written by
examples/build_examples.py). Every CPU compute kernel of an Arm-delegated example must have been
rejected by the partitioner, and the kind of reason we infer from the `.pte` must be the kind the
partitioner gave.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import is_glue, partition_method
from pte_adapter.analysis.why import why_not_delegated
from pte_adapter.program.model import InstructionKind
from pte_adapter.render.source_facts import layer_namespace
from tests.support.examples import EXAMPLES

ETRECORDS = sorted(EXAMPLES.glob("*.etrecord"))
REJECTIONS = sorted(EXAMPLES.glob("*.rejections.json"))


def test_examples_have_etrecords() -> None:
    names = {p.stem for p in ETRECORDS}
    assert {"mv2_lrn_ethosu85", "mv2_lrn2_ethosu85", "xnnpack_lrn", "undelegated"} <= names
    assert {p.name.split(".")[0] for p in REJECTIONS} >= {
        "mv2_lrn_ethosu85",
        "mv2_lrn2_ethosu85",
        "xnnpack_lrn",
    }


def _oracle(path: Path) -> Any:
    from executorch.devtools.etrecord import parse_etrecord

    return parse_etrecord(str(path))


def _edge_programs(record: Any) -> dict[str, Any]:
    edge = record.edge_dialect_program
    return edge if isinstance(edge, dict) else {"forward": edge}


def _serialised_nodes(program: Any) -> list[Any]:
    """The oracle graph's nodes that the JSON holds as nodes: the deserialiser adds placeholders
    and the output from the signature, and a `getitem` per output of a multi-output node (with
    that node's metadata), none of which are nodes in the file."""
    return [
        n
        for n in program.graph_module.graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem
    ]


@pytest.mark.parametrize("etrecord", ETRECORDS, ids=[p.stem for p in ETRECORDS])
def test_mapping_matches_parse_etrecord(etrecord: Path) -> None:
    record = _oracle(etrecord)
    program = pte_adapter.load(etrecord.with_suffix(".pte"))
    assert program.problems == []
    source = pte_adapter.analyse(program).source
    assert source is not None and source.etrecord == etrecord.name
    edge = _edge_programs(record)
    checked = 0
    for method in program.methods:
        handle_map = record._debug_handle_map[method.name]
        nodes_by_handle: dict[int, list[Any]] = {}
        for node in _serialised_nodes(edge[method.name]):
            h = node.meta.get("debug_handle")
            if h is not None:
                nodes_by_handle.setdefault(int(h), []).append(node)
        ours = source.methods[method.name].instructions
        for ins in method.instructions:
            raw = handle_map.get(str(ins.chain_position))
            handles = [] if raw is None else raw if isinstance(raw, list) else [raw]
            # A handle listed twice is one handle (the Inspector walks it twice and finds the same
            # nodes; the adapter joins it once, so a repeated handle cannot make the join grow).
            handles = list(dict.fromkeys(handles))
            nodes = [n for h in handles for n in nodes_by_handle.get(h, [])]
            if not nodes:
                assert ins.index not in ours
                continue
            mine = ours[ins.index]
            assert mine.handles == handles
            assert mine.nodes == [n.name for n in nodes]
            # The innermost module of each node, in graph order, as torch's deserialiser reads it
            # (nodes that only carry torch.export's internal wrapper are not layers).
            expected: list[tuple[str, str]] = []
            stacks: list[list[tuple[str, str]]] = []
            for n in nodes:
                stack = [tuple(v) for v in (n.meta.get("nn_module_stack") or {}).values()]
                if not stack or (len(stack) == 1 and "<locals>" in stack[0][1]):
                    continue
                if stack[-1] not in expected:
                    expected.append(stack[-1])
                    stacks.append(stack)
            assert [(m.path, m.cls) for m in mine.modules] == expected, ins.index
            # The nested layer the renderer groups it in: the module stack its nodes share.
            shared = stacks[0] if stacks else []
            for stack in stacks[1:]:
                k = 0
                while k < min(len(shared), len(stack)) and shared[k] == stack[k]:
                    k += 1
                shared = shared[:k]
            assert layer_namespace(mine) == [p for p, _ in shared if p], ins.index
            checked += 1
        delegate_ids = {
            int(k): v["name"] for k, v in (record._delegate_map or {}).get(method.name, {}).items()
        }
        ours_delegates = {
            ins.chain_position: method.delegates[ins.delegate_index or 0].id
            for ins in method.instructions
            if ins.kind is InstructionKind.DELEGATE
        }
        assert ours_delegates == delegate_ids
    assert checked > 0


@pytest.mark.parametrize("etrecord", ETRECORDS, ids=[p.stem for p in ETRECORDS])
def test_stack_traces_match_parse_etrecord(etrecord: Path) -> None:
    from pte_adapter.container.etrecord import read_etrecord

    edge = _edge_programs(_oracle(etrecord))
    ours = read_etrecord(etrecord)
    for name, method in ours.methods.items():
        theirs = {n.name: n for n in _serialised_nodes(edge[name])}
        assert [n.name for n in method.nodes] == list(theirs)
        for node in method.nodes:
            t = theirs[node.name]
            assert node.stack_trace == (t.meta.get("stack_trace") or "")
            assert node.debug_handle == t.meta.get("debug_handle")
            assert node.output_shapes == _static_shapes(t.meta.get("val")), node.name


def _static_shapes(val: Any) -> list[tuple[int, ...]]:
    """The shape of each tensor a node outputs, as torch's deserialiser rebuilds it (a tuple or
    list of tensors for a multi-output node), where every size is an integer."""
    vals = val if isinstance(val, (list, tuple)) else [val]
    shapes = [getattr(v, "shape", None) for v in vals]
    return [
        tuple(int(d) for d in s)
        for s in shapes
        if s is not None and all(isinstance(d, int) for d in s)
    ]


def _rejections(pte: Path) -> list[dict[str, Any]]:
    doc = json.loads(pte.with_suffix(".rejections.json").read_text())
    assert doc["executorch"] == "1.5.1"
    rejections: list[dict[str, Any]] = doc["rejections"]
    return rejections


def _op_base(name: str) -> str:
    """`aten::full.out`, `aten.full.default` -> `aten.full`."""
    return ".".join(name.replace("::", ".").split(".")[:2])


# The partitioner's reason texts (ExecuTorch 1.5.1) -> our reason kinds.
PARTITIONER_KIND = {
    "Not included in BaseTOSASupportList or a registered tosa_support_check": "not_listed",
    "Op is not supported on U55.": "u55",
    # TOSASupportedOperators, for a node outside the quantized graph on an INT-only spec
    # (examples/whatif_float_block_ethosu85: a block the quantizer was told to leave in float).
    "Node was not marked as quantized in the Arm backend.": "not_quantized",
}


def _rules_kind(said: str) -> str:
    """The kind our rules give where the partitioner said `said`. A node an `additional_checks`
    entry refused ("Rejected by <its class>") is one the rules support: what kept it off the NPU
    is not in the .pte."""
    if said.startswith("Rejected by "):
        return "supported"
    return PARTITIONER_KIND.get(said, "check")


@pytest.mark.parametrize("rejections", REJECTIONS, ids=[p.name.split(".")[0] for p in REJECTIONS])
def test_reasons_match_the_partitioner(rejections: Path) -> None:
    """Arm: every CPU compute kernel was rejected, for the kind of reason we infer (for a kernel
    Arm's Cortex-M passes made of a layer, of the layer's operator). XNNPACK only explains configs
    whose constraints failed (`check`); an operator without a config gets no reason from it, which
    is our `not_listed`. The rules alone: the partitioner's report is not read here."""
    pte = EXAMPLES / (rejections.name.split(".")[0] + ".pte")
    program = pte_adapter.load(pte, sidecars=False, etrecord=pte.with_suffix(".etrecord"))
    source = pte_adapter.analyse(program).source
    assert source is not None
    captured = {r["node"]: r for r in _rejections(pte)}
    compared = 0
    for method in program.methods:
        parts = partition_method(method)
        reasons = why_not_delegated(method, parts, source.methods[method.name])
        for island in parts.cpu_islands:
            for i in island.instructions:
                ins = method.instructions[i]
                if ins.kind is not InstructionKind.KERNEL or ins.op_index is None:
                    continue
                op = method.operators[ins.op_index].full_name
                if is_glue(op):
                    continue
                # The instruction's edge nodes (ETRecord) -> what the partitioner said of them.
                # Several nodes can share a debug handle (a decomposed scaled_dot_product_attention
                # in tiny_gpt_xnnpack): only those of this instruction's operator count.
                nodes = source.methods[method.name].instructions[i].nodes
                mine = [r for r in reasons if r.instruction == i]
                assert len(mine) == 1, mine
                layer = mine[0].layer_operator or _op_base(op)
                said = [
                    captured[n]["reason"]
                    for n in nodes
                    if n in captured and _op_base(captured[n]["target"]) == layer
                ]
                if mine[0].backend == "XNNPACK":
                    expected = "check" if said else "not_listed"
                else:
                    assert said, f"{op} (instruction {i}) ran on the CPU but was never rejected"
                    expected = _rules_kind(said[0])
                assert mine[0].kind == expected, (mine[0].text, said)
                assert mine[0].by == "rules"
                assert "ExecuTorch 1.5.1 rules" in mine[0].text
                compared += 1
    # A program the partitioner rejected nothing of (the numeric-gap examples whole on XNNPACK)
    # has no CPU compute kernel to explain; any other has some.
    assert compared > 0 or (not captured and not _cpu_compute(program))


def _cpu_compute(program: Any) -> list[str]:
    return [
        op
        for method in program.methods
        for island in partition_method(method).cpu_islands
        for op in island.compute_ops
    ]
