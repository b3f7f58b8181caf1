"""Run-time dependencies are what the adapter really imports: Model Explorer, nothing else."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.examples import EXAMPLES, ROOT, example


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


# What serves only a side file, or only `summarize` and `size`: a conversion of a program without
# side files imports none of it (issue 49); each group is imported once its file (or API) is used.
SIDE_FILE_MODULES = {
    "ptd": ["container.ptd"],
    "etrecord": ["container.etrecord", "container.export_json"],
    "etdump": [
        "container.etdump",
        "container._generated.etdump_schema",
        "analysis.profile.join",
        "analysis.profile.measure",
        "analysis.profile.summary",
        "analysis.profile.drift",
        "analysis.profile.drift_where",
        "analysis.profile.stats",
        "analysis.profile.report_types",
    ],
    "bundle": [
        "container.bundle",
        "container._generated.bundled_program_schema",
        "analysis.bundle",
    ],
    "numerics": [
        "api.numerics",
        "analysis.numerics",
        "analysis.numerics.aot",
        "analysis.numerics.rows",
        "container.debug_buffer",
    ],
    "summary": [
        "render.summary_json",
        "render.fit_report",
        "render.ops_report",
        "analysis.boards",
        "analysis.size",
        "analysis.size_constants",
        "analysis.bundle_size",
    ],
}

_SIDE_FILE_STEPS = """
import json, sys
from pte_adapter.main import PteAdapter  # as Model Explorer imports the adapter
groups = json.loads(sys.argv[1])
def step(use):
    use()
    print(json.dumps(sorted(g for g, mods in groups.items()
                            if any("pte_adapter." + m in sys.modules for m in mods))))
alone, examples = sys.argv[2:4]
step(lambda: [PteAdapter().convert(f"{alone}/{n}", {}) for n in ("a.pte", "b.pte")])
step(lambda: PteAdapter().convert(f"{examples}/mv2_ethosu85_ptd.pte", {}))
step(lambda: PteAdapter().convert(f"{examples}/mv2_lrn_ethosu85.pte", {}))
step(lambda: PteAdapter().convert(f"{examples}/mv2_xnnpack_int8.pte", {}))
step(lambda: PteAdapter().convert(f"{examples}/bundle_ethosu55.bpte", {}))
import pte_adapter
step(lambda: pte_adapter.open_analysis(f"{examples}/numerics_portable.pte",
                                       numerics=pte_adapter.NumericsOptions()))
result = pte_adapter.analyse(pte_adapter.load(f"{alone}/a.pte"))
step(lambda: (pte_adapter.summarize(result), result.size()))
"""


def test_a_program_without_side_files_never_imports_their_readers(tmp_path: Path) -> None:
    """`import pte_adapter.main` and converting programs alone (an XNNPACK and an Ethos-U one,
    copied without their ETDump, ETRecord and `.tosa` files) import none of the modules that serve
    only side files; with its `.ptd`, ETRecord, ETDump, bundle, the numeric gap and `summarize`
    each group is imported (so the check can fail), one at a time, in a fresh interpreter."""
    shutil.copy(example("mv2_xnnpack_int8"), tmp_path / "a.pte")
    shutil.copy(example("mv2_lrn_ethosu85"), tmp_path / "b.pte")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _SIDE_FILE_STEPS,
            json.dumps(SIDE_FILE_MODULES),
            str(tmp_path),
            str(EXAMPLES),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    seen = [json.loads(line) for line in out.stdout.splitlines()]
    order = ["ptd", "etrecord", "etdump", "bundle", "numerics", "summary"]
    assert seen == [sorted(order[:i]) for i in range(len(order) + 1)]
