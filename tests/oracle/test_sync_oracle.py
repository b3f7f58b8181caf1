"""The sync mapping's groups are ExecuTorch's Inspector's pairing of runtime and AOT outputs.

For every example with an ETRecord, and every graph the mapping can point into (the Inspector's
own choice, the edge program, the exported program and the graph-map entry where recorded), the
oracle is the Inspector itself (`tests/support/inspector_pairing.py`): its merged runtime debug
handles, the instructions whose events it merged into each, and the reference graph's operator
nodes it pairs with each (`find_op_names`). Each mapping entry must be one of those groups, node
for node, and every group with nodes must be an entry. The programs that run here (portable,
XNNPACK fp32 and INT8) are run by ExecuTorch's Python runtime with an ETDump and a debug buffer,
and the rows of `calculate_numeric_gap` itself must each be an entry; the others (Ethos-U, the
Cortex-M flow) get an ETDump written with ExecuTorch's schema, one event per instruction.

The left side is checked against the graph the adapter draws: every instruction of the group by
its drawn node id, and nothing else but decoded operations of the group's delegate calls that
record one of the group's debug handles.
"""

from __future__ import annotations

from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.lowering_map import AUTO, TO_EDGE, TO_EXPORTED, ancestor_handles
from pte_adapter.api import open_analysis
from pte_adapter.api.etrecord_view import sync_mapping
from pte_adapter.container.etrecord_graphs import read_etrecord_graphs
from pte_adapter.program.model import InstructionKind
from pte_adapter.render.plan.program import program_plan
from tests.support.examples import EXAMPLES, example
from tests.support.inspector_pairing import Pairing, pairings

ETRECORDS = [*EXAMPLES.glob("*.etrecord"), *EXAMPLES.glob("*_etrecord.bin")]

# Run here by ExecuTorch's Python runtime (portable kernels, quantized kernels, XNNPACK).
RUNNABLE = [
    "undelegated",
    "tiny_gpt_xnnpack",
    "sync_xnnpack",
    "sync_xnnpack_int8",
    "numerics_portable",
    "numerics_portable_int8",
    "numerics_xnnpack_fp32",
    "numerics_xnnpack_int8",
    "numerics_island_fp32",
    "numerics_island_int8",
    "lrn_pow_xnnpack",
]
# Ethos-U and Cortex-M programs (and XNNPACK's LRN example, whose avg_pool3d kernel the pip
# runtime lacks): the Inspector pairs an ETDump written with ExecuTorch's schema.
NOT_RUNNABLE = [
    "xnnpack_lrn",
    "mv2_lrn_ethosu85",
    "lrn_cortex_m_qdq_ethosu85",
    "classifier_cortex_m_ethosu85",
    "whatif_lrn_cpu_ethosu85",
    "sync_tosa_debug",
    "mv2_lrn2_ethosu85",
    "whatif_float_block_ethosu85",
    "whatif_upsample_ethosu55",
]
# Every example ETRecord is in one of the lists (the bundle's is its `.bpte`'s: `sync` reads the
# program inside it, the Inspector a `.pte`).
NOT_CHECKED = {"bundle_ethosu55"}
# Our `--to` -> the Inspector's `reference_graph`.
INSPECTOR_NAME = {
    AUTO: None,
    TO_EDGE: "edge_dialect_exported_program",
    TO_EXPORTED: "exported_program",
}


def _targets(stem: str) -> list[str]:
    graphs = read_etrecord_graphs(EXAMPLES / f"{stem}.etrecord")
    out = [AUTO, TO_EDGE]
    if graphs.exported is not None:
        out.append(TO_EXPORTED)
    out += [g.part for g in graphs.graphs if g.kind == "graph_map"]
    return out


def _inspector_name(to: str) -> str | None:
    return INSPECTOR_NAME.get(to, to)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache: dict[str, dict[str | None, Pairing]] = {}

    def get(stem: str) -> dict[str | None, Pairing]:
        if stem not in cache:
            pte = example(stem)
            refs = [_inspector_name(t) for t in _targets(stem)]
            cache[stem] = pairings(
                pte_adapter.load(pte),
                pte,
                EXAMPLES / f"{stem}.etrecord",
                tmp_path_factory.mktemp(stem),
                refs,
                run=stem in RUNNABLE,
            )
        return cache[stem]

    return get


def _entries(
    document: dict[str, Any],
) -> list[tuple[frozenset[int], list[int], list[str], list[str]]]:
    meta = document["pte_adapter"]["entries"]
    return [
        (frozenset(m["debug_handles"]), m["instructions"], e["leftNodeIds"], e["rightNodeIds"])
        for e, m in zip(document["mappingEntries"], meta, strict=True)
    ]


def test_every_example_etrecord_is_checked() -> None:
    stems = {p.name.removesuffix(".etrecord").removesuffix("_etrecord.bin") for p in ETRECORDS}
    assert stems == {*RUNNABLE, *NOT_RUNNABLE, *NOT_CHECKED}


@pytest.mark.parametrize("stem", RUNNABLE + NOT_RUNNABLE)
def test_entries_are_the_inspectors_groups(stem: str, oracle: Any) -> None:
    pairs = oracle(stem)
    for to in _targets(stem):
        pairing = pairs[_inspector_name(to)]
        mapping = sync_mapping(example(stem), to=to)
        right = mapping.right_graph
        assert right.split("/")[0] == pairing.reference.split("/")[0], (stem, to)
        theirs = {
            g.handles: (g.instructions, sorted(set(g.aot_ops))) for g in pairing.groups if g.aot_ops
        }
        ours = {h: (ins, sorted(nodes)) for h, ins, _, nodes in _entries(mapping.document)}
        assert ours == theirs, (stem, to)
        assert ours, (stem, to)


