"""What the adapter hands Model Explorer's server (explorer/served.py): the server's own
serialisation of it (`convert_adapter_response`, then `json.dumps`, as its `send_command` does)
writes the same bytes as of the plain graphs, and does less work for it. Every example's graphs go
through the same path in the golden outputs (tests/support/golden.py: `graphs_json`), which checks
their content; here the bytes, key order included."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest
from model_explorer import graph_builder as gb
from model_explorer.utils import convert_adapter_response

from pte_adapter.explorer.adapter import CACHE, PteAdapter
from pte_adapter.explorer.convert import convert_path
from pte_adapter.explorer.served import ServedNodes, served
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
