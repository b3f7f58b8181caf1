"""The node data provider that colours a `.pte` graph by its numeric gap ("Numeric gap (debug
buffer)"), in process and through Model Explorer's own server API (the `send_command` the web app
posts): its values are the analysis's rows (checked against numpy in tests/oracle/test_numerics.py)
on the node ids the adapter draws, the metric is the one chosen, and every mistake is the
provider's error message, never an exception."""

from __future__ import annotations

import pytest

from pte_adapter.api import NumericsOptions, open_analysis
from pte_adapter.explorer.numerics_provider import PROVIDER_ID, VS_AOT, PteNumericsNodeData
from pte_adapter.render.numerics_overlay import INF_DB
from tests.support.examples import example
from tests.support.profiles import node_ids
from tests.support.server import model_explorer_server, send_command

INT8, FP32 = "numerics_island_int8", "numerics_island_fp32"


def _expected(metric: str) -> dict[str, float]:
    """Per instruction node: the worst of its rows' values (the lowest SNR, the largest MSE)."""
    result = open_analysis(example(INT8), numerics=NumericsOptions(reference=example(FP32)))
    assert result.numerics is not None
    ids = node_ids(example(INT8))
    out: dict[str, float] = {}
    for r in result.numerics.methods["forward"].compared:
        assert r.metrics is not None
        value = r.metrics.snr_db if metric == "snr" else r.metrics.mse
        node = ids[r.instructions[-1]]
        pick = min if metric == "snr" else max
        out[node] = pick(out.get(node, value), value)
    return out


@pytest.mark.parametrize("metric", ["snr", "mse"])
def test_provider_in_process(metric: str) -> None:
    provider = PteNumericsNodeData()
    editors = {e.id for e in provider.get_config_editors(PROVIDER_ID).configEditors}
    assert {"reference", "metric", "against", "debug_buffer"} <= editors
    config = {"reference": str(example(FP32)), "metric": metric}
    res = provider.run(PROVIDER_ID, str(example(INT8)), "forward", config, None)
    assert res.error == "", res.error
    values = {k: v.value for k, v in res.result.results.items()}
    for node, want in _expected(metric).items():
        assert values[node] == pytest.approx(min(want, INF_DB), rel=1e-5), (node, values)
    groups = [k for k in values if k.endswith("___group___")]
    assert len(groups) == 3  # every partition's group: its outputs' worst


def test_provider_says_what_is_missing() -> None:
    provider = PteNumericsNodeData()
    pte = str(example(INT8))
    res = provider.run(PROVIDER_ID, pte, "forward", {}, None)
    assert "give the reference program's path" in res.error
    res = provider.run(PROVIDER_ID, pte, "forward", {"reference": "/nonexistent.pte"}, None)
    assert "cannot open" in res.error
    res = provider.run(PROVIDER_ID, pte, "forward", {"reference": pte, "threshold": "x"}, None)
    assert "threshold: not a number" in res.error
    # The ETRecord graph is a choice too (opt-in: it runs the graph); its rows compare here.
    res = provider.run(PROVIDER_ID, pte, "forward", {"against": VS_AOT}, None)
    assert res.error == "" and res.result.results


@pytest.mark.slow
def test_provider_through_model_explorer() -> None:
    pte = str(example(INT8).resolve())
    with model_explorer_server() as server:
        resp = send_command(
            server,
            {
                "extensionId": PROVIDER_ID,
                "cmdId": "run",
                "modelPath": pte,
                "graphId": "forward",
                "configValues": {"reference": str(example(FP32).resolve())},
            },
        )
        assert resp.get("error", "") == "", resp
        results = resp["result"]["results"]
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
    drawn = {n["id"] for n in forward["nodes"]}
    instructions = {k for k in results if not k.endswith("___group___")}
    assert instructions and instructions <= drawn
    for node, want in _expected("snr").items():
        assert results[node]["value"] == pytest.approx(want, rel=1e-5)
