"""The node data provider that colours a `.pte` graph by measured time, through Model Explorer's own
server API (the same `send_command` the web app posts), checked against ExecuTorch's Inspector."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pte_adapter.explorer.node_data_provider import PROVIDER_ID, PteProfileNodeData
from tests.support.examples import EXAMPLES
from tests.support.profiles import inspector, node_ids
from tests.support.server import get_json, model_explorer_server, send_command


def _inspector_medians(stem: str) -> dict[str, float]:
    """Inspector's median per instruction event, keyed by the renderer's node id."""
    ins = inspector(EXAMPLES / f"{stem}.etdp")
    out: dict[str, float] = {}
    ids = node_ids(EXAMPLES / f"{stem}.pte")
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
    call = node_ids(EXAMPLES / "mv2_xnnpack_int8.pte")[0]
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


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with model_explorer_server() as url:
        yield url


@pytest.mark.slow
def test_provider_through_model_explorer(server: str) -> None:
    exts = {e["id"]: e for e in get_json(server, "/api/v1/get_extensions", timeout=10)}
    assert "pte_adapter" in exts
    assert exts[PROVIDER_ID]["type"] == "node_data_provider"
    pte = str((EXAMPLES / "undelegated.pte").resolve())
    resp = send_command(
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
    graphs = send_command(
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
