"""Run-time dependencies are what the adapter really imports: Model Explorer, nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.examples import ROOT, example


def test_runtime_dependencies_are_model_explorer_only() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["dependencies"]] == ["ai-edge-model-explorer"]
    # The official flatbuffers package is only a test tool (building hostile FlatBuffers).
    assert any(d.startswith("flatbuffers") for d in project["optional-dependencies"]["test"])


def test_loading_and_summarising_import_no_flatbuffers_torch_or_executorch() -> None:
    code = (
        "import sys\n"
        "from pte_adapter.api import load\n"
        "from pte_adapter.api import summarize\n"
        f"summarize(load({str(example('mv2_lrn_ethosu85'))!r}))\n"
        f"summarize(load({str(example('mv2_ethosu85_ptd'))!r}))\n"
        "print(sorted(m for m in ('flatbuffers', 'torch', 'executorch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_program_without_tosa_never_imports_the_tosa_reader() -> None:
    """The TOSA reader and its generated schema are the package's largest import: a program
    with no TOSA to read (no TOSABackend payload, no sidecar `.tosa`) opens without them, and one
    with sidecars does import them (so the check can fail)."""
    code = (
        "import sys\n"
        "from pte_adapter.explorer.convert import convert_path\n"
        "convert_path(sys.argv[1])\n"
        "print('pte_adapter.delegates.tosa.reader' in sys.modules)\n"
    )
    for name, expected in (
        ("undelegated", "False"),
        ("mv2_xnnpack_int8", "False"),
        ("mv2_lrn_ethosu85", "True"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", code, str(example(name))],
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == expected, name
