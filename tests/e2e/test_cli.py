"""The command line a newcomer meets: `check` never passes vacuously, clear usage errors, --version."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.summary import MethodSummary
from pte_adapter.api import summarize
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, main
from pte_adapter.render.facts import method_facts
from tests.support.examples import EXAMPLES, ROOT, example, oracle

CORTEX_M = "convnet_cortex_m_ethosu85"
LLM = "tiny_llama_xnnpack"


def _oracle_cpu_kernels(path: Path) -> Counter[str]:
    plan: Any = oracle(path).program.execution_plan[0]  # type: ignore[attr-defined]
    names: Counter[str] = Counter()
    for chain in plan.chains:
        for ins in chain.instructions:
            call = ins.instr_args
            if type(call).__name__ == "KernelCall":
                op = plan.operators[call.op_index]
                names[f"{op.name}.{op.overload}" if op.overload else op.name] += 1
    return names


def test_cortex_m_kernels_are_compute_not_glue(capsys: pytest.CaptureFixture[str]) -> None:
    """Arm's CPU fallback runs a Linear as cortex_m::quantized_linear: that is CPU compute, so a
    gate for 'nothing computes on the CPU' must fail (it passed while glue was 'contains
    quantize')."""
    path = example(CORTEX_M)
    kernels = _oracle_cpu_kernels(path)
    assert kernels == Counter(
        {
            "cortex_m::quantize_per_tensor.out": 1,
            "cortex_m::quantized_linear.out": 1,
            "cortex_m::dequantize_per_tensor.out": 1,
        }
    )
    m = summarize(pte_adapter.load(path))["methods"][0]
    assert m["cpu_compute_ops"] == {"cortex_m::quantized_linear.out": 1}
    assert m["cpu_glue_ops"] == {
        "cortex_m::dequantize_per_tensor.out": 1,
        "cortex_m::quantize_per_tensor.out": 1,
    }
    assert main(["check", str(path), "--max-cpu-ops", "0"]) == EXIT_CHECK_FAILED
    assert "cortex_m::quantized_linear.out ×1" in capsys.readouterr().err


def test_check_without_a_limit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(example("mv2_ethosu85_full"))]) == EXIT_USAGE
    assert "no limit given" in capsys.readouterr().err
    # Even with a backend: naming a backend is not a limit.
    assert (
        main(["check", str(example("mv2_ethosu85_full")), "--backend", "EthosUBackend"])
        == EXIT_USAGE
    )


