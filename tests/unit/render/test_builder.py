"""The Model Explorer builder shares what repeats (render/model_explorer.py): what Model Explorer
serialises is still, node for node, what the plan says, and the graphs the server keeps are made of
few objects for the cycle collector to walk (issue 36)."""

from __future__ import annotations

import gc
import types
from dataclasses import asdict, dataclass

from model_explorer import graph_builder as gb

import pte_adapter
from pte_adapter.render.model_explorer import build_graphs, positional
from pte_adapter.render.plan.graph import NodeLink
from pte_adapter.render.plan.program import program_plan
from tests.support.examples import example


def _tracked(roots: list[object]) -> int:
    """Objects the cycle collector tracks, reachable from `roots` (classes and modules apart)."""
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    stack = list(roots)
    count = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        count += gc.is_tracked(obj)
        stack.extend(gc.get_referents(obj))
    return count


def test_what_model_explorer_serialises_is_what_the_plan_says() -> None:
    result = pte_adapter.analyse(pte_adapter.load(example("tiny_gpt_xnnpack")))
    plan = program_plan(result).graphs
    built = build_graphs(plan)
    nodes = 0
    for planned, graph in zip(plan, built, strict=True):
        sent = asdict(graph)
        assert sent["groupNodeAttributes"] == planned.group_attrs
        for p, n in zip(planned.nodes, sent["nodes"], strict=True):
            nodes += 1
            assert n["id"] == p.id and n["label"] == p.label and n["namespace"] == p.namespace
            assert n["subgraphIds"] == list(p.subgraphs)
            want = [
                {"key": k, "value": {"nodeIds": list(v.node_ids)} if isinstance(v, NodeLink) else v}
                for k, v in p.attrs.items()
            ]
            assert n["attrs"] == want, p.id
            for key, ports in (("outputsMetadata", p.outputs), ("inputsMetadata", p.inputs)):
                assert n[key] == [
                    {"id": q.id, "attrs": [{"key": k, "value": v} for k, v in q.attrs.items()]}
                    for q in ports
                ], p.id
            assert [
                (e["sourceNodeId"], e["sourceNodeOutputId"], e["targetNodeInputId"])
                for e in n["incomingEdges"]
            ] == [(e.source, e.source_output, e.target_input) for e in p.edges]
            if p.colour is None:
                assert n["style"] is None
            else:
                assert (n["style"]["backgroundColor"], n["style"]["borderColor"]) == p.colour
    # The sharing is real: far fewer objects than key/values.
    tracked = _tracked(list(built))
    assert tracked < 12 * nodes, tracked / nodes


def test_a_model_explorer_with_other_field_orders_gets_keywords() -> None:
    """The builder calls Model Explorer's classes positionally only where their fields are in
    the order it passes them; a version that reordered them is called with keywords."""

    @dataclass
    class Reordered:
        label: str
        id: str

    assert positional(gb.KeyValue, ("key", "value")) is gb.KeyValue
    make = positional(Reordered, ("id", "label"))
    assert make is not Reordered
    assert make("n", "l") == Reordered(id="n", label="l")


def test_the_adapter_lets_the_analysis_go_before_the_collector_runs_again(monkeypatch) -> None:
    """The conversion pauses the cycle collector; the first collection after it walks every
    object still alive, so the adapter's path lets the program, its analysis and the plan go first
    (only the graphs it keeps remain)."""
    from pte_adapter.analysis.program_analysis import ProgramAnalysis
    from pte_adapter.explorer.convert import convert_with_folders
    from pte_adapter.program.model import Program
    from pte_adapter.render.plan.graph import ProgramPlan

    kinds = (ProgramAnalysis, ProgramPlan, Program)
    # type(), not isinstance: some objects alive in a test process warn when asked their class.
    # Those earlier tests left alive are held here, so no new object can take one's id.
    earlier = [o for o in gc.get_objects() if type(o) in kinds]
    earlier_ids = {id(o) for o in earlier}
    alive_at_enable: list[int] = []
    enable = gc.enable

    def counting_enable() -> None:
        alive = [o for o in gc.get_objects() if type(o) in kinds and id(o) not in earlier_ids]
        alive_at_enable.append(len(alive))
        enable()

    monkeypatch.setattr(gc, "enable", counting_enable)
    graphs, _ = convert_with_folders(example("tiny_gpt_xnnpack"))
    assert graphs and alive_at_enable == [0]


def test_the_graphs_go_to_the_oldest_generation_unwalked(monkeypatch) -> None:
    """After the pause, what the conversion left alive is moved to the collector's oldest
    generation as it is, and the young count starts again: no collection walks the graphs on
    the way (the first one after the pause used to, at once)."""
    from pte_adapter.explorer.convert import convert_with_folders

    if not gc.isenabled():  # pragma: no cover - the suite runs with the collector on
        return
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        graphs, _ = convert_with_folders(example("tiny_gpt_xnnpack"))
        young = gc.get_count()[0]
        oldest = {id(o) for o in gc.get_objects(generation=2)}
    finally:
        gc.callbacks.remove(count)
    assert graphs and collections == []
    assert young < 100, young
    assert all(id(g) in oldest and id(g.nodes[0]) in oldest for g in graphs)


def test_nothing_is_moved_while_another_has_objects_frozen() -> None:
    """`gc.unfreeze` would release everything frozen: a process that froze objects itself (a
    server before it forks) keeps them frozen through a conversion. Checked on objects of its
    own, not on the frozen count: a frozen object may die during a conversion (an import refreshes
    the import system's directory caches), which lowers the count without releasing anything."""
    from pte_adapter.explorer.convert import convert_with_folders

    mine = [[k] for k in range(16)]
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        convert_with_folders(example("tiny_gpt_xnnpack"))
        tracked = {id(o) for o in gc.get_objects()}  # the frozen are in no generation
        assert not any(id(o) in tracked for o in mine)
    finally:
        gc.unfreeze()
