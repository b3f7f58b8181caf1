"""The Arm partitioner's own reasons (`partition_report.txt`) are used, and agree with ours.

The Cortex-M examples were built with the partitioner logging at INFO into its intermediates
folder, as `aot_arm_compiler.py --debug --intermediates` builds, so each has the partitioner's
`partition_report.txt`. While building, the same rejections were captured from the partitioner's
reporter itself (`<stem>.rejections.json`): that is the oracle for reading the report. Where both
the report and our rules give a reason for a kernel, they must agree; and the classifier's Linear,
kept off the NPU by an `additional_checks` entry and lowered to `cortex_m::quantized_linear`, is
never called unsupported - by the report, by the rules with the ETRecord, or by the rules alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.why import Reason
from pte_adapter.delegates.arm.partition_report import REPORT, read_partition_report
from tests.support.examples import EXAMPLES, example

CLASSIFIER = "classifier_cortex_m_ethosu85"  # two Linear layers refused by NotLinear
LRN_QDQ = "lrn_cortex_m_qdq_ethosu85"  # avg_pool3d on no operator list
WITH_REPORT = [CLASSIFIER, LRN_QDQ]

# The partitioner's kind -> the kinds our rules may give the same kernel. An additional_checks
# entry refused an operator the rules accept: they say `supported` (for a layer Arm's Cortex-M
# passes rewrote) or `check`.
AGREES = {
    "not_listed": {"not_listed"},
    "u55": {"u55"},
    "additional_check": {"supported", "check", "not_quantized_or_check"},
    "check": {"check", "rank", "int64", "not_quantized", "not_quantized_or_check", "supported"},
    "not_quantized": {"not_quantized", "not_quantized_or_check"},
}


def _reasons(path: Path, *, report: bool) -> list[Reason]:
    """The method's reasons with the ETRecord; with or without the partitioner's report."""
    etrecord = EXAMPLES / f"{path.stem}.etrecord"
    program = pte_adapter.load(path, sidecars=report, etrecord=etrecord)
    result = pte_adapter.analyse(program)
    assert result.problems == [] and result.source is not None
    return result.methods[0].reasons


@pytest.mark.parametrize("stem", WITH_REPORT)
def test_report_reads_as_the_reporter_recorded(stem: str) -> None:
    """Every row, across wrapped cells, is what WhyNoPartitionReporter was told."""
    report = read_partition_report(EXAMPLES / f"{stem}_artifacts" / REPORT, REPORT)
    (rows,) = report.rejections.values()
    captured = json.loads((EXAMPLES / f"{stem}.rejections.json").read_text())["rejections"]
    assert [(r.node, r.target, r.reason) for r in rows] == [
        (c["node"], c["target"], c["reason"]) for c in captured
    ]
    assert list(report.rejections) == ["TOSA-1.0+INT+int16+int4+cf"]


@pytest.mark.parametrize("stem", WITH_REPORT)
def test_partitioner_reasons_are_used_and_agree_with_the_rules(stem: str) -> None:
    path = example(stem)
    theirs = {r.instruction: r for r in _reasons(path, report=True)}
    ours = {r.instruction: r for r in _reasons(path, report=False)}
    assert theirs and theirs.keys() == ours.keys()
    for i, said in theirs.items():
        assert said.by == "partitioner", said.text
        assert f"(its own report, {stem}_artifacts/{REPORT})" in said.text
        assert ours[i].by == "rules"
        assert ours[i].kind in AGREES[said.kind], (said.text, ours[i].text)
        assert said.layer_operator == ours[i].layer_operator


def _linear_reasons(path: Path, **load: object) -> list[Reason]:
    result = pte_adapter.analyse(pte_adapter.load(path, **load))  # type: ignore[arg-type]
    reasons = [r for r in result.methods[0].reasons if "quantized_linear" in r.operator]
    assert reasons
    return reasons


def test_linear_kept_off_by_a_check_is_not_called_unsupported() -> None:
    """Done when: the classifier's Linear layers, refused by the user's NotLinear check."""
    path = example(CLASSIFIER)
    with_report = _linear_reasons(path)
    assert {r.kind for r in with_report} == {"additional_check"}
    assert all('"Rejected by NotLinear"' in r.text for r in with_report)
    rules = _linear_reasons(path, sidecars=False, etrecord=path.with_suffix(".etrecord"))
    assert {r.kind for r in rules} == {"supported"}
    assert all(r.text.startswith("aten.linear (run as cortex_m.quantized_linear") for r in rules)
    alone = _linear_reasons(path, sidecars=False)  # no ETRecord, no report: the rewrite table
    assert {r.kind for r in alone} == {"supported"}
    for r in with_report + rules + alone:
        assert "not supported" not in r.text and r.layer_operator == "aten.linear"
        assert "supported by the Arm backend" in r.text or r.by == "partitioner"


def test_older_cortex_m_build_without_etrecord() -> None:
    """convnet_cortex_m_ethosu85 has neither ETRecord nor report: its linear is judged as what
    the Cortex-M passes make cortex_m::quantized_linear from."""
    (r,) = _linear_reasons(example("convnet_cortex_m_ethosu85"))
    assert r.kind == "supported" and r.by == "rules"
    assert r.text.startswith(
        "cortex_m.quantized_linear (Arm's Cortex-M passes make it from aten.linear): supported by "
        "the Arm backend for TOSA-1.0+INT+int16+int4+cf; kept off the NPU by something the .pte "
        "does not record (a partitioner check such as `additional_checks`, or its quantization)"
    )


def _copy(tmp_path: Path, stem: str) -> Path:
    for p in EXAMPLES.glob(f"{stem}*"):
        target = tmp_path / p.name
        (shutil.copytree if p.is_dir() else shutil.copyfile)(p, target)
    return tmp_path / f"{stem}.pte"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: "",
        lambda text: text[: len(text) // 2],
        lambda text: text.replace("│", "|"),
        lambda text: "\x00\xff" * 1000,
        lambda text: text.replace("Node name", "Knoten"),
    ],
    ids=["empty", "truncated", "no table bars", "binary", "renamed column"],
)
def test_damaged_report_falls_back_to_the_rules(tmp_path: Path, damage: object) -> None:
    pte = _copy(tmp_path, CLASSIFIER)
    report = tmp_path / f"{CLASSIFIER}_artifacts" / REPORT
    report.write_text(damage(report.read_text()), encoding="utf-8")  # type: ignore[operator]
    result = pte_adapter.analyse(pte_adapter.load(pte))
    assert result.problems == []
    kinds = {(r.by, r.kind) for r in result.methods[0].reasons}
    assert kinds <= {("rules", "supported"), ("partitioner", "additional_check")}


def test_another_exports_report_is_not_used(tmp_path: Path) -> None:
    """The LRN example's report in the classifier's folder names no node of the classifier's
    kernels: the rules' reasons stay."""
    pte = _copy(tmp_path, CLASSIFIER)
    shutil.copyfile(
        EXAMPLES / f"{LRN_QDQ}_artifacts" / REPORT, tmp_path / f"{CLASSIFIER}_artifacts" / REPORT
    )
    reasons = pte_adapter.analyse(pte_adapter.load(pte)).methods[0].reasons
    assert {(r.by, r.kind) for r in reasons} == {("rules", "supported")}


def test_oversized_report_is_a_problem_of_the_delegate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pte_adapter.delegates.arm import partition_report

    monkeypatch.setattr(partition_report, "MAX_REPORT_BYTES", 100)
    program = pte_adapter.load(_copy(tmp_path, CLASSIFIER))
    (delegate,) = program.methods[0].delegates
    assert delegate.decoded.partitioner_report is None
    assert any("partitioner report not used" in p for p in delegate.decoded.problems)
    assert {r.by for r in pte_adapter.analyse(program).methods[0].reasons} == {"rules"}
