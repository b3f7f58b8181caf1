"""What the adapter hands Model Explorer's server (explorer/served.py): the server's own
serialisation of it (`convert_adapter_response`, then `json.dumps`, as its `send_command` does)
writes the same bytes as of the plain graphs, and does less work for it. Every example's graphs go
through the same path in the golden outputs (tests/support/golden.py: `graphs_json`), which checks
their content; here the bytes, key order included."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
from pathlib import Path
from typing import Any, cast

import pytest
from model_explorer import graph_builder as gb
from model_explorer.utils import convert_adapter_response

from pte_adapter.explorer.adapter import CACHE, PteAdapter
from pte_adapter.explorer.convert import convert_path
from pte_adapter.explorer.served import ServedGroups, ServedNodes, served
from tests.support.examples import example

# A program with delegates decoded (Ethos-U), an XNNPACK one with its ETRecord and ETDump, an
# ETRecord opened as graphs, and a bare payload file.
FILES = [
    example("mv2_lrn_ethosu85"),
    example("tiny_gpt_xnnpack"),
    example("sync_xnnpack").with_suffix(".etrecord"),
]


def _payload_file() -> Path:
    return next(example("mv2_lrn_ethosu85").parent.glob("mv2_lrn_ethosu85_artifacts/*.tosa"))


@pytest.mark.parametrize("path", [*FILES, None], ids=lambda p: p.name if p else "a .tosa file")
def test_the_server_sends_the_same_bytes(path: Path | None) -> None:
    path = path if path is not None else _payload_file()
    CACHE.clear()
    response = PteAdapter().convert(str(path), {})
    sent = json.dumps(convert_adapter_response(response))
    plain = json.dumps({"graphs": [dataclasses.asdict(g) for g in convert_path(path)]})
    assert sent == plain
    assert all(isinstance(g.nodes, ServedNodes) for g in response["graphs"])


def test_served_nodes_read_as_the_list() -> None:
    graphs = convert_path(example("tiny_gpt_xnnpack"))
    for graph, copy_ in zip(graphs, served(graphs), strict=True):
        nodes = copy_.nodes
        assert type(graph.nodes) is list and type(nodes) is ServedNodes  # the original untouched
        assert len(nodes) == len(graph.nodes) and list(nodes) == graph.nodes
        assert nodes[0] is graph.nodes[0] and nodes[-1] is graph.nodes[-1]
        assert nodes[1:3] == graph.nodes[1:3]
        assert dataclasses.replace(copy_, nodes=graph.nodes) == graph  # the rest is the graph's


def test_a_shared_object_is_made_once() -> None:
    """Where the saving comes from: the builder shares key/values among nodes (issue 36), and
    each is made into a dict once, where `asdict` makes one per occurrence."""
    (graph, *_) = convert_path(example("tiny_gpt_xnnpack"))
    by_id: dict[int, gb.KeyValue] = {}
    occurrences = 0
    for node in graph.nodes:
        for kv in node.attrs:
            by_id[id(kv)] = kv
            occurrences += 1
    assert len(by_id) < occurrences  # shared: otherwise nothing to save
    # What `asdict` calls on it: a list of dicts, whatever its declared type.
    made = cast(list[dict[str, Any]], copy.deepcopy(ServedNodes(graph.nodes)))
    dicts = {id(a) for node in made for a in node["attrs"]}
    assert len(dicts) == len(by_id)
    assert made == [dataclasses.asdict(n) for n in graph.nodes]


def _odd_copies(graph: gb.Graph) -> list[gb.GraphNode]:
    """Copies of real nodes each made in a way the builder never makes them, one way each: the
    spelled-out path must hand every one of them to `as_plain`."""

    class Subclass(gb.GraphNode):
        pass

    class Pair(gb.KeyValue):
        pass

    first = next(n for n in graph.nodes if n.attrs and n.incomingEdges and n.outputsMetadata)
    fields = {f.name: getattr(first, f.name) for f in dataclasses.fields(first)}
    link = gb.KeyValue(key="link", value=gb.NodeIdsNodeAttributeValue(nodeIds=[first.id]))
    edge = first.incomingEdges[0]
    port = first.outputsMetadata[0]
    return [
        Subclass(**fields),
        dataclasses.replace(first, attrs=[*first.attrs, link, Pair(key="pair", value="v")]),
        dataclasses.replace(first, attrs=tuple(first.attrs)),
        dataclasses.replace(first, incomingEdges=[dataclasses.replace(edge, targetNodeInputId=0)]),
        dataclasses.replace(first, outputsMetadata=[dataclasses.replace(port, id=1)]),
        dataclasses.replace(first, label=None),
    ]


def test_nodes_not_made_by_the_builder_serialise_as_asdict_does() -> None:
    (graph, *_) = convert_path(example("tiny_gpt_xnnpack"))
    odd = _odd_copies(graph)
    made = cast(list[dict[str, Any]], copy.deepcopy(ServedNodes(odd)))
    assert json.dumps(made) == json.dumps([dataclasses.asdict(n) for n in odd])
    groups = {"a": {"k": "v"}, "b": {"k": 1}, "c": {2: "v"}}
    sent = copy.deepcopy(ServedGroups(groups))
    assert json.dumps(sent) == json.dumps(
        dataclasses.asdict(gb.Graph(id="g", nodes=[], groupNodeAttributes=groups))[
            "groupNodeAttributes"
        ]
    )
    assert sent["a"] is not groups["a"]  # new dicts: the kept graphs are never handed out


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_no_collection_runs_while_the_node_dicts_are_made(enabled: bool) -> None:
    """The collector is paused while a graph's dicts are made (most of the serialisation's time
    went into collections that found nothing), and left as it was."""
    (graph, *_) = convert_path(example("tiny_gpt_xnnpack"))
    runs: list[str] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            runs.append(phase)

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    gc.callbacks.append(count)
    try:
        gc.collect()
        runs.clear()
        threshold = gc.get_threshold()
        gc.set_threshold(10)  # a collection every few allocations, if the collector runs
        try:
            made = copy.deepcopy(ServedNodes(graph.nodes))
        finally:
            gc.set_threshold(*threshold)
        assert gc.isenabled() is enabled
    finally:
        gc.callbacks.remove(count)
        (gc.enable if was else gc.disable)()
    assert len(made) == len(graph.nodes) > 100
    # Running, the collector would have run about once per ten new dicts: hundreds of times.
    # Resumed, it may run a time or two on what is allocated after the block, until the threshold
    # is set back (deepcopy's own memo, this test's own calls).
    assert len(runs) <= (3 if enabled else 0)
