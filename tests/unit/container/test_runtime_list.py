"""A runtime's operator list (`container/runtime_list.py`, `container/yaml_lite.py`) on the real
lists in examples/runtimes (ExecuTorch's pip runtime's names, `gen_oplist`'s YAML), printed or
re-written by PyYAML in other styles: read as PyYAML reads them. Broken lists:
tests/robustness/test_runtime_list_corrupt.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pte_adapter.container.runtime_list import (
    OPERATOR_LIST,
    SELECTED_OPERATORS,
    parse_runtime_list,
    read_runtime_list,
)
from tests.support.examples import EXAMPLES

RUNTIMES = EXAMPLES / "runtimes"
PIP = RUNTIMES / "pip_portable_lib.txt"
SELECTED = sorted(RUNTIMES.glob("*.selected_operators.yaml"))


def _names(path: Path = PIP) -> list[str]:
    return [x for x in path.read_text().splitlines() if x and not x.startswith("#")]


def test_the_pip_runtimes_names() -> None:
    runtime = read_runtime_list(PIP)
    assert runtime.form == OPERATOR_LIST and runtime.kernel_keys is None
    assert list(runtime.operators) == _names()
    assert "aten::avg_pool2d.out" in runtime.operators
    assert runtime.listed("aten::avg_pool3d.out") is None


@pytest.mark.parametrize("style", ["python", "json", "json_indented", "yaml_list"])
def test_the_names_printed_other_ways(style: str) -> None:
    import json

    names = _names()
    text = {
        "python": str(names),
        "json": json.dumps(names),
        "json_indented": json.dumps(names, indent=2),
        "yaml_list": yaml.safe_dump(names),
    }[style]
    assert list(parse_runtime_list(text.encode(), "x").operators) == names


@pytest.mark.parametrize("path", SELECTED, ids=[p.name for p in SELECTED])
@pytest.mark.parametrize(
    "dump",
    [
        {},
        {"indent": 4},
        {"sort_keys": False, "explicit_start": True},
        {"default_flow_style": None},
        {"allow_unicode": True, "width": 20},
    ],
)
def test_gen_oplists_yaml_reads_as_pyyaml_reads_it(path: Path, dump: dict[str, Any]) -> None:
    doc = yaml.safe_load(path.read_text())
    text = yaml.safe_dump(doc, **dump)
    runtime = parse_runtime_list(text.encode(), path.name)
    assert runtime.form == SELECTED_OPERATORS
    assert runtime.kernel_keys == doc["et_kernel_metadata"]
    assert set(runtime.operators) == set(doc["operators"])
    assert all(op.root and not op.all_overloads for op in runtime.operators.values())


def test_torchgens_defaults_for_what_an_entry_omits() -> None:
    text = "operators:\n  aten::add:\n  aten::mul.out:\n    is_root_operator: false\n"
    runtime = parse_runtime_list(text.encode(), "x")
    assert runtime.listed("aten::add.out") == runtime.operators["aten::add"]  # all overloads
    assert runtime.operators["aten::mul.out"].root is False
    assert runtime.kernel_keys == {}
