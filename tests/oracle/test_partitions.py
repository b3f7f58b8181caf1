"""Partition and fragmentation numbers, derived a second way from ExecuTorch's own deserializer."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.summary import MethodSummary, PartitionSummary
from pte_adapter.api import summarize
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, main
from tests.support.examples import example, oracle
from tests.support.oracles import instruction_runs, value_nbytes


def test_partition_counts_match_the_instruction_stream(
    example_pte: Path, oracle_cache: dict[Path, object]
) -> None:
    summary = summarize(pte_adapter.load(example_pte))
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    for m, plan in zip(summary["methods"], theirs.execution_plan, strict=True):
        runs = instruction_runs(plan)
        assert m["delegate_calls"] == dict(Counter(b for b, _ in runs if b != "CPU"))
        assert m["cpu_islands"] == sum(b == "CPU" for b, _ in runs)
        assert [p["backend"] for p in m["partitions"]] == [b for b, _ in runs]
        kernels = Counter(
            f"{plan.operators[c.op_index].name}.{plan.operators[c.op_index].overload}".rstrip(".")
            for b, calls in runs
            if b == "CPU"
            for c in calls
            if type(c).__name__ == "KernelCall"
        )
        assert Counter({**m["cpu_compute_ops"], **m["cpu_glue_ops"]}) == kernels
        assert m["cpu_kernel_calls"] == sum(kernels.values())
        # Partitions are numbered per backend in execution order.
        seen: Counter[str] = Counter()
        for p in m["partitions"]:
            seen[p["backend"]] += 1
            assert str(seen[p["backend"]]) in p["name"]


def _tensors(plan: Any, v: int) -> list[int]:
    """A value's tensors: itself, or a (optional) tensor list's items."""
    val = plan.values[v].val
    kind = type(val).__name__
    if kind == "Tensor":
        return [v]
    if kind in ("TensorList", "OptionalTensorList"):
        return [int(i) for i in val.items if int(i) >= 0]
    return []


@dataclass
class _Recount:
    """Crossings recounted from the oracle's instruction stream (see the test below)."""

    plan: Any
    backend_of: dict[int | str, str]
    writers: dict[int, list[int | str]] = field(default_factory=dict)
    counted: set[tuple[int, str, int | str]] = field(default_factory=set)
    crossings: Counter[str] = field(default_factory=Counter)
    crossing_bytes: Counter[str] = field(default_factory=Counter)
    handoffs: Counter[str] = field(default_factory=Counter)
    handoff_bytes: Counter[str] = field(default_factory=Counter)
    bytes_in: Counter[int | str] = field(default_factory=Counter)
    bytes_out: Counter[int | str] = field(default_factory=Counter)

    def read(self, value: int, receiver: int | str) -> None:
        for t in _tensors(self.plan, value):
            for w in self.writers.get(t, []):  # nobody wrote a constant: it does not cross
                src, dst = self.backend_of[w], self.backend_of[receiver]
                direction = f"{src}→{dst}"
                if w == receiver or src == dst == "CPU" or (t, direction, receiver) in self.counted:
                    continue
                self.counted.add((t, direction, receiver))
                n = value_nbytes(self.plan, t)
                handoff = src != "CPU" and dst != "CPU"
                (self.handoffs if handoff else self.crossings)[direction] += 1
                (self.handoff_bytes if handoff else self.crossing_bytes)[direction] += n
                self.bytes_in[receiver] += n
                self.bytes_out[w] += n

    def write(self, value: int, writer: int | str) -> None:
        for t in [*_tensors(self.plan, value), value]:
            self.writers[t] = [writer]


def test_boundary_crossings_and_bytes(example_pte: Path, oracle_cache: dict[Path, object]) -> None:
    """Recount crossings from the oracle's instruction stream by docs/partitions.md's definition:
    data reads only (kernel and delegate inputs, method outputs), moves looked through, each tensor
    once per direction per receiving partition (the caller is one receiver), bytes likewise."""
    program = pte_adapter.load(example_pte)
    summary = summarize(program)
    theirs: Any = oracle(example_pte, oracle_cache).program  # type: ignore[attr-defined]
    for method, m, plan in zip(
        program.methods, summary["methods"], theirs.execution_plan, strict=True
    ):
        runs = instruction_runs(plan)
        rc = _Recount(plan, {"input": "CPU", "output": "CPU"})
        rc.backend_of.update({r: backend for r, (backend, _) in enumerate(runs)})
        for v in plan.inputs:
            rc.write(v, "input")
        for r, (_, calls) in enumerate(runs):
            for call in calls:
                kind = type(call).__name__
                if kind == "DelegateCall":
                    n_in = method.delegates[call.delegate_index].decoded.num_inputs
                    assert n_in is not None, "payload must give the I/O split"
                    for v in call.args[:n_in]:
                        rc.read(v, r)
                    for v in call.args[n_in:]:
                        rc.write(v, r)
                elif kind == "KernelCall":
                    result = call.args[-1]
                    outs = {result, *_tensors(plan, result)}
                    for v in call.args:
                        if v not in outs:
                            rc.read(v, r)
                    rc.write(result, r)
                elif kind == "MoveCall":  # looked through: the moved value keeps its writers
                    rc.writers[call.move_to] = list(rc.writers.get(call.move_from, []))
        for v in plan.outputs:
            rc.read(v, "output")
        assert m["crossings"] == dict(rc.crossings)
        assert m["crossing_bytes"] == dict(rc.crossing_bytes)
        assert m["handoffs"] == dict(rc.handoffs)
        assert m["handoff_bytes"] == dict(rc.handoff_bytes)
        assert [p["bytes_in"] for p in m["partitions"]] == [
            rc.bytes_in[r] for r in range(len(runs))
        ]
        assert [p["bytes_out"] for p in m["partitions"]] == [
            rc.bytes_out[r] for r in range(len(runs))
        ]


