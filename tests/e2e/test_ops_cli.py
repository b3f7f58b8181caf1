"""`pte-adapter ops`: what a program needs, the selective-build list, the check against a runtime
(exit codes, what is named), bad input as one clear line, and the same needs in `summary`, the
report, `check` and Model Explorer's panels. (Against ExecuTorch's own tools:
tests/oracle/test_needs.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pte_adapter.api import open_analysis
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, main
from pte_adapter.render.html.page import report_html
from pte_adapter.render.plan.program import program_plan
from tests.support.examples import EXAMPLES, ROOT, example, oracle

LRN = "mv2_lrn_ethosu85"  # an Ethos-U program whose LRN stayed on the CPU as avg_pool3d
PIP = EXAMPLES / "runtimes" / "pip_portable_lib.txt"
PIP_BACKENDS = "QnnBackend,OpenvinoBackend,XnnpackBackend"
LRN_LIST = EXAMPLES / "runtimes" / f"{LRN}.selected_operators.yaml"


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main(["ops", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_what_the_lrn_program_needs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, example(LRN))
    assert code == EXIT_OK
    assert out.startswith(f"{example(LRN)} needs 3 CPU kernels (5 kernel keys), 1 backend")
    assert "aten::avg_pool3d.out  1 call" in out
    assert "key v1/6;0,1,2,3,4|6;0,1,2,3,4|6;0,1,2,3,4 (float32 ×3)" in out
    assert "forward #3 in CPU island 2: features.4 (LocalResponseNorm)" in out
    assert "EthosUBackend  2 delegates, 2 calls" in out


def test_against_the_pip_runtime_both_are_missing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, example(LRN), "--runtime-ops", PIP, "--runtime-backends", PIP_BACKENDS
    )
    assert code == EXIT_CHECK_FAILED
    assert "missing kernel aten::avg_pool3d.out: not in pip_portable_lib.txt" in out
    assert "needed by forward #3 in CPU island 2: features.4 (LocalResponseNorm)" in out
    assert "missing backend EthosUBackend: not among the runtime's backends" in out
    assert "quantize_per_tensor" not in out.split("against the runtime")[1]  # the pip one has it


def test_a_runtime_built_for_the_program_loads_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, example(LRN), "--runtime-ops", LRN_LIST, "--runtime-backends", "EthosUBackend"
    )
    assert code == EXIT_OK and out.rstrip().endswith(
        "OK: the runtime has every kernel and backend checked"
    )
    # What is not given is not checked, and said.
    code, out, _ = _run(capsys, example(LRN), "--runtime-ops", LRN_LIST)
    assert code == EXIT_OK and "backends not checked" in out


def test_a_kernel_listed_only_for_other_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime built for the LRN program has dequantize_per_tensor for 5-D and 2-D tensors; a
    4-D call is named with both builds that fit the list."""
    code, out, _ = _run(
        capsys, example("convnet_sram_only_ethosu55"), "--runtime-ops", LRN_LIST, "--json"
    )
    assert code == EXIT_CHECK_FAILED
    (missing,) = json.loads(out)["missing_operators"]
    assert missing["name"] == "quantized_decomposed::dequantize_per_tensor.out"
    assert missing["reason"] == "other_kernel_keys"
    assert missing["missing_kernel_keys"] == ["v1/1;0,1,2,3|6;0,1,2,3|6;0,1,2,3"]
    listed = _yaml_keys(LRN_LIST)["quantized_decomposed::dequantize_per_tensor.out"]
    assert missing["runtime_kernel_keys"] == sorted(listed)
    assert missing["missing_dtypes"] == []  # only the rank differs: int8 and float32 are there
    assert "refused at load" in missing["text"] and "dtype-selective" in missing["text"]


def _yaml_keys(path: Path) -> dict[str, list[str]]:
    import yaml

    keys: dict[str, list[str]] = yaml.safe_load(path.read_text())["et_kernel_metadata"]
    return keys


