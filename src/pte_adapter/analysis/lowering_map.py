"""Which nodes of the ETRecord's graphs each runtime step of the program came from: the pairing of
ExecuTorch's Inspector, torch-free, for the sync mapping (`pte-adapter sync`) and the ETRecord's
graphs in Model Explorer.

The Inspector pairs runtime outputs with the outputs of a reference graph by debug handle
(`Inspector.calculate_numeric_gap`):

- a **runtime step** is an instruction the ETRecord's `debug_handle_map` gives handles to (a kernel
  call: the handles of the nodes it runs; a delegate call: every handle it absorbed); instructions
  whose handles overlap are one step (`merge_runtime_overlapping_debug_handles`);
- its **nodes** are the reference graph's operator nodes (`call_function`, without `getitem` in the
  name: the Inspector's `NodeFilter`) whose debug handle is one of the step's (`find_op_names`).

The reference graph is one of the ETRecord's graphs (`container/etrecord_graphs.py`):

- the edge program, whose nodes carry the debug handles;
- the exported program (ATen), whose handles are carried back from the edge program through each
  node's `from_node` provenance (`propagate_back_debug_handle`): every node the edge node was made
  from ("<name>.<graph id>") takes its handle, and an exported node takes its own (named
  "<name>.<export_graph_id>") or that of the first node in its own provenance that has one. It is
  usable only when every handle of the edge program reaches one of its nodes;
- an entry of the graph map, with the handles it was recorded with.

`AUTO` is the Inspector's default: the exported program when it is recorded and usable, else the
edge program, with a note saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.analysis.source import user_source_line
from pte_adapter.container.etrecord import EtRecordMethod
from pte_adapter.container.etrecord_graphs import (
    EXPORTED,
    EtRecordGraphs,
    RecordedGraph,
    ancestors,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Method

AUTO: Final = "auto"
TO_EXPORTED: Final = "exported"
TO_EDGE: Final = "edge"
# The Inspector leaves out operator nodes with this in their name (its NodeFilter's exclude_ops).
_LEFT_OUT: Final = "getitem"


@dataclass(frozen=True)
class Reference:
    """The graph a mapping points into, and the debug handle of each of its nodes."""

    graph: RecordedGraph
    handles: dict[str, int]  # node name -> debug handle (every node that has one)
    note: str = ""  # how it was chosen, when not as asked (the Inspector's fallback)

    def op_nodes(self) -> list[str]:
        """The nodes the Inspector pairs, in graph order: operator nodes with a debug handle,
        without `getitem` in the name (its `NodeFilter`), and no output of a multi-output node
        that nothing reads (the graph module it walks, `ExportedProgram.module()`, has dropped
        those as dead code)."""
        read = {a for n in self.graph.nodes for a in n.args}
        return [
            n.name
            for n in self.graph.nodes
            if n.op == "call_function"
            and n.name in self.handles
            and _LEFT_OUT not in n.name
            and (n.target != "getitem" or n.name in read)
        ]


@dataclass(frozen=True)
class RuntimeStep:
    """Instructions the Inspector treats as one runtime output, and what they came from."""

    instructions: tuple[int, ...]  # method-level instruction indices, in order
    handles: frozenset[int]
    nodes: tuple[str, ...] = ()  # the reference graph's operator nodes, in graph order


def graph_handles(graphs: EtRecordGraphs, graph: RecordedGraph) -> tuple[dict[str, int], str]:
    """Each node's debug handle in `graph` (carried back for the exported program), and "" or
    why the exported program's could not all be carried back."""
    if graph.kind != EXPORTED:
        return {n.name: n.debug_handle for n in graph.nodes if n.debug_handle is not None}, ""
    edge = graphs.edge(graph.method)
    if edge is None:
        return {}, "the ETRecord has no edge program to carry its debug handles back from"
    return carried_back(graph, edge, graphs.export_graph_id)


