"""`ops --yaml` (`render/oplist_yaml.py`) for programs under names YAML would misread written plain:
PyYAML reads every name back as it was (the text is gen_oplist's byte for byte under plain names:
tests/oracle/test_needs.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pte_adapter.api import open_analysis
from pte_adapter.render.oplist_yaml import select_ops_list, selected_operators_yaml, yaml_scalar
from tests.support.examples import example

NAMES = [
    "my model: v2 #1.pte",
    "naïve-модель.pte",
    "it's.pte",
    "-dash.pte",
    "yes",
    "[list].pte",
    "tab\there.pte",
]


@pytest.mark.parametrize("name", NAMES)
def test_an_odd_program_name_reads_back(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    shutil.copyfile(example("cond"), path)
    needs = open_analysis(path, profile=False).needs
    doc = yaml.safe_load(selected_operators_yaml(needs))
    assert {op: v["debug_info"] for op, v in doc["operators"].items()} == {
        op.name: [str(path)] for op in needs.operators
    }
    assert doc["et_kernel_metadata"] == needs.kernel_metadata()


@pytest.mark.parametrize(
    "text", ["", "null", "~", "Yes", "no", "on", "123", "1.5", "a: b", "#x", "x:"]
)
def test_a_scalar_yaml_would_misread_is_quoted(text: str) -> None:
    assert yaml.safe_load(f"k: {yaml_scalar(text)}") == {"k": text}
    assert yaml_scalar(text) != text  # a plain scalar would have read as something else


def test_the_select_ops_list_is_the_called_kernels() -> None:
    needs = open_analysis(example("mv2_lrn_ethosu85"), profile=False).needs
    assert select_ops_list(needs).split(",") == [op.name for op in needs.operators if op.calls]