def test_everything_delegated_still_needs_its_backend(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, example("mv2_xnnpack_fp32"), "--yaml")
    assert code == EXIT_OK and "operators: {}" in out and "et_kernel_metadata: {}" in out
    assert (
        err
        == "note: no CPU kernel is called: the list is empty; the runtime still needs XnnpackBackend\n"
    )
    code, out, _ = _run(capsys, example("mv2_xnnpack_fp32"))
    assert out.startswith(
        f"{example('mv2_xnnpack_fp32')} needs no CPU kernel, 1 backend (XnnpackBackend)"
    )
    code, _, _ = _run(capsys, example("mv2_xnnpack_fp32"), "--runtime-backends", "")
    assert code == EXIT_CHECK_FAILED


def test_a_custom_operator_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    path = example("classifier_cortex_m_ethosu85")
    code, out, err = _run(capsys, path, "--select-ops-list")
    assert (
        out.strip()
        == "cortex_m::dequantize_per_tensor.out,cortex_m::quantize_per_tensor.out,cortex_m::quantized_linear.out"
    )
    assert (
        err.count(
            "is a custom operator: the runtime has it only if it links Arm's Cortex-M kernels"
        )
        == 3
    )
    code, out, _ = _run(capsys, path, "--runtime-ops", PIP, "--json")
    data = json.loads(out)
    assert code == EXIT_CHECK_FAILED and data["missing_backends"] is None
    assert {m["name"] for m in data["missing_operators"]} == {
        op["name"] for op in data["operators"]
    }
    assert all(m["custom"] and "Cortex-M" in m["text"] for m in data["missing_operators"])


def test_two_programs_merge(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, example("cond"), example("undelegated"), "--json")
    data = json.loads(out)
    assert data["files"] == [str(example("cond")), str(example("undelegated"))]
    add = next(op for op in data["operators"] if op["name"] == "aten::add.out")
    assert {c["file"] for c in add["calls"]} == set(data["files"])
    assert data["kernel_metadata"]["aten::add.out"] == add["kernel_keys"]


BAD_LISTS = {
    "binary": (example("cond").read_bytes(), "not UTF-8"),
    "json_object": (b'{"operators": ["aten::add.out"]}', "a flow mapping (JSON object)"),
    "not_a_list": (b"model: mv2\nepochs: 3\n", "not a selected_operators.yaml"),
    "empty": (b"", "empty: it names no operator"),
    "empty_list": (b"[]\n", "an empty list"),
    "script": (b"import executorch\nprint(1)\n", "line 1: not an operator name"),
}


@pytest.mark.parametrize("name", sorted(BAD_LISTS))
def test_a_bad_runtime_list_is_one_line(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, says = BAD_LISTS[name]
    listed = tmp_path / "runtime.txt"
    listed.write_bytes(data)
    code, out, err = _run(capsys, example(LRN), "--runtime-ops", listed)
    assert code == EXIT_BAD_FILE and out == ""
    assert err.count("\n") == 1 and err.startswith("pte-adapter: runtime list runtime.txt: ")
    assert says in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--runtime-backends", "Xnnpack Backend"], "not backend ids"),
        ([str(example("cond")), "--etrecord", "x.etrecord"], "give one program"),
    ],
)
def test_usage_errors(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, example(LRN), *argv)
    assert code == EXIT_USAGE and says in err and err.count("\n") == 1


def test_one_output_form_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["ops", str(example(LRN)), "--json", "--yaml"])
    assert e.value.code == EXIT_USAGE and "not allowed with" in capsys.readouterr().err