def carried_back(
    exported: RecordedGraph, edge: RecordedGraph, graph_id: int | None
) -> tuple[dict[str, int], str]:
    """The Inspector's `propagate_back_debug_handle`: each exported node's handle, and "" when
    every handle of the edge program reached a node, else which did not."""
    by_ancestor: dict[str, int] = {}
    for node in edge.nodes:
        if node.op in ("placeholder", "output") or node.debug_handle is None:
            continue
        for ancestor in ancestors(node, f"{edge.part}:{node.name}"):
            by_ancestor.setdefault(ancestor, node.debug_handle)
    handles: dict[str, int] = {}
    for node in exported.nodes:
        if node.op in ("placeholder", "output"):
            continue
        own = by_ancestor.get(f"{node.name}.{graph_id}")
        if own is None:
            mine = ancestors(node, f"{exported.part}:{node.name}")
            own = next((by_ancestor[a] for a in mine if a in by_ancestor), None)
        if own is not None:
            handles[node.name] = own
    reached = set(handles.values())
    missing = sorted(
        {
            n.debug_handle
            for n in edge.nodes
            if n.op not in ("placeholder", "output")
            and n.debug_handle is not None
            and n.debug_handle not in reached
        }
    )
    if not missing:
        return handles, ""
    shown = ", ".join(map(str, missing[:5])) + (" …" if len(missing) > 5 else "")
    return handles, (
        f"{len(missing)} debug handle(s) of the edge program reach no node of the exported "
        f"program ({shown})"
    )


def ancestor_handles(graphs: EtRecordGraphs, method: str = "forward") -> dict[str, int]:
    """The debug handle of each node of the exported program, by its name, as the edge program
    records it: each edge node's greatest ancestor (the last of its `from_node` chain: the node
    torch.export made) takes the edge node's handle. What a delegate operation that names the
    exported node it comes from (Arm's TOSA debug info) links by. Empty without an edge program;
    PteFormatError when a provenance cannot be read."""
    edge = graphs.edge(method)
    out: dict[str, int] = {}
    for node in edge.nodes if edge is not None else []:
        if node.debug_handle is None or node.op in ("placeholder", "output"):
            continue
        chain = ancestors(node, f"{edge.part if edge else ''}:{node.name}")
        if chain:
            out.setdefault(chain[-1].rsplit(".", 1)[0], node.debug_handle)
    return out


def reference(graphs: EtRecordGraphs, to: str = AUTO, method: str = "forward") -> Reference:
    """The graph to map to: `AUTO`, `TO_EXPORTED`, `TO_EDGE` or a graph-map entry's name (or
    the ETRecord entry of any graph). Raises PteFormatError when the ETRecord cannot give it."""
    source = graphs.source
    if to in (AUTO, TO_EXPORTED):
        exported = graphs.exported
        if exported is not None and method == exported.method:
            handles, why = graph_handles(graphs, exported)
            if not why:
                return Reference(exported, handles)
            if to == TO_EXPORTED:
                raise PteFormatError(f"its exported program cannot be mapped: {why}", part=source)
            note = f"mapped to the edge program: {why}"
        elif to == TO_EXPORTED:
            raise PteFormatError(
                "it records no exported program (the ATen graph torch.export made): map to its "
                "edge program with --to edge",
                part=source,
            )
        else:
            note = "mapped to the edge program: the ETRecord records no exported program"
        edge = graphs.edge(method)
        if edge is None:
            raise PteFormatError(f"it records no edge program of method {method!r}", part=source)
        return Reference(edge, graph_handles(graphs, edge)[0], note)
    if to == TO_EDGE:
        edge = graphs.edge(method)
        if edge is None:
            raise PteFormatError(f"it records no edge program of method {method!r}", part=source)
        return Reference(edge, graph_handles(graphs, edge)[0])
    graph = graphs.graph(to) or graphs.graph(f"{to}/{method}")
    if graph is None:
        names = ", ".join(g.part for g in graphs.graphs)
        raise PteFormatError(f"it records no graph {to!r} (it records: {names})", part=source)
    handles, why = graph_handles(graphs, graph)
    if why:
        raise PteFormatError(f"{graph.part} cannot be mapped: {why}", part=source)
    if not handles:
        raise PteFormatError(f"{graph.part} has no debug handles to map by", part=source)
    return Reference(graph, handles)


