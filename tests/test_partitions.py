"""Partition and fragmentation numbers, derived a second way from ExecuTorch's own deserializer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.summary import summarize
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, main
from pte_adapter.program import SCALAR_TYPES
from tests.conftest import example, oracle


def _oracle_runs(plan: Any) -> list[tuple[str, list[Any]]]:
    """Maximal runs of (backend id | "CPU") over the oracle's instruction stream."""
    runs: list[tuple[str, list[Any]]] = []
    for call in (x.instr_args for c in plan.chains for x in c.instructions):
        if type(call).__name__ == "DelegateCall":
            runs.append((plan.delegates[call.delegate_index].id, [call]))
        elif runs and runs[-1][0] == "CPU":
            runs[-1][1].append(call)
        else:
            runs.append(("CPU", [call]))
    return runs


def test_partition_counts_match_the_instruction_stream(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    summary = summarize(pte_adapter.load(example_pte))
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    for m, plan in zip(summary["methods"], theirs.execution_plan, strict=True):
        runs = _oracle_runs(plan)
        assert m["delegate_calls"] == dict(Counter(b for b, _ in runs if b != "CPU"))
        assert m["cpu_islands"] == sum(b == "CPU" for b, _ in runs)
        assert [p["backend"] for p in m["partitions"]] == [b for b, _ in runs]
        kernels = Counter(
            f"{plan.operators[c.op_index].name}.{plan.operators[c.op_index].overload}".rstrip(".")
            for b, calls in runs if b == "CPU" for c in calls
            if type(c).__name__ == "KernelCall"
        )
        assert Counter({**m["cpu_compute_ops"], **m["cpu_glue_ops"]}) == kernels
        assert m["cpu_kernel_calls"] == sum(kernels.values())
        # Partitions are numbered per backend in execution order.
        seen: Counter[str] = Counter()
        for p in m["partitions"]:
            seen[p["backend"]] += 1
            assert str(seen[p["backend"]]) in p["name"]


def _nbytes(plan: Any, v: int) -> int:
    t = plan.values[v].val
    n = 1
    for s in t.sizes:
        n *= s
    return int(n * SCALAR_TYPES[int(t.scalar_type)][1])


def test_boundary_crossings_and_bytes(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    """Recount crossings from the oracle: a delegate's non-constant tensor inputs that the CPU
    produced, its outputs that a CPU kernel reads or the method returns, and handoffs: inputs
    produced directly by another delegate call."""
    program = pte_adapter.load(example_pte)
    summary = summarize(program)
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    for method, m, plan in zip(program.methods, summary["methods"], theirs.execution_plan,
                               strict=True):
        if not plan.delegates:
            assert m["crossings"] == {}
            continue
        producer_backend: dict[int, str] = {v: "CPU" for v in plan.inputs}
        expected: Counter[str] = Counter()
        expected_bytes: Counter[str] = Counter()
        pending: dict[int, str] = {}  # delegate outputs not yet read by the CPU
        producer_call: dict[int, int] = {}
        handoffs: Counter[str] = Counter()
        handoff_bytes: Counter[str] = Counter()
        calls = [x.instr_args for c in plan.chains for x in c.instructions]
        for i, call in enumerate(calls):
            kind = type(call).__name__
            if kind == "DelegateCall":
                backend = plan.delegates[call.delegate_index].id
                decoded = method.delegates[call.delegate_index].decoded
                assert decoded.num_inputs is not None, "payload must give the I/O split"
                ins, outs = call.args[:decoded.num_inputs], call.args[decoded.num_inputs:]
                for v in dict.fromkeys(ins):
                    ev = plan.values[v].val
                    if type(ev).__name__ != "Tensor" or (ev.allocation_info is None and v not in plan.inputs):
                        continue  # constants do not cross
                    if producer_backend.get(v, "CPU") == "CPU":
                        expected[f"CPU→{backend}"] += 1
                        expected_bytes[f"CPU→{backend}"] += _nbytes(plan, v)
                    elif producer_call[v] != i:  # straight from another delegate call
                        key = f"{producer_backend[v]}→{backend}"
                        handoffs[key] += 1
                        handoff_bytes[key] += _nbytes(plan, v)
                for v in outs:
                    producer_backend[v] = backend
                    producer_call[v] = i
                    pending[v] = backend
            elif kind == "KernelCall":
                for v in dict.fromkeys(call.args[:-1]):
                    if v in pending:
                        expected[f"{pending[v]}→CPU"] += 1
                        expected_bytes[f"{pending[v]}→CPU"] += _nbytes(plan, v)
                        del pending[v]
                producer_backend[call.args[-1]] = "CPU"
        for v in plan.outputs:
            if v in pending:
                expected[f"{pending[v]}→CPU"] += 1
                expected_bytes[f"{pending[v]}→CPU"] += _nbytes(plan, v)
        assert m["crossings"] == dict(expected)
        assert m["crossing_bytes"] == dict(expected_bytes)
        assert m["handoffs"] == dict(handoffs)
        assert m["handoff_bytes"] == dict(handoff_bytes)


def test_fully_delegated_mobilenet() -> None:
    m = summarize(pte_adapter.load(example("mv2_ethosu85_full")))["methods"][0]
    assert m["delegate_calls"] == {"EthosUBackend": 1}
    assert m["cpu_compute_calls"] == 0
    assert m["cpu_glue_calls"] >= 1  # the quantize/dequantize at the edges
    npu = [p for p in m["partitions"] if p["backend"] == "EthosUBackend"]
    assert npu[0]["inner_ops"] and npu[0]["inner_ops"] > 10
    assert m["delegated_share_by_inner_ops"] > 0.9


@pytest.mark.parametrize(("name", "npu_partitions"), [("mv2_lrn_ethosu85", 2),
                                                      ("mv2_lrn2_ethosu85", 3)])
def test_lrn_fragments_the_npu_graph(name: str, npu_partitions: int) -> None:
    m = summarize(pte_adapter.load(example(name)))["methods"][0]
    assert m["delegate_calls"]["EthosUBackend"] >= npu_partitions
    # The LRN decomposition runs on the CPU between NPU partitions: avg_pool3d is its core.
    between = [p for p in m["partitions"][1:-1] if p["backend"] == "CPU"]
    assert between, "a CPU island must sit between NPU partitions"
    assert any(op.startswith("aten::avg_pool3d") for p in between for op in p["compute_ops"])
    assert m["crossings"]["EthosUBackend→CPU"] >= npu_partitions


def test_summary_json_is_stable_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("mv2_lrn_ethosu85")
    assert main(["summary", str(path), "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(json.dumps(summarize(pte_adapter.load(path))))
    method = data["methods"][0]
    for key in ("delegate_calls", "cpu_islands", "cpu_compute_ops", "cpu_glue_ops", "crossings",
                "crossing_bytes", "delegated_share_by_instructions", "partitions"):
        assert key in method
    assert main(["summary", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "NPU partition 2 (EthosUBackend)" in text and "aten::avg_pool3d" in text


def test_check_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    full, lrn = str(example("mv2_ethosu85_full")), str(example("mv2_lrn_ethosu85"))
    assert main(["check", full, "--backend", "EthosUBackend", "--max-partitions", "1",
                 "--max-cpu-ops", "0"]) == EXIT_OK
    assert main(["check", lrn, "--backend", "EthosUBackend", "--max-partitions", "1"]) \
        == EXIT_CHECK_FAILED
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "EthosUBackend partitions > 1" in err
    assert main(["check", lrn, "--max-cpu-ops", "0"]) == EXIT_CHECK_FAILED
    assert "aten::avg_pool3d" in capsys.readouterr().err
    bad = tmp_path / "x.pte"
    bad.write_bytes(b"not a program at all")
    assert main(["check", str(bad), "--max-partitions", "1"]) == EXIT_BAD_FILE


def test_multi_method_programs_are_reported_per_method() -> None:
    program = pte_adapter.load(example("two_methods"))
    summary = summarize(program)
    assert [m["name"] for m in summary["methods"]] == [m.name for m in program.methods]
    assert len(summary["methods"]) == 2
    for m, method in zip(summary["methods"], program.methods, strict=True):
        assert m["instructions"] == len(method.instructions)
