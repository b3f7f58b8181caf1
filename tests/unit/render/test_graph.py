"""The Model Explorer graphs: structure invariants on every example, and dataflow against torch's
own operator schemas (an independent account of which kernel arguments are outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.dataflow import analyse_dataflow
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.explorer.convert import convert_path
from pte_adapter.program.model import InstructionKind, ValueKind
from pte_adapter.render.model_explorer import graphs_to_json
from pte_adapter.render.plan.boundaries import NEAR_PARTITIONS, SMALL_METHOD
from tests.support.examples import oracle
from tests.support.groups import group_names
from tests.support.oracles import instruction_runs


def _graphs(path: Path) -> list[dict[str, Any]]:
    data = graphs_to_json(convert_path(path))
    # What Model Explorer receives must be plain JSON.
    graphs: list[dict[str, Any]] = json.loads(json.dumps(data))["graphs"]
    return graphs


def _node_ids(path: Path) -> dict[str, list[str]]:
    """Per method, the node id of each instruction (its role id)."""
    from pte_adapter.analysis.partitions import partition_method

    return {
        m.name: instruction_role_ids(m, partition_method(m)) for m in pte_adapter.load(path).methods
    }


def test_graph_invariants(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    graphs = _graphs(example_pte)
    node_ids_of = _node_ids(example_pte)
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
    # One graph per method; one node per instruction (plus Graph Inputs / Graph Outputs), a kernel
    # call's `operator` the full name the deserializer reads (its label says it short:
    # test_defaults.py), a delegate call labelled with the delegate id it reads.
    for plan in theirs.execution_plan:
        g = by_id[plan.name]
        labels = {n["id"]: n["label"] for n in g["nodes"]}
        operators = {
            n["id"]: a["value"] for n in g["nodes"] for a in n["attrs"] if a["key"] == "operator"
        }
        calls = [x.instr_args for c in plan.chains for x in c.instructions]
        assert {"inputs", "outputs"} <= set(labels)
        ids = node_ids_of[plan.name]
        assert len(ids) == len(calls) == len(set(ids))
        assert set(ids) <= set(labels)
        for i, ins in enumerate(calls):
            if type(ins).__name__ == "KernelCall":
                op = plan.operators[ins.op_index]
                full = f"{op.name}.{op.overload}" if op.overload else op.name
                assert operators[ids[i]] == full
            elif type(ins).__name__ == "DelegateCall":
                assert labels[ids[i]] == plan.delegates[ins.delegate_index].id
        # Partition groups: one per run of the oracle's instruction stream (inside its block in a
        # method folded into blocks).
        groups = set(group_names(example_pte)[plan.name])
        namespaces = {_partition_of(n["namespace"], groups) for n in g["nodes"]} - {None}
        assert len(namespaces) == len(instruction_runs(plan))
        assert {_partition_of(k, groups) for k in g["groupNodeAttributes"]} >= namespaces


def _partition_of(namespace: str, groups: set[str]) -> str | None:
    """The partition a namespace lies in: its first component, or its second below a block."""
    for part in namespace.split("/")[:2]:
        if part in groups:
            return part
    return None


def test_a_method_graph_opens_first(example_pte: Path) -> None:
    """Model Explorer opens the graph with the most nodes (ties: the first listed). Every delegate
    view is drawn inside its method graph, so that is always a method graph."""
    program = pte_adapter.load(example_pte)
    graphs = _graphs(example_pte)
    first = max(graphs, key=lambda g: len(g["nodes"]))  # max() keeps the first of equals
    assert first["id"] in {m.name for m in program.methods}, [
        (g["id"], len(g["nodes"])) for g in graphs
    ]
    # ... and the method with the most work: not one of an LLM export's constant methods.
    busiest = max(program.methods, key=lambda m: len(m.instructions))
    assert first["id"] == busiest.name


def test_decoded_delegates_are_drawn_inside_their_partition(example_pte: Path) -> None:
    """Each decoded view's operations are nodes in the partition's group; the first view whose
    inputs and outputs are the call's is connected to the neighbouring partitions."""
    from pte_adapter.analysis.partitions import partition_method

    program = pte_adapter.load(example_pte)
    graphs = {g["id"]: g for g in _graphs(example_pte)}
    analysis = pte_adapter.analyse(program)
    groups = group_names(example_pte)
    for method in program.methods:
        nodes = {n["id"]: n for n in graphs[method.name]["nodes"]}
        ids = instruction_role_ids(method, partition_method(method))
        folded = bool(analysis.methods[program.methods.index(method)].blocks)
        for part in partition_method(method).delegate_partitions:
            assert part.delegate_index is not None
            ins = ids[part.instructions[0]]
            views = method.delegates[part.delegate_index].decoded.graphs
            referenced = {s for v in views for op in v.nodes for s in op.subgraphs}
            drawn = [v for v in views if v.name not in referenced]
            inner = {k: n for k, n in nodes.items() if k.startswith(f"{ins}.")}
            if folded:
                # Folded into blocks: each view is a graph of its own
                # (tests/unit/analysis/test_blocks.py).
                assert not inner, part.name
                continue
            assert len(inner) == sum(len(v.nodes) for v in drawn), part.name
            for n in inner.values():
                assert n["namespace"].split("/")[0] == groups[method.name][part.index]
            if not drawn or not drawn[0].nodes:
                continue
            call = nodes[ins]
            if call.get("config") and call["config"].get("pinToGroupTop"):
                # Inlined: the call heads the group with no edges of its own, and the data reaches
                # the operations that read the payload's inputs.
                assert not call["incomingEdges"]
                first = drawn[0]
                readers = {
                    f"{ins}.{k}"
                    for k, op in enumerate(first.nodes)
                    if set(op.inputs) & set(first.inputs)
                }
                fed = {
                    k
                    for k in readers
                    if any(
                        not e["sourceNodeId"].startswith(f"{ins}.")
                        for e in nodes[k]["incomingEdges"]
                    )
                }
                assert readers and fed, part.name