def test_json_keys_are_documented(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/json.md's `ops` table has a row for each key of the JSON and its operators, calls and
    delegates; the keys of `runtime` and of each missing entry are named in their row."""
    page = (ROOT / "docs" / "json.md").read_text()
    section = page.split("\n## `ops` keys\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| (.*) \|$", section, re.MULTILINE))
    argv = [example(LRN), "--runtime-ops", PIP, "--runtime-backends", "", "--json"]
    data = json.loads(_run(capsys, *argv)[1])
    assert data["missing_operators"] and data["missing_backends"] and data["operators"]
    op, delegate = data["operators"][0], data["delegates"][0]
    assert set(rows) == set(data) | set(op) | set(op["calls"][0]) | set(delegate)
    for row, value in [
        ("runtime", data["runtime"]),
        ("missing_operators", data["missing_operators"][0]),
        ("missing_backends", data["missing_backends"][0]),
    ]:
        assert all(f"`{k}`" in rows[row] for k in value), (row, value.keys())


def test_the_check_gate(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(example(LRN))
    assert main(["check", path, "--runtime-ops", str(PIP)]) == EXIT_CHECK_FAILED
    err = capsys.readouterr().err
    assert err.startswith("FAIL missing kernel aten::avg_pool3d.out: not in pip_portable_lib.txt")
    assert "needed by forward #3 in CPU island 2: features.4 (LocalResponseNorm)" in err
    argv = ["check", path, "--runtime-ops", str(LRN_LIST), "--runtime-backends", "EthosUBackend"]
    assert main(argv) == EXIT_OK
    out = capsys.readouterr().out
    assert "has every kernel and backend checked" in out and out.endswith("OK\n")
    assert main(["check", path]) == EXIT_USAGE
    assert "--runtime-ops, --runtime-backends" in capsys.readouterr().err


def test_summary_report_and_model_explorer_say_it(capsys: pytest.CaptureFixture[str]) -> None:
    path = example(LRN)
    assert main(["summary", str(path)]) == EXIT_OK
    line = "needs 3 CPU kernels (5 kernel keys), 1 backend (EthosUBackend)"
    assert f"\n{line} (pte-adapter ops lists them)\n" in capsys.readouterr().out
    assert main(["summary", str(path), "--json"]) == EXIT_OK
    needs = json.loads(capsys.readouterr().out)["needs"]
    assert needs == {
        "cpu_kernels": 3,
        "kernel_keys": 5,
        "operators": [
            "aten::avg_pool3d.out",
            "quantized_decomposed::dequantize_per_tensor.out",
            "quantized_decomposed::quantize_per_tensor.out",
        ],
        "backends": ["EthosUBackend"],
    }
    result = open_analysis(path, profile=False)
    html = report_html(result)
    assert "<h2>Will it load</h2>" in html and "<td>aten::avg_pool3d.out</td>" in html
    assert "features.4 (LocalResponseNorm)" in html.split("Will it load")[1]
    plan = program_plan(result)
    graph = plan.graphs[0]
    assert graph.group_attrs[""]["runtime_needs"].startswith(line.removeprefix("needs "))
    keys = {
        n.attrs["operator"]: n.attrs["kernel_key"] for n in graph.nodes if "kernel_key" in n.attrs
    }
    assert keys["aten::avg_pool3d.out"] == "v1/6;0,1,2,3,4|6;0,1,2,3,4|6;0,1,2,3,4 (float32 ×3)"
    assert len(keys) == 3


def test_the_gate_checks_one_method_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A runtime with `encode`'s kernels (as ExecuTorch's deserializer reads them) loads that
    method, not the program's other one."""
    plans = oracle(example("two_methods")).program.execution_plan  # type: ignore[attr-defined]
    encode = next(p for p in plans if p.name == "encode")
    listed = tmp_path / "encode_kernels.txt"
    listed.write_text("\n".join(f"{op.name}.{op.overload}" for op in encode.operators))
    argv = ["check", str(example("two_methods")), "--runtime-ops", str(listed)]
    assert main([*argv, "--method", "encode"]) == EXIT_OK
    assert main(argv) == EXIT_CHECK_FAILED
    assert "FAIL missing kernel aten::tanh.out" in capsys.readouterr().err
