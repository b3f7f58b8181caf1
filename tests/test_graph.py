"""The Model Explorer graphs: structure invariants on every example, and dataflow against torch's
own operator schemas (an independent account of which kernel arguments are outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.dataflow import analyse_dataflow
from pte_adapter.convert import convert_path
from pte_adapter.program import InstructionKind, ValueKind
from pte_adapter.render.model_explorer import graphs_to_json
from tests.conftest import oracle
from tests.test_partitions import _oracle_runs


def _graphs(path: Path) -> list[dict[str, Any]]:
    data = graphs_to_json(convert_path(path))
    # What Model Explorer receives must be plain JSON.
    graphs: list[dict[str, Any]] = json.loads(json.dumps(data))["graphs"]
    return graphs


def test_graph_invariants(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    graphs = _graphs(example_pte)
    ids = [g["id"] for g in graphs]
    assert len(ids) == len(set(ids)), "graph ids must be unique across the response"
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    by_id = {g["id"]: g for g in graphs}
    for g in graphs:
        node_ids = [n["id"] for n in g["nodes"]]
        assert len(node_ids) == len(set(node_ids)), f"duplicate node id in {g['id']}"
        known = set(node_ids)
        for n in g["nodes"]:
            for e in n["incomingEdges"]:
                assert e["sourceNodeId"] in known, f"{g['id']}: edge from missing {e}"
            for sub in n["subgraphIds"]:
                assert sub in by_id, f"{n['id']} links missing subgraph {sub}"
    # One graph per method, one node per instruction (plus Graph Inputs / Graph Outputs).
    for plan in theirs.execution_plan:
        g = by_id[plan.name]
        n_ins = sum(len(c.instructions) for c in plan.chains)
        runs = _oracle_runs(plan)
        # Graph Inputs/Outputs, one node per instruction, one pinned info node per partition.
        assert len(g["nodes"]) == n_ins + 2 + len(runs)
        for k, (backend, _calls) in enumerate(runs):
            info = next(n for n in g["nodes"] if n["id"] == f"p{k}")
            assert info["config"]["pinToGroupTop"] is True
            assert backend in info["namespace"] or info["namespace"].startswith("CPU island")
        labels = {n["id"]: n["label"] for n in g["nodes"]}
        for i, ins in enumerate(x.instr_args for c in plan.chains for x in c.instructions):
            if type(ins).__name__ == "KernelCall":
                op = plan.operators[ins.op_index]
                full = f"{op.name}.{op.overload}" if op.overload else op.name
                assert labels[f"i{i}"] == full
            elif type(ins).__name__ == "DelegateCall":
                assert labels[f"i{i}"] == plan.delegates[ins.delegate_index].id


def test_non_tensor_args_are_attributes_not_nodes(example_pte: Path) -> None:
    program = pte_adapter.load(example_pte)
    for method in program.methods:
        flow = analyse_dataflow(method)
        for ins in method.instructions:
            for edge in flow.edges[ins.index]:
                assert method.values[edge.value].kind is ValueKind.TENSOR


def test_every_delegate_call_splits_all_its_args(example_pte: Path) -> None:
    program = pte_adapter.load(example_pte)
    for method in program.methods:
        flow = analyse_dataflow(method)
        for ins in method.instructions:
            if ins.kind is InstructionKind.DELEGATE:
                io = flow.io[ins.index]
                assert io.inputs + io.outputs == ins.args
                assert io.outputs, "a delegate call writes at least one tensor"
                # Every input is defined before the call: produced, a method input or a constant.
                for edge in flow.edges[ins.index]:
                    assert edge.producer != -3, f"input %{edge.value} of {ins.index} undefined"


# Operators of the committed examples that torch cannot give a schema for, even with ExecuTorch's
# operator libraries loaded. Listed, not skipped silently: a new unknown operator fails the test.
NO_TORCH_SCHEMA: set[str] = set()


def _schema(name: str, overload: str) -> Any:
    import executorch.backends.cortex_m.passes  # registers the cortex_m:: operators
    import executorch.exir.passes
    import executorch.kernels.quantized  # noqa: F401 - quantized_decomposed .out variants
    import torch
    import torch.ao.quantization.fx._decomposed
    ns, _, op = name.partition("::")
    packet = getattr(getattr(torch.ops, ns), op)
    return getattr(packet, overload or "default")._schema


def test_kernel_outputs_match_torch_schemas(example_pte: Path) -> None:
    """Out-variant recognition agrees with the operator schema's write-aliased arguments."""
    program = pte_adapter.load(example_pte)
    checked = 0
    for method in program.methods:
        flow = analyse_dataflow(method)
        for ins in method.instructions:
            if ins.kind is not InstructionKind.KERNEL or ins.op_index is None:
                continue
            op = method.operators[ins.op_index]
            if op.full_name in NO_TORCH_SCHEMA:
                checked += 1
                continue
            schema = _schema(op.name, op.overload)
            n_args = len(schema.arguments)
            written = {
                ins.args[i]
                for i, a in enumerate(schema.arguments)
                if a.alias_info is not None and a.alias_info.is_write and i < len(ins.args)
            }
            returns = ins.args[n_args:]
            expected_outputs = written | set(returns)
            assert set(flow.io[ins.index].outputs) == expected_outputs, (
                f"{op.name}.{op.overload} args {ins.args}")
            checked += 1
    kernels = sum(i.kind is InstructionKind.KERNEL for m in program.methods for i in m.instructions)
    assert checked == kernels