def test_boundary_nodes_show_exactly_the_crossings(example_pte: Path) -> None:
    """Each tensor the numbers count as crossing a boundary (or handed from one delegate to the
    next) is on the node between its two partitions, and nothing else is."""
    from pte_adapter.analysis.partitions import partition_method

    program = pte_adapter.load(example_pte)
    graphs = {g["id"]: g for g in _graphs(example_pte)}
    for method in program.methods:
        parts = partition_method(method)
        expected = {(c.source, c.target, c.value) for c in parts.crossings}
        shown = set()
        for n in graphs[method.name]["nodes"]:
            if not n["id"].startswith("b."):
                continue
            attrs = {a["key"]: a["value"] for a in n["attrs"]}
            # Input k and output k are tensor k; the outputs carry its metadata (an input shows
            # its source's, render/plan/inputs.py).
            values = set()
            for item in n["outputsMetadata"]:
                meta = {a["key"]: a["value"] for a in item["attrs"]}
                values.add(int(meta["value_index"]))
            # Each line: "%<value> <source partition> to <target partition>".
            listed = set()
            for line in attrs["crossings"].splitlines():
                v, _, rest = line.partition(" ")
                source, target = rest.split(" to ")
                listed.add((source, target, int(v[1:])))
            assert {v for _, _, v in listed} == values, n["id"]
            if parts.partitions and len(parts.partitions) <= SMALL_METHOD:
                # Not folded into blocks: one node per pair of partitions, named in its attrs.
                assert {(a, z) for a, z, _ in listed} == {tuple(attrs["boundary"].split(" to "))}
            shown |= listed
        assert shown == expected


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
                f"{op.name}.{op.overload} args {ins.args}"
            )
            checked += 1
    kernels = sum(i.kind is InstructionKind.KERNEL for m in program.methods for i in m.instructions)
    assert checked == kernels