@pytest.mark.parametrize("stem", RUNNABLE)
def test_numeric_gap_rows_are_entries(stem: str, oracle: Any) -> None:
    """Each row `calculate_numeric_gap` returns pairs one entry's nodes with the events of that
    entry's instructions (kernels `native_call_<operator>`, delegate calls `DELEGATE_CALL`)."""
    program = pte_adapter.load(example(stem))
    method = program.methods[0]

    def event_name(index: int) -> str:
        ins = method.instructions[index]
        if ins.kind is InstructionKind.DELEGATE:
            return "DELEGATE_CALL"
        op = method.operator_of(ins.op_index)
        return f"native_call_{op.full_name.split('::')[-1]}" if op else "?"

    for to in _targets(stem):
        pairing = oracle(stem)[_inspector_name(to)]
        assert pairing.rows, (stem, to)
        entries = _entries(sync_mapping(example(stem), to=to).document)
        for aot_ops, runtime_ops in pairing.rows:
            hits = [e for e in entries if sorted(e[3]) == sorted(set(aot_ops))]
            assert len(hits) == 1, (stem, to, aot_ops)
            names = {event_name(i) for i in hits[0][1]}
            assert set(runtime_ops) <= names, (stem, to, runtime_ops, names)


@pytest.mark.parametrize(
    "stem", ["tiny_gpt_xnnpack", "sync_xnnpack", "mv2_lrn_ethosu85", "sync_tosa_debug"]
)
def test_left_ids_are_the_drawn_nodes(stem: str) -> None:
    """Left: each instruction of the entry by its drawn id, and decoded operations of its delegate
    calls that record one of its debug handles (XNNPACK) or an exported node that has one (TOSA
    debug info), each id in one entry only."""
    result = open_analysis(example(stem), profile=False)
    placement = program_plan(result).methods["forward"]
    method = result.methods[0].method
    by_name = ancestor_handles(read_etrecord_graphs(EXAMPLES / f"{stem}.etrecord"))
    mapping = sync_mapping(example(stem))
    drawn: dict[str, tuple[int, set[int]]] = {}  # decoded op id -> (its call, what it links by)
    for (index, view_name), where in placement.views.items():
        if where.graph_id != placement.graph_id:
            continue  # drawn in a graph of its own (a method folded into blocks): not the pane's
        d = method.instructions[index].delegate_index
        decoded = method.delegates[d].decoded if d is not None else None
        view = next((v for v in decoded.graphs if v.name == view_name), None) if decoded else None
        for pos, node_id in enumerate(where.node_ids if view else []):
            assert view is not None
            op = view.nodes[pos]
            links = {*op.debug_handles, *(by_name[n] for n in op.source_nodes if n in by_name)}
            drawn[node_id] = (index, links)
    seen: set[str] = set()
    linked = 0
    for handles, instructions, left, _ in _entries(mapping.document):
        ids = [placement.instructions[i] for i in instructions]
        assert set(ids) <= set(left), (stem, instructions)
        for node_id in set(left) - set(ids):
            call, links = drawn[node_id]
            assert call in instructions and links & handles, (stem, node_id)
            linked += 1
        # Every drawn operation of the entry's calls that links to the entry is in it.
        wanted = {
            i for i, (call, links) in drawn.items() if call in instructions and links & handles
        }
        assert wanted <= set(left), (stem, sorted(wanted - set(left))[:5])
        assert not seen & set(left), "a node id in two entries"
        seen |= set(left)
    if stem in ("sync_xnnpack", "sync_tosa_debug"):
        assert linked > 3, stem


def test_xnnpack_operations_are_linked() -> None:
    """XNNPACK records each XNode's debug handle: its operations join their delegate call."""
    mapping = sync_mapping(example("sync_xnnpack"))
    left = [i for e in mapping.document["mappingEntries"] for i in e["leftNodeIds"]]
    assert any("." in i and i.startswith("XnnpackBackend") for i in left)


def test_tosa_debug_info_names_the_etrecords_nodes() -> None:
    """Arm's TOSA debug info and the ETRecord record the same provenance: the exported-program
    node each TOSA operator's `node_trace` ends at is, for all but the operators Arm's own passes
    made (`tosa_table_*`: no older node), a node the ETRecord's edge program comes from."""
    program = pte_adapter.load(example("sync_tosa_debug"))
    (call,) = program.methods[0].delegates
    assert call.decoded is not None
    roots = {n for v in call.decoded.graphs for op in v.nodes for n in op.source_nodes}
    by_name = ancestor_handles(read_etrecord_graphs(EXAMPLES / "sync_tosa_debug.etrecord"))
    unmatched = roots - set(by_name)
    assert len(roots) > 10 and all(n.startswith("tosa_") for n in unmatched), unmatched


def test_exported_program_is_the_default_where_recorded() -> None:
    mapping = sync_mapping(example("sync_xnnpack"))
    assert mapping.right_graph == "exported_program" and mapping.note == ""
    names = {
        n.name for n in read_etrecord_graphs(EXAMPLES / "sync_xnnpack.etrecord").graphs[0].nodes
    }
    rights = {n for e in mapping.document["mappingEntries"] for n in e["rightNodeIds"]}
    assert rights <= names and any(n.startswith("conv2d") for n in rights)
