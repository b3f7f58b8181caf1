"""The sync mapping: Model Explorer's sync-navigation JSON between a method graph of the `.pte` (left
pane) and a graph of its ETRecord (right pane).

Model Explorer's format (its web app's `SyncNavigationData`, the "Upload mapping from computer"
sync mode and the visualizer config's `syncNavigationData`):

    {"mappingEntries": [{"leftNodeIds": [...], "rightNodeIds": [...]}, ...],
     "disableMappingFallback": true}

A node id appears in one entry only (what Model Explorer assumes); selecting any node of an entry
selects the entry's nodes on the other side. `disableMappingFallback` stops Model Explorer from
selecting a node of the same id on the other side when a node is in no entry (the two graphs'
ids are unrelated). Beside it, `pte_adapter` says what was mapped to what (files, graphs, how the
graph was chosen) and, per entry in the same order, its instructions and debug handles.

One entry per runtime step (`analysis/lowering_map.py`): left, the node of each of its
instructions as the adapter draws it (`ProgramPlan.methods`: kernel calls, delegate calls) and
the decoded operations of its delegate calls that record which nodes they came from (XNNPACK's
debug handles; Arm's TOSA debug info, the exported program's node each operator's `node_trace`
ends at), when drawn in the method graph; right, the reference graph's nodes it came from.
"""

from __future__ import annotations

from typing import Any, Final

from pte_adapter.analysis.lowering_map import Reference, RuntimeStep
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.program.delegate_graph import OpNode
from pte_adapter.program.model import InstructionKind
from pte_adapter.render.plan.graph import MethodPlacement

FORMAT_KEY: Final = "pte_adapter"


def sync_mapping(
    ma: MethodAnalysis,
    placement: MethodPlacement,
    steps: list[RuntimeStep],
    ref: Reference,
    source_handles: dict[str, int],
    *,
    left_model: str,
    right_model: str,
) -> dict[str, Any]:
    """The mapping document (module docstring). `source_handles`: the debug handle of each node
    of the exported program, by name (what a delegate operation that records the exported node
    it comes from links by: `lowering_map.ancestor_handles`)."""
    entries: list[dict[str, list[str]]] = []
    about: list[dict[str, list[int]]] = []
    for step in steps:
        left = _left_ids(ma, placement, step, source_handles)
        if not left:
            continue
        entries.append({"leftNodeIds": left, "rightNodeIds": list(step.nodes)})
        about.append(
            {"instructions": list(step.instructions), "debug_handles": sorted(step.handles)}
        )
    meta: dict[str, Any] = {
        "left": {"model": left_model, "graph": placement.graph_id},
        "right": {"model": right_model, "graph": ref.graph.part},
        "pairing": "ExecuTorch Inspector's: runtime steps by debug handle, overlapping merged",
        "entries": about,
    }
    if ref.note:
        meta["note"] = ref.note
    return {"mappingEntries": entries, "disableMappingFallback": True, FORMAT_KEY: meta}


def _left_ids(
    ma: MethodAnalysis,
    placement: MethodPlacement,
    step: RuntimeStep,
    source_handles: dict[str, int],
) -> list[str]:
    ids = placement.instructions
    out: list[str] = []
    for index in step.instructions:
        if not 0 <= index < len(ids):
            continue
        out.append(ids[index])
        ins = ma.method.instructions[index]
        d = ins.delegate_index
        if ins.kind is not InstructionKind.DELEGATE or d is None:
            continue
        decoded = ma.method.delegates[d].decoded if 0 <= d < len(ma.method.delegates) else None
        for view in decoded.graphs if decoded is not None else []:
            where = placement.views.get((index, view.name))
            if where is None or where.graph_id != placement.graph_id:
                continue  # drawn in a graph of its own: not in the pane the mapping is for
            for pos, op in enumerate(view.nodes):
                if pos < len(where.node_ids) and _linked(op, step, source_handles):
                    out.append(where.node_ids[pos])
    return list(dict.fromkeys(out))


def _linked(op: OpNode, step: RuntimeStep, source_handles: dict[str, int]) -> bool:
    """Whether a decoded operation records that it came from this step's nodes."""
    if any(h in step.handles for h in op.debug_handles):
        return True
    return any(source_handles.get(name) in step.handles for name in op.source_nodes)
