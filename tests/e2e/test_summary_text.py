"""`summary` says a thing once (issue 48 part 5): a problem several partitions share is one line per
method naming them, the what-if comes before the estimate, and each partition's estimate detail
waits for `--verbose`, while the JSON keeps everything per partition."""

from __future__ import annotations

import json
import re

import pytest

from pte_adapter.cli import EXIT_OK, main
from tests.support.examples import example

# 11 Ethos-U55 partitions; its artifacts folder holds .tosa files for only some of them.
FRAGMENTED = "whatif_mv2_residual_cpu_ethosu55"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["summary", str(example(FRAGMENTED)), *args]) == EXIT_OK
    return capsys.readouterr().out


def test_a_shared_problem_is_said_once_naming_its_partitions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = json.loads(_run(capsys, "--json"))
    text = _run(capsys)
    by_problem: dict[str, list[int]] = {}
    for p in data["methods"][0]["partitions"]:
        for problem in p["problems"]:
            by_problem.setdefault(problem, []).append(p["index"])
    shared = {problem: rows for problem, rows in by_problem.items() if len(rows) > 1}
    assert len(shared) == 2 and sum(map(len, shared.values())) == 7  # 5 without a file, 2 with two
    for problem, rows in shared.items():
        (line,) = [ln for ln in text.splitlines() if problem in ln]
        assert line == f"  problem (partitions {', '.join(map(str, rows))}): {problem}"
    assert "         problem:" not in text  # none left under a partition's row


def test_the_what_if_leads_and_the_estimate_detail_waits_for_verbose(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _run(capsys)
    verbose = _run(capsys, "--verbose")
    assert text.index("  what if (all)") < text.index("  NPU estimate")
    detail = re.compile(r"^         estimate ", re.M)
    assert not detail.search(text)
    assert len(detail.findall(verbose)) == 11  # every partition's notes (the U55's transposes)
    assert [ln for ln in verbose.splitlines() if not detail.match(ln)] == text.splitlines()