def test_cond_program_shows_control_flow() -> None:
    from tests.support.examples import example

    graphs = {g["id"]: g for g in _graphs(example("cond"))}
    program = pte_adapter.load(example("cond"))
    method = program.methods[0]
    g = graphs[method.name]
    nodes = {n["id"]: n for n in g["nodes"]}
    ids = _node_ids(example("cond"))[method.name]
    jumps = [i for i in method.instructions if i.kind is InstructionKind.JUMP_FALSE]
    moves = [i for i in method.instructions if i.kind is InstructionKind.MOVE]
    assert jumps and moves
    for j in jumps:
        chain = method.chains[j.chain]
        dest = j.destination or 0
        target = (
            "outputs" if dest >= chain.num_instructions else ids[chain.first_instruction + dest]
        )
        assert any(
            e["sourceNodeId"] == ids[j.index] and e["targetNodeInputId"] == "control"
            for e in nodes[target]["incomingEdges"]
        )
        attrs = {a["key"]: a["value"] for a in nodes[ids[j.index]]["attrs"]}
        assert attrs["condition"].startswith(f"%{j.cond_value}")
    for mv in moves:
        assert nodes[ids[mv.index]]["label"] == "MoveCall"


@pytest.mark.parametrize("name", ["free_call"])
def test_free_calls_are_shown(name: str) -> None:
    from tests.support.examples import example

    program = pte_adapter.load(example(name))
    frees = [i for m in program.methods for i in m.instructions if i.kind is InstructionKind.FREE]
    assert frees
    graphs = {g["id"]: g for g in _graphs(example(name))}
    for f in frees:
        method = program.methods[0].name
        labels = {n["id"]: n["label"] for n in graphs[method]["nodes"]}
        assert labels[_node_ids(example(name))[method][f.index]] == "FreeCall"


def test_every_writer_of_a_delegate_output_is_connected(example_pte: Path) -> None:
    """Ethos-U outputs are often written in slices by several NPU operations: each writer of a
    delegate output gets its own edge to where the output goes next."""
    from pte_adapter.analysis.partitions import partition_method

    program = pte_adapter.load(example_pte)
    graphs = {g["id"]: g for g in _graphs(example_pte)}
    for method in program.methods:
        nodes = graphs[method.name]["nodes"]
        sources = {e["sourceNodeId"] for n in nodes for e in n["incomingEdges"]}
        parts = partition_method(method)
        ids = instruction_role_ids(method, parts)
        for part in parts.delegate_partitions:
            assert part.delegate_index is not None
            index = part.instructions[0]
            ins = ids[index]
            call = next(n for n in nodes if n["id"] == ins)
            if not (call.get("config") or {}).get("pinToGroupTop"):
                continue  # not inlined: the call node itself carries the edges
            view = method.delegates[part.delegate_index].decoded.graphs[0]
            writers = {
                f"{ins}.{k}"
                for k, op in enumerate(view.nodes)
                if set(op.outputs) & set(view.outputs)
            }
            assert writers, part.name
            for w in writers - sources:
                # Only a writer whose tensor goes only to partitions more than NEAR_PARTITIONS
                # later has no edge: it is drawn beside its reader (xnnpack_lrn: partition 1
                # hands a tensor to partition 3, four partitions on).
                op = view.nodes[int(w.rsplit(".", 1)[1])]
                for j, tid in enumerate(view.outputs):
                    if tid not in op.outputs:
                        continue
                    value = parts.dataflow.io[index].output_tensors[j]
                    # Its readers' partitions; the method's caller comes after the last one.
                    readers = [
                        parts.partition_of[e.consumer]
                        for edges in parts.dataflow.edges
                        for e in edges
                        if e.producer == index and e.value == value
                    ] + [
                        len(parts.partitions)
                        for e in parts.dataflow.output_edges
                        if e.producer == index and e.value == value
                    ]
                    assert readers, (part.name, w)
                    for r in readers:
                        gap = r - part.index
                        assert gap > NEAR_PARTITIONS, (part.name, w, r)
                        assert len(parts.partitions) > SMALL_METHOD, (part.name, w, r)