def test_check_of_a_method_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("two_methods")
    names = [m.name for m in pte_adapter.load(path).methods]
    assert main(["check", str(path), "--max-partitions", "0", "--method", "nope"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no method 'nope'" in err and all(n in err for n in names)
    assert main(["check", str(path), "--max-partitions", "0", "--method", names[0]]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{names[0]}: 0 delegate partitions")
    assert not any(line.startswith(f"{names[1]}:") for line in out.splitlines())


def test_check_reports_a_backend_the_program_does_not_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = example("mv2_xnnpack_int8")
    assert (
        main(["check", str(path), "--backend", "EthosUBackend", "--max-partitions", "1"]) == EXIT_OK
    )
    captured = capsys.readouterr()
    assert "forward: 0 EthosUBackend partitions" in captured.out
    assert "no EthosUBackend partitions (delegates it uses: XnnpackBackend)" in captured.err
    # ... and a minimum turns that into a failure.
    assert (
        main(["check", str(path), "--backend", "EthosUBackend", "--min-partitions", "1"])
        == EXIT_CHECK_FAILED
    )
    assert "FAIL forward: 0 EthosUBackend partitions < 1" in capsys.readouterr().err


def test_check_lists_every_limit_exceeded(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("mv2_lrn_ethosu85")
    assert (
        main(["check", str(path), "--max-partitions", "1", "--max-cpu-islands", "1"])
        == EXIT_CHECK_FAILED
    )
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if not line.startswith("  why ")] == [
        "FAIL forward: 2 delegate partitions > 1",
        "FAIL forward: 3 CPU islands > 1",
    ]
    # Then the CPU op that splits the NPU graph, its layer and the partitioner rule (issue 13).
    assert lines[2:] == [
        "  why aten::avg_pool3d.out in features.4 (LocalResponseNorm): aten.avg_pool3d: not "
        "supported by the Arm backend for TOSA-1.0+INT+int16+int4+cf (in no operator list or "
        "registered check) — ExecuTorch 1.5.1 rules"
    ]


def test_export_to_a_missing_folder_or_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(example("cond"))
    assert main(["export", path, "-o", str(tmp_path / "missing" / "g.json")]) == EXIT_USAGE
    assert "does not exist" in capsys.readouterr().err
    assert main(["export", path, "-o", str(tmp_path)]) == EXIT_USAGE
    assert "is a directory" in capsys.readouterr().err
    assert main(["export", path, "-o", str(tmp_path / "g.json")]) == EXIT_OK
    assert json.loads((tmp_path / "g.json").read_text())["graphs"]


def test_export_writes_what_the_adapter_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`export` makes its graphs as the adapter does (explorer/convert.py), cycle collector paused
    while the program is opened and analysed (issue 25), and as it was after."""
    import dataclasses
    import gc

    import pte_adapter.api
    from pte_adapter.explorer.convert import convert_path

    real = pte_adapter.api.open_analysis
    collecting: list[bool] = []

    def watched(*args: Any, **kwargs: Any) -> pte_adapter.api.ProgramAnalysis:
        collecting.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(pte_adapter.api, "open_analysis", watched)
    path = example("cond")
    assert gc.isenabled()
    assert main(["export", str(path), "-o", str(tmp_path / "g.json")]) == EXIT_OK
    assert collecting == [False] and gc.isenabled()
    written = json.loads((tmp_path / "g.json").read_text())
    served = [dataclasses.asdict(g) for g in convert_path(path)]
    assert written == {"label": path.name, "graphs": json.loads(json.dumps(served))}


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"pte-adapter {pte_adapter.__version__}"


@pytest.mark.parametrize(
    ("side_file", "what"),
    [
        ("mv2_u85_weights.ptd", "external data file (.ptd)"),
        ("mv2_tosa_artifacts/output_tag0_TOSA-1.0+INT.tosa", "TOSA flatbuffer (.tosa)"),
    ],
)
def test_a_side_file_is_named_for_what_it_is(
    side_file: str, what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = EXAMPLES / side_file
    assert path.exists()
    assert main(["summary", str(path)]) == EXIT_BAD_FILE
    assert what in capsys.readouterr().err


def test_one_tensor_is_singular(capsys: pytest.CaptureFixture[str]) -> None:
    path = example(CORTEX_M)
    assert main(["summary", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "CPU→EthosUBackend 1 tensor / " in text
    assert "1 tensors" not in text


def test_docs_document_every_json_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of `summary --json` keys in docs/json.md names exactly the keys the JSON has (a
    what-if's `summarised` islands with the limit lowered: a method needs thousands of them)."""
    import pte_adapter.analysis.what_if as what_if_module

    page = (ROOT / "docs" / "json.md").read_text()
    section = page.split("\n## `summary --json` keys\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    method_keys = set(MethodSummary.__dataclass_fields__)
    data = summarize(pte_adapter.load(example("mv2_lrn_ethosu85")))
    partition_keys = set(data["methods"][0]["partitions"][0])
    bundle = summarize(pte_adapter.load(ROOT / "examples" / "bundle_ethosu55.bpte"))["bundle"]
    assert data["bundle"] is None and bundle is not None
    constants = summarize(pte_adapter.load(example(LLM)))["constant_methods"]
    tensor_keys = {k for v in constants.values() if isinstance(v, dict) for k in v}
    assert tensor_keys  # the LLM example returns constant tensors
    what_if = summarize(pte_adapter.load(example("mv2_residual_cpu_ethosu85")))["methods"][0]
    what_if_keys = {"what_if"} | _keys(what_if["what_if"])
    assert what_if["what_if"]["all"] is not None
    monkeypatch.setattr(what_if_module, "MAX_ISLAND_SCENARIOS", 0)
    summarised = summarize(pte_adapter.load(example("mv2_residual_cpu_ethosu85")))["methods"][0]
    assert summarised["what_if"]["summarised"]["islands"]
    what_if_keys |= _keys(summarised["what_if"])
    assert documented == (
        set(data)
        | method_keys
        | partition_keys
        | _keys(bundle)
        | tensor_keys
        | what_if_keys
        | {"numerics"}  # its keys: the `numerics --json` table (tests/e2e/test_numerics_cli.py)
    )


def _keys(data: object) -> set[str]:
    """Every key of nested objects and lists."""
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def test_summary_of_a_corrupt_side_ptd_still_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `.ptd` beside the `.pte` that cannot be read is a problem of the program, shown in the
    text, the JSON and the Model Explorer attributes; the `.pte` still opens."""
    src = example("mv2_ethosu85_ptd")
    shutil.copy(src, tmp_path / src.name)
    ptd = EXAMPLES / "mv2_u85_weights.ptd"
    data = bytearray(ptd.read_bytes())
    data[8:12] = b"XXXX"  # break the FlatTensor header magic
    (tmp_path / ptd.name).write_bytes(bytes(data))
    program = pte_adapter.load(tmp_path / src.name)
    assert len(program.problems) == 1
    assert program.problems[0].startswith("external data file mv2_u85_weights.ptd: ")
    assert "bad FlatTensor header" in program.problems[0]
    assert summarize(program)["problems"] == program.problems
    result = pte_adapter.analyse(program)  # the Model Explorer graph attribute
    facts = method_facts(result, result.methods[0])
    assert facts["file_problems"] == program.problems[0]
    assert main(["summary", str(tmp_path / src.name)]) == EXIT_OK
    assert f"problem: {program.problems[0]}" in capsys.readouterr().out
    assert main(["summary", str(tmp_path / src.name), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["problems"] == program.problems


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """`pte-adapter summary --json model.pte | head -1`: the pipe closes while the command still
    writes (its JSON is larger than a pipe holds); no "internal error", no traceback, exit 0."""
    pte = example("tiny_gpt_xnnpack")
    cmd = [sys.executable, "-c", "import sys; from pte_adapter.cli import main; sys.exit(main())"]
    with subprocess.Popen(
        [*cmd, "summary", "--json", str(pte)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline() == b"{\n"
        child.stdout.close()  # what `head -1` does after its line
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert "internal error" not in err and "Traceback" not in err, err
    assert code == EXIT_OK, (code, err)