def test_cond_program_shows_control_flow() -> None:
    from tests.conftest import example

    graphs = {g["id"]: g for g in _graphs(example("cond"))}
    program = pte_adapter.load(example("cond"))
    method = program.methods[0]
    g = graphs[method.name]
    nodes = {n["id"]: n for n in g["nodes"]}
    jumps = [i for i in method.instructions if i.kind is InstructionKind.JUMP_FALSE]
    moves = [i for i in method.instructions if i.kind is InstructionKind.MOVE]
    assert jumps and moves
    for j in jumps:
        chain = method.chains[j.chain]
        dest = j.destination or 0
        target = ("outputs" if dest >= chain.num_instructions
                  else f"i{chain.first_instruction + dest}")
        assert any(e["sourceNodeId"] == f"i{j.index}" and e["targetNodeInputId"] == "control"
                   for e in nodes[target]["incomingEdges"])
        attrs = {a["key"]: a["value"] for a in nodes[f"i{j.index}"]["attrs"]}
        assert attrs["condition"].startswith(f"%{j.cond_value}")
    for mv in moves:
        assert nodes[f"i{mv.index}"]["label"] == "MoveCall"


@pytest.mark.parametrize("name", ["free_call"])
def test_free_calls_are_shown(name: str) -> None:
    from tests.conftest import example

    program = pte_adapter.load(example(name))
    frees = [i for m in program.methods for i in m.instructions if i.kind is InstructionKind.FREE]
    assert frees
    graphs = {g["id"]: g for g in _graphs(example(name))}
    for f in frees:
        method = program.methods[0].name
        labels = {n["id"]: n["label"] for n in graphs[method]["nodes"]}
        assert labels[f"i{f.index}"] == "FreeCall"


def test_every_writer_of_a_delegate_output_is_connected(example_pte: Path) -> None:
    """Ethos-U outputs are often written in slices by several NPU operations: each writer of a
    delegate output gets its own edge into the Delegate Outputs node."""
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.render.model_explorer import delegate_graph_id

    program = pte_adapter.load(example_pte)
    graphs = {g["id"]: g for g in _graphs(example_pte)}
    for method in program.methods:
        for part in partition_method(method).delegate_partitions:
            assert part.delegate_index is not None
            for view in method.delegates[part.delegate_index].decoded.graphs:
                g = graphs[delegate_graph_id(method.name, part.name, view.name)]
                out_node = next(n for n in g["nodes"] if n["id"] == "delegate_outputs")
                expected = sum(1 for op in view.nodes for t in op.outputs if t in view.outputs)
                expected += sum(1 for t in view.inputs if t in view.outputs)
                assert len(out_node["incomingEdges"]) == expected, g["id"]
