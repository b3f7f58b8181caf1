"""Record ExecuTorch's own memory plan of each example as it is built: `<name>.memory.json`.

The adapter works out from the `.pte` alone when each planned tensor is alive and how many arena
bytes are live at each instruction (src/pte_adapter/analysis/memory.py). The oracle is the planner
itself: while a program is lowered, ExecuTorch's memory planning pass gives every tensor spec a
lifetime (`spec.lifetime`, the first and last *graph node* that mentions it, as
`exir/memory_planning.py: update_all_tensors_lifetime` counts them), an arena (`mem_id`) and an
offset (`mem_offset`); the emitter then turns graph nodes into instructions and specs into values.
None of that is stored in the `.pte`, so it is captured here, the way `captured_partition_rejections`
captures the partitioner's reasons:

- the node order each graph had when its lifetimes were computed (memory planning later inserts
  `memory.free` nodes, which shifts the indices of every node after them);
- which instructions the emitter wrote for each node (`_Emitter.run_node`; a control-flow
  submodule's emitter knows its `instruction_start_offset` in the method's chain);
- which value each spec became (`_EmitterState.spec2id_dict`).

Each spec's node lifetime is then mapped onto instructions: it starts at the first instruction
written for a node at or after its first node, and ends at the last instruction written for a node
at or before its last one (a graph input starts at the method's first instruction, a graph output
ends at its last one). The JSON lists, per method, the arena sizes and every planned spec with its
value index, arena, offset, size and both lifetimes; tests/oracle/test_memory.py compares them with
the adapter's reading of the `.pte`.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _GraphRecord:
    method: str = ""
    planning_nodes: list[str] = field(default_factory=list)  # node names when planned
    emitted: dict[str, tuple[int, int]] = field(default_factory=dict)  # node -> [start, end)
    graph_module: Any = None
    emitter_state: Any = None


@dataclass
class _Recorder:
    graphs: dict[int, _GraphRecord] = field(default_factory=dict)  # id(graph module) -> record
    written: list[str] = field(default_factory=list)


_ACTIVE: list[_Recorder] = []


@contextlib.contextmanager
def recording():
    """While active, every memory planning and every emission is recorded; `write(prog, name)`
    then writes `<name>.memory.json`. Yields the list of JSON files written."""
    import executorch.exir.memory_planning as planning
    from executorch.exir.emit import _emitter

    rec = _Recorder()
    orig_lifetimes = planning.update_all_tensors_lifetime
    orig_run_node = _emitter._Emitter.run_node
    orig_top_init = _emitter._TopLevelEmitter.__init__

    def update_all_tensors_lifetime(graph_module, *args, **kwargs):
        specs = orig_lifetimes(graph_module, *args, **kwargs)
        g = rec.graphs.setdefault(id(graph_module), _GraphRecord())
        g.planning_nodes = [n.name for n in graph_module.graph.nodes]
        g.graph_module = graph_module
        return specs

    def run_node(self, n):
        before = len(self.chain.instructions)
        out = orig_run_node(self, n)
        g = rec.graphs.setdefault(id(self.graph_module), _GraphRecord())
        g.graph_module, g.emitter_state = self.graph_module, self.emitter_state
        base = self.instruction_start_offset
        g.emitted[n.name] = (base + before, base + len(self.chain.instructions))
        return out

    def top_init(self, name, exported_program, graph_module, program_state, emitter_state):
        orig_top_init(self, name, exported_program, graph_module, program_state, emitter_state)
        g = rec.graphs.setdefault(id(graph_module), _GraphRecord())
        g.method = name

    planning.update_all_tensors_lifetime = update_all_tensors_lifetime
    _emitter._Emitter.run_node = run_node
    _emitter._TopLevelEmitter.__init__ = top_init
    _ACTIVE.append(rec)
    try:
        yield rec.written
    finally:
        _ACTIVE.remove(rec)
        planning.update_all_tensors_lifetime = orig_lifetimes
        _emitter._Emitter.run_node = orig_run_node
        _emitter._TopLevelEmitter.__init__ = orig_top_init


def _specs(graph_module) -> list[Any]:
    """Every planned (arena-placed) spec of the graph's nodes, once, in node order.

    Placed is what counts, not `spec.const`: a mutable buffer is a buffer, so its spec is const,
    yet the planner gives it an arena slot and a lifetime over the whole graph ("mutable buffers
    are never freed", `update_tensor_lifetime`). Constants proper have no `mem_id`."""
    from executorch.exir.tensor import TensorSpec

    out: dict[int, Any] = {}
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        for s in spec if isinstance(spec, (list, tuple)) else [spec]:
            if isinstance(s, TensorSpec) and s.mem_id is not None and s.mem_offset is not None:
                out.setdefault(id(s), s)
    return list(out.values())


def _instruction_span(g: _GraphRecord, lifetime: list[int], n_instructions: int) -> list[int]:
    """A node lifetime [first node, last node] as [first instruction, last instruction]."""
    names = g.planning_nodes
    spans = [g.emitted.get(name, (0, 0)) for name in names]
    emitted = [(k, s) for k, s in enumerate(spans) if s[1] > s[0]]
    lo, hi = lifetime
    after = [s for k, s in emitted if k >= lo]
    before = [s for k, s in emitted if k <= hi]
    own = [s for _, s in emitted]
    graph_end = own[-1][1] - 1 if own else n_instructions - 1
    first = after[0][0] if after else graph_end
    last = before[-1][1] - 1 if before else first
    if names and hi >= len(names) - 1:  # the output node: to the graph's last instruction
        last = graph_end if g.method == "" else n_instructions - 1
    if lo == 0 and g.method:  # a graph input of the method: from its first instruction
        first = 0
    return [first, max(first, last)]


def _method_doc(prog, method: str, graphs: list[_GraphRecord]) -> dict[str, Any]:
    plan = next(p for p in prog.executorch_program.execution_plan if p.name == method)
    n = sum(len(c.instructions) for c in plan.chains)
    tensors = []
    for g in graphs:
        spec2id = g.emitter_state.spec2id_dict if g.emitter_state is not None else {}
        for s in _specs(g.graph_module):
            value = spec2id.get(s)
            if value is None:
                continue
            first, last = _instruction_span(g, list(s.lifetime), n)
            tensors.append(
                {
                    "value": value,
                    "mem_id": s.mem_id,
                    "mem_offset": s.mem_offset,
                    "nbytes": s.nbytes(),
                    "allocated_memory": s.allocated_memory,
                    "lifetime_nodes": list(s.lifetime),
                    "first": first,
                    "last": last,
                    "graph": "method" if g.method else "control-flow submodule",
                }
            )
    tensors.sort(key=lambda t: t["value"])
    return {
        "name": method,
        "instructions": n,
        "non_const_buffer_sizes": list(plan.non_const_buffer_sizes),
        "tensors": tensors,
    }


def _planned_as(g: _GraphRecord, records: list[_GraphRecord]) -> list[str]:
    """The node order `g` had when planned. The program manager may copy a graph module after
    planning it; the copy keeps the node names (but its output node's), plus any `memory.free`
    nodes inserted after planning."""
    if g.planning_nodes:
        return g.planning_nodes
    names = set(g.emitted)

    def inner(r: _GraphRecord) -> set[str]:
        return set(r.planning_nodes[:-1])  # the output node is last

    planned = [r for r in records if r.planning_nodes and r.emitter_state is None]
    best = max(planned, key=lambda r: len(names & inner(r)), default=None)
    if best is None or not inner(best) <= names:
        raise RuntimeError(f"no memory planning recorded for the graph of method {g.method!r}")
    return best.planning_nodes


def write(prog, name: str) -> None:
    """`<name>.memory.json` for the program just built, when recording."""
    if not _ACTIVE:
        return
    rec = _ACTIVE[-1]
    from importlib.metadata import version

    methods = []
    for plan in prog.executorch_program.execution_plan:
        top = [g for g in rec.graphs.values() if g.method == plan.name and g.emitter_state]
        if not top:  # a constant method (a value, no graph): the planner placed nothing
            methods.append(_method_doc(prog, plan.name, []))
            continue
        state = top[0].emitter_state
        records = list(rec.graphs.values())
        graphs = [g for g in records if g.emitter_state is state]
        for g in graphs:
            g.planning_nodes = _planned_as(g, records)
        methods.append(_method_doc(prog, plan.name, graphs))
    doc = {
        "generator": "examples/memory_plan.py (ExecuTorch's memory planning: spec.lifetime, "
        "mem_id, mem_offset; emitter: instructions per node, spec2id_dict)",
        "executorch": version("executorch"),
        "methods": methods,
    }
    path = f"{name}.memory.json"
    with open(path, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    rec.written.append(path)
    rec.graphs.clear()