def test_fully_delegated_mobilenet() -> None:
    path = example("mv2_ethosu85_full")
    program = pte_adapter.load(path)
    m = summarize(program)["methods"][0]
    plan: Any = oracle(path).program.execution_plan[0]  # type: ignore[attr-defined]
    runs = instruction_runs(plan)
    assert [b for b, _ in runs] == ["CPU", "EthosUBackend", "CPU"]
    kernels = [plan.operators[c.op_index].name for b, calls in runs if b == "CPU" for c in calls]
    # The CPU only converts at the edges: one quantize in, one dequantize out.
    assert kernels == [
        "quantized_decomposed::quantize_per_tensor",
        "quantized_decomposed::dequantize_per_tensor",
    ]
    assert m["delegate_calls"] == {"EthosUBackend": 1}
    assert (m["cpu_compute_calls"], m["cpu_glue_calls"]) == (0, 2)
    npu = m["partitions"][1]
    # inner_ops are the decoded NPU operations (checked against Vela in test_ethosu.py).
    inner = program.methods[0].delegates[0].decoded.stats["npu_ops"]
    assert npu["inner_ops"] == inner
    assert m["delegated_share_by_inner_ops"] == round(inner / (inner + 2), 4)
    assert m["delegated_share_by_instructions"] == round(1 / 3, 4)


@pytest.mark.parametrize(
    ("name", "npu_partitions"), [("mv2_lrn_ethosu85", 2), ("mv2_lrn2_ethosu85", 3)]
)
def test_lrn_fragments_the_npu_graph(name: str, npu_partitions: int) -> None:
    path = example(name)
    m = summarize(pte_adapter.load(path))["methods"][0]
    plan: Any = oracle(path).program.execution_plan[0]  # type: ignore[attr-defined]
    runs = instruction_runs(plan)
    assert sum(b == "EthosUBackend" for b, _ in runs) == npu_partitions
    assert m["delegate_calls"] == {"EthosUBackend": npu_partitions}
    # The LRN decomposition runs on the CPU between NPU partitions: avg_pool3d is its core, one
    # per LRN, in each CPU island between two NPU partitions.
    between = [p for p in m["partitions"][1:-1] if p["backend"] == "CPU"]
    assert len(between) == npu_partitions - 1
    for p in between:
        assert p["compute_ops"] == {"aten::avg_pool3d.out": 1}
    assert m["cpu_compute_ops"] == {"aten::avg_pool3d.out": npu_partitions - 1}


def test_summary_json_is_stable_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("mv2_lrn_ethosu85")
    assert main(["summary", str(path), "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(json.dumps(summarize(pte_adapter.load(path))))
    method = data["methods"][0]
    assert set(data) == {
        "file",
        "file_size",
        "etrecord",
        "bundle",
        "methods",
        "constant_methods",
        "problems",
        "fit",
        "needs",
    }
    assert set(method) == set(MethodSummary.__dataclass_fields__) | {"what_if", "numerics"}
    assert set(method["partitions"][0]) == set(PartitionSummary.__dataclass_fields__)
    assert main(["summary", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "NPU partition 2 (EthosUBackend)" in text and "aten::avg_pool3d" in text


def test_check_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    full, lrn = str(example("mv2_ethosu85_full")), str(example("mv2_lrn_ethosu85"))
    assert (
        main(
            [
                "check",
                full,
                "--backend",
                "EthosUBackend",
                "--max-partitions",
                "1",
                "--max-cpu-ops",
                "0",
            ]
        )
        == EXIT_OK
    )
    assert (
        main(["check", lrn, "--backend", "EthosUBackend", "--max-partitions", "1"])
        == EXIT_CHECK_FAILED
    )
    err = capsys.readouterr().err.strip().splitlines()
    fails = [line for line in err if not line.startswith("  why ")]  # why: issue 13
    assert len(fails) == 1 and "EthosUBackend partitions > 1" in fails[0]
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
