"""The node data provider that colours a `.pte` graph by measured time, through Model Explorer's own
server API (the same `send_command` the web app posts), checked against ExecuTorch's Inspector."""

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
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.explorer.node_data_provider import PROVIDER_ID, PteProfileNodeData

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _node_ids(path: Path, method: str = "forward") -> list[str]:
    """The renderer's node id of each instruction (its role id)."""
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids as instruction_node_ids

    m = next(m for m in pte_adapter.load(path).methods if m.name == method)
    return instruction_node_ids(m, partition_method(m))


def _inspector_medians(stem: str) -> dict[str, float]:
    """Inspector's median per instruction event, keyed by the renderer's node id."""
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ins = Inspector(etdump_path=str(EXAMPLES / f"{stem}.etdp"))
    out: dict[str, float] = {}
    ids = _node_ids(EXAMPLES / f"{stem}.pte")
    for block in ins.event_blocks:
        for e in block.events:
            if e.name in ("OPERATOR_CALL", "DELEGATE_CALL"):
                out[ids[e._instruction_id]] = float(np.median(e.perf_data.raw))
            elif e.is_delegated_op:
                out[e.name] = float(np.median(e.perf_data.raw))
    return out


def test_provider_in_process() -> None:
    provider = PteProfileNodeData()
    pte = str(EXAMPLES / "mv2_xnnpack_int8.pte")
    editors = provider.get_config_editors(PROVIDER_ID).configEditors
    assert editors and editors[0].id == "etdump"
    res = provider.run(PROVIDER_ID, pte, "forward", {}, None)
    assert res.error == ""
    expected = _inspector_medians("mv2_xnnpack_int8")
    # The call's operators carry their own times (Convert first); the call keeps the rest.
    call = _node_ids(EXAMPLES / "mv2_xnnpack_int8.pte")[0]
    assert 0 < res.result.results[call].value < expected[call]
    assert res.result.results[f"{call}.0"].value == pytest.approx(
        expected["Convert (NC) #1"], abs=1e-6
    )
    # A graph the ETDump has no times for: a clear error, not an exception.
    res = provider.run(PROVIDER_ID, pte, "encode", {}, None)
    assert "has no times for graph 'encode'" in res.error
    # A foreign profile is refused with the join's message.
    res = provider.run(
        PROVIDER_ID, pte, "forward", {"etdump": str(EXAMPLES / "undelegated.etdp")}, None
    )
    assert "another program" in res.error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    exe = shutil.which("model-explorer") or str(Path(sys.executable).parent / "model-explorer")
    port = _free_port()
    proc = subprocess.Popen(
        [
            exe,
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
                    json.loads(r.read())
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    raise AssertionError(f"model-explorer did not start:\n{out}") from None
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # only the process group started here
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _post(base: str, cmd: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{base}/apipost/v1/send_command",
        data=json.dumps(cmd).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        result: dict[str, Any] = json.loads(r.read())
        return result


@pytest.mark.slow
def test_provider_through_model_explorer(server: str) -> None:
    with urllib.request.urlopen(f"{server}/api/v1/get_extensions", timeout=10) as r:
        exts = {e["id"]: e for e in json.loads(r.read())}
    assert "pte_adapter" in exts
    assert exts[PROVIDER_ID]["type"] == "node_data_provider"
    pte = str((EXAMPLES / "undelegated.pte").resolve())
    resp = _post(
        server,
        {
            "extensionId": PROVIDER_ID,
            "cmdId": "run",
            "modelPath": pte,
            "graphId": "forward",
            "configValues": {},
        },
    )
    assert resp.get("error", "") == "", resp
    results = resp["result"]["results"]
    expected = _inspector_medians("undelegated")
    assert len(expected) == 25
    for key, median in expected.items():
        assert results[key]["value"] == pytest.approx(median, abs=1e-6)
    assert set(results) == set(expected)
    # Node ids are the adapter's: convert the same file and look them up.
    graphs = _post(
        server,
        {
            "extensionId": "pte_adapter",
            "cmdId": "convert",
            "modelPath": pte,
            "settings": {},
            "deleteAfterConversion": False,
        },
    )
    forward = next(g for g in graphs["graphs"] if g["id"] == "forward")
    assert set(results) <= {n["id"] for n in forward["nodes"]}