def runtime_steps(method: Method, record: EtRecordMethod) -> list[RuntimeStep]:
    """The method's runtime steps: instructions with debug handles, those sharing a handle
    merged (as the Inspector merges overlapping runtime debug handles), in program order."""
    by_position = {i.chain_position: i.index for i in method.instructions if i.chain == 0}
    groups: list[tuple[list[int], set[int]]] = []
    owner: dict[int, int] = {}  # handle -> index into groups
    for position in sorted(record.debug_handles):
        index = by_position.get(position)
        handles = set(record.debug_handles[position])
        if index is None or not handles:
            continue
        hit = sorted({owner[h] for h in handles if h in owner})
        if not hit:
            groups.append(([index], handles))
            target = len(groups) - 1
        else:
            target = hit[0]
            groups[target][0].append(index)
            groups[target][1].update(handles)
            for other in hit[1:]:  # this instruction joins several steps into one
                groups[target][0].extend(groups[other][0])
                groups[target][1].update(groups[other][1])
                groups[other] = ([], set())
        for h in groups[target][1]:
            owner[h] = target
    return [RuntimeStep(tuple(sorted(ins)), frozenset(handles)) for ins, handles in groups if ins]


def sync_steps(method: Method, record: EtRecordMethod, ref: Reference) -> list[RuntimeStep]:
    """The runtime steps with the reference graph's nodes each came from (steps with none are
    left out: the Inspector pairs nothing there either)."""
    by_handle: dict[int, list[str]] = {}
    for name in ref.op_nodes():
        by_handle.setdefault(ref.handles[name], []).append(name)
    order = {name: i for i, name in enumerate(ref.op_nodes())}
    out = []
    for step in runtime_steps(method, record):
        nodes = sorted(
            {n for h in step.handles for n in by_handle.get(h, [])}, key=order.__getitem__
        )
        if nodes:
            out.append(RuntimeStep(step.instructions, step.handles, tuple(nodes)))
    return out


@dataclass(frozen=True)
class StepRun:
    """What one runtime step of the program is, for the nodes of a recorded graph it ran."""

    instructions: tuple[int, ...]
    partitions: tuple[int, ...]  # the partitions of its instructions, in order
    measured_median: float | None = None  # its instructions' medians summed (ETDump), if timed


@dataclass(frozen=True)
class GraphRuns:
    """Where each node of one recorded graph ran in the program it belongs to."""

    method: str
    steps: list[StepRun]
    node_step: dict[str, int]  # node name -> index into `steps`


def graph_runs(
    graphs: EtRecordGraphs, graph: RecordedGraph, result: ProgramAnalysis
) -> GraphRuns | None:
    """The runtime step of each node of `graph` (every node whose debug handle a step ran,
    `getitem` outputs included), in the program `result` analysed with this ETRecord; None when
    the ETRecord is not the program's (`result.source`) or records no such method."""
    ma = result.method(graph.method)
    record = result.program.etrecord
    if result.source is None or ma is None or record is None:
        return None
    rec = record.methods.get(graph.method)
    if rec is None:
        return None
    handles, _ = graph_handles(graphs, graph)
    steps = runtime_steps(ma.method, rec)
    of_handle = {h: i for i, s in enumerate(steps) for h in s.handles}
    times = ma.measured.instruction_times if ma.measured is not None else {}
    runs = []
    for s in steps:
        timed = [times[i].stats.median for i in s.instructions if i in times]
        parts = dict.fromkeys(ma.partitions.partition_of[i] for i in s.instructions)
        runs.append(StepRun(s.instructions, tuple(parts), sum(timed) if timed else None))
    node_step = {name: of_handle[h] for name, h in handles.items() if h in of_handle}
    return GraphRuns(graph.method, runs, node_step)


@dataclass
class EtRecordAnalysis:
    """An ETRecord's graphs and, when a program it belongs to was found, where each graph's nodes
    ran in it (per graph part)."""

    graphs: EtRecordGraphs
    program: ProgramAnalysis | None = None
    runs: dict[str, GraphRuns] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # which program, or why none
    # graph part -> node name -> the user's line of code it came from (`user_source_line`)
    source_lines: dict[str, dict[str, str]] = field(default_factory=dict)


def analyse_etrecord(
    graphs: EtRecordGraphs, program: ProgramAnalysis | None, notes: list[str]
) -> EtRecordAnalysis:
    out = EtRecordAnalysis(graphs, program, notes=list(notes))
    for graph in graphs.graphs:
        lines = {n.name: user_source_line(n.stack_trace) for n in graph.nodes if n.stack_trace}
        out.source_lines[graph.part] = {k: v for k, v in lines.items() if v}
    if program is None:
        return out
    for graph in graphs.graphs:
        runs = graph_runs(graphs, graph, program)
        if runs is not None:
            out.runs[graph.part] = runs
    return out
