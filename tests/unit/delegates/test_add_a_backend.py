"""Adding a backend is one package and one record (docs/contributing.md), and nothing else.

A toy backend package is written into a temporary folder, registered with one `Backend` record,
and a real program (xnnpack_lrn.pte, its delegate id rewritten to the toy's in a temp copy) is
opened through the real entry points: its partitions are named and coloured from the record, its
payloads decoded and drawn by the package, `size` breaks them down with its layout hook, the
partitioner reasons come from its rules hook, and its glue list counts. The last test keeps the
other half true: no module outside `backends.py` spells a backend id in code.
"""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter import backends
from pte_adapter.backends import BACKENDS, Backend
from pte_adapter.cli import main
from pte_adapter.render.model_explorer import graphs_to_json, program_graphs
from tests.support.examples import ROOT, example

TOY = "ToyNpuBackend1"  # as long as "XnnpackBackend": the rewrite keeps every offset
TOY_COLOUR = ("#fce4ec", "#ad1457")

PACKAGE = {
    "__init__.py": '''
        """A toy backend: its payload is opaque bytes; it shows their size and first word."""
        from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode, TensorInfo

        def decode(payload, ctx):
            graph = DelegateGraph(name="toy view")
            graph.tensors["in"] = TensorInfo("in", dtype="float32")
            graph.tensors["out"] = TensorInfo("out", dtype="float32")
            graph.nodes.append(OpNode("t0", "TOY_OP", "TOY_OP", ["in"], ["out"], {"bytes": str(len(payload))}))
            return DecodedDelegate(
                graphs=[graph], inner_op_count=1, stats={"toy_bytes": len(payload)},
                summary={"toy_first_word": bytes(payload[:8]).hex()},
            )

        def read_file(path):
            return decode(memoryview(path.read_bytes()), None).graphs
    ''',
    "layout.py": """
        from pte_adapter.delegates.hooks import PayloadLayout, PayloadSpan

        def payload_layout(payload, base, sources):
            return PayloadLayout([PayloadSpan("toy_header", "toy header", base, 8)])
    """,
    "partition_rules.py": """
        from pte_adapter.delegates.hooks import Verdict

        def reasons(method, delegates):
            return lambda index, op, origin: [Verdict("Toy", "not_listed", f"{op}: no toy kernel")]
    """,
}


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy package on the path, its record registered, and the rewritten program."""
    pkg = tmp_path / "toy_npu"
    pkg.mkdir()
    for name, text in PACKAGE.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    record = Backend(
        TOY,
        "Toy NPU",
        "Toy partition",
        TOY_COLOUR,
        "pink",
        decoder="toy_npu:decode",
        layout="toy_npu.layout:payload_layout",
        partition_rules="toy_npu.partition_rules:reasons",
        cpu_glue_ops=frozenset({"aten::avg_pool3d"}),
        file_reader="toy_npu:read_file",
        file_suffixes=(".toy",),
    )
    monkeypatch.setitem(BACKENDS, TOY, record)
    data = bytearray(example("xnnpack_lrn").read_bytes())
    old = b"\x0e\x00\x00\x00XnnpackBackend\x00"
    assert data.count(old) == 3
    data = data.replace(old, old[:4] + TOY.encode() + b"\x00")
    out = tmp_path / "toy.pte"
    out.write_bytes(bytes(data))
    yield out
    sys.modules.pop("toy_npu", None)
    for sub in ("layout", "partition_rules"):
        sys.modules.pop(f"toy_npu.{sub}", None)


def test_the_record_and_the_package_are_all_it_takes(toy: Path) -> None:
    result = pte_adapter.analyse(pte_adapter.load(toy))
    (m,) = result.methods
    names = [p.name for p in m.partitions.partitions]
    assert [n for n in names if n.startswith("Toy")] == [
        f"Toy partition {i} (ToyNpuBackend1)" for i in (1, 2, 3)
    ]
    s = pte_adapter.summarize(result)["methods"][0]
    toy_parts = [p for p in s["partitions"] if p["backend"] == TOY]
    assert all(p["inner_ops"] == 1 and p["delegate_stats"]["toy_bytes"] > 8 for p in toy_parts)
    # Its glue list counts: avg_pool3d is glue now; the toy rules explain the compute left.
    assert "aten::avg_pool3d.out" in s["cpu_glue_ops"]
    assert "aten::avg_pool3d.out" not in s["cpu_compute_ops"] and s["cpu_compute_ops"]
    assert s["why"] and all(r["backend"] == "Toy" for r in s["why"])
    assert {r["operator"] for r in s["why"]} == set(s["cpu_compute_ops"])


def test_it_is_drawn_and_measured(
    toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = pte_adapter.analyse(pte_adapter.load(toy))
    (graph,) = [g for g in graphs_to_json(program_graphs(result))["graphs"] if g["id"] == "forward"]
    toy_ops = [n for n in graph["nodes"] if n["label"] == "TOY_OP"]
    assert len(toy_ops) == 3
    assert all(n["namespace"].startswith("Toy partition ") for n in toy_ops)
    styles = {c["namespaceRegex"]: c["backgroundColor"] for c in graph["groupNodeConfigs"]}
    # Its groups start with its own name (render/group_facts.py adds what each holds) in its colour.
    toy_styles = [
        colour for regex, colour in styles.items() if regex.startswith("^Toy partition 1")
    ]
    assert toy_styles == [TOY_COLOUR[0]], styles
    assert "pink = Toy NPU" in graph["groupNodeAttributes"][""]["legend"]
    # `size` uses its layout hook, and every byte is still in one part.
    assert main(["size", str(toy), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["toy_header"] == 3 * 8
    assert sum(report["totals"].values()) == toy.stat().st_size


def test_a_bare_file_of_its_format_opens(toy: Path, tmp_path: Path) -> None:
    """Its record's `file_reader` and suffix are all Model Explorer needs to open such a file."""
    from pte_adapter.backends import payload_file_suffixes
    from pte_adapter.explorer.convert import convert_path

    assert payload_file_suffixes()[-1] == ".toy"
    bare = tmp_path / "model.toy"
    bare.write_bytes(b"TOYPAYLOAD")
    (graph,) = graphs_to_json(convert_path(bare))["graphs"]
    assert [n["label"] for n in graph["nodes"] if n["label"] == "TOY_OP"] == ["TOY_OP"]


def test_no_module_outside_backends_spells_a_backend_id() -> None:
    """Code names a backend through its record (`backends.ETHOSU.id`), never by a literal: a
    string constant equal to a registered id, outside docstrings, is a second place to change."""
    ids = set(backends.BACKENDS) - {TOY}
    found = []
    for path in sorted((ROOT / "src" / "pte_adapter").rglob("*.py")):
        if path.name == "backends.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in ids and id(node) not in docstrings:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert found == []
