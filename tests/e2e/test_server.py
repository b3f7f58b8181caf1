"""End to end: the real `model-explorer` server loads the extension and converts over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.examples import example
from tests.support.groups import group_names
from tests.support.server import get_json, model_explorer_server, send_command


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with model_explorer_server() as url:
        yield url


def _convert(url: str, path: Path) -> dict[str, Any]:
    cmd = {
        "extensionId": "pte_adapter",
        "cmdId": "convert",
        "modelPath": str(path.resolve()),
        "settings": {},
        "deleteAfterConversion": False,
    }
    return send_command(url, cmd)


def test_the_server_lists_the_extension(server: str) -> None:
    assert any(e["id"] == "pte_adapter" for e in get_json(server, "/api/v1/get_extensions"))


def test_converts_fragmented_ethosu_example(server: str) -> None:
    import pte_adapter
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids

    path = example("mv2_lrn_ethosu85")
    graphs = {g["id"]: g for g in _convert(server, path)["graphs"]}
    program = pte_adapter.load(path)
    method = program.methods[0]
    g = graphs[method.name]
    parts = partition_method(method)
    # Model Explorer opens the graph with the most nodes: the method graph.
    assert max(graphs.values(), key=lambda x: len(x["nodes"]))["id"] == method.name
    labels = [n["label"] for n in g["nodes"]]
    assert labels.count("EthosUBackend") == sum(d.id == "EthosUBackend" for d in method.delegates)
    # Partition groups are namespaces, each with its attributes and a colour config.
    namespaces = {n["namespace"].split("/")[0] for n in g["nodes"] if n["namespace"]}
    groups = group_names(path)[method.name]
    assert namespaces == set(groups)
    assert "CPU island 2 - aten::avg_pool3d (features.4 LocalResponseNorm)" in namespaces
    assert {g for g in namespaces if g.startswith("NPU partition ")} == {
        groups[p.index] for p in parts.delegate_partitions
    }
    assert set(g["groupNodeAttributes"]) == {""} | namespaces
    regexes = [c["namespaceRegex"] for c in g["groupNodeConfigs"]]
    assert len(regexes) == len(parts.partitions)
    # Every Ethos-U partition holds its decoded NPU operations, came back in the same response.
    ids = instruction_role_ids(method, parts)
    for part in parts.delegate_partitions:
        assert part.delegate_index is not None
        npu = method.delegates[part.delegate_index].decoded.graphs[0]
        inside = [
            n
            for n in g["nodes"]
            if n["id"].startswith(f"{ids[part.instructions[0]]}.")
            and n["namespace"] == groups[part.index]
        ]
        assert len(inside) == len(npu.nodes) > 0


def test_bad_file_is_a_clear_conversion_error(server: str, tmp_path: Path) -> None:
    bad = tmp_path / "broken.pte"
    data = bytearray(example("undelegated").read_bytes())
    data[4:8] = b"XXXX"
    bad.write_bytes(bytes(data))
    result = _convert(server, bad)
    assert "graphs" not in result
    assert result["error"].startswith("PteFormatError: ")
    assert "ET12" in result["error"] and "byte 4" in result["error"]
