"""End to end: the real `model-explorer` server loads the extension and converts over HTTP."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.examples import example
from tests.support.groups import group_names


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _model_explorer() -> str:
    exe = shutil.which("model-explorer") or str(Path(sys.executable).parent / "model-explorer")
    assert Path(exe).exists(), "model-explorer is not installed"
    return exe


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            _model_explorer(),
            "--extensions=pte_adapter",
            "--no_open_in_browser",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/v1/get_extensions", timeout=2) as r:
                    exts = json.loads(r.read())
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    raise AssertionError(f"model-explorer did not start:\n{out}") from None
                time.sleep(0.5)
        assert any(e["id"] == "pte_adapter" for e in exts)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # only the process group we started
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _convert(base: str, path: Path) -> dict[str, Any]:
    cmd = {
        "extensionId": "pte_adapter",
        "cmdId": "convert",
        "modelPath": str(path.resolve()),
        "settings": {},
        "deleteAfterConversion": False,
    }
    req = urllib.request.Request(
        f"{base}/apipost/v1/send_command",
        data=json.dumps(cmd).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        result: dict[str, Any] = json.loads(r.read())
        return result


def test_converts_fragmented_ethosu_example(server: str) -> None:
    import pte_adapter
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids as instruction_node_ids

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
    ids = instruction_node_ids(method, parts)
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
