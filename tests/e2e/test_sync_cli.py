"""`pte-adapter sync` and the ETRecord opened as graphs, from the outside: the command's file and
lines, Model Explorer's adapter on `.etrecord` and `.bin` files, and every bad input one line.

The mapping's groups are checked against ExecuTorch's Inspector in tests/oracle/test_sync_oracle.py;
here, what a user gets: Model Explorer's format (`mappingEntries` of `leftNodeIds` /
`rightNodeIds`, every id a node of the two graphs the adapter draws, each in one entry), the
exit codes, and the sentence for each thing that cannot be mapped or opened.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pte_adapter.api.etrecord_view import sync_mapping
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_OK, EXIT_USAGE, main
from pte_adapter.errors import PteFormatError
from pte_adapter.explorer.adapter import PteAdapter
from pte_adapter.explorer.convert import convert_path
from pte_adapter.explorer.node_data_provider import graph_node_data
from tests.support.examples import EXAMPLES, example


def _copy(tmp_path: Path, stem: str, etrecord_name: str | None = None) -> Path:
    pte = Path(shutil.copy(example(stem), tmp_path / f"{stem}.pte"))
    if etrecord_name is not None:
        shutil.copy(EXAMPLES / f"{stem}.etrecord", tmp_path / etrecord_name.format(stem=stem))
    return pte


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_mapping_file_is_model_explorers_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mapping.json"
    assert main(["sync", str(example("sync_xnnpack")), "-o", str(out)]) == EXIT_OK
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}: ") and "exported_program" in said
    doc = json.loads(out.read_text())
    assert doc["disableMappingFallback"] is True
    entries = doc["mappingEntries"]
    assert entries and all(set(e) == {"leftNodeIds", "rightNodeIds"} for e in entries)
    left = {
        n.id for g in convert_path(example("sync_xnnpack")) if g.id == "forward" for n in g.nodes
    }
    right = {
        n.id
        for g in convert_path(EXAMPLES / "sync_xnnpack.etrecord")
        if g.id == "exported_program"
        for n in g.nodes
    }
    lefts = [i for e in entries for i in e["leftNodeIds"]]
    rights = [i for e in entries for i in e["rightNodeIds"]]
    assert set(lefts) <= left and set(rights) <= right
    assert len(lefts) == len(set(lefts)) and len(rights) == len(set(rights))  # one entry each
    assert doc["pte_adapter"]["right"] == {
        "model": "sync_xnnpack.etrecord",
        "graph": "exported_program",
    }


def test_stdout_and_the_other_graphs(capsys: pytest.CaptureFixture[str]) -> None:
    pte = str(example("sync_xnnpack"))
    assert main(["sync", pte, "--to", "edge"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["pte_adapter"]["right"]["graph"] == "edge_dialect_exported_program/forward"
    assert main(["sync", pte, "--to", "edge_after_transform"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["pte_adapter"]["right"]["graph"] == "edge_after_transform/forward"


def test_no_exported_program_falls_back_as_the_inspector_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sync", str(example("xnnpack_lrn"))]) == EXIT_OK
    captured = capsys.readouterr()
    assert json.loads(captured.out)["pte_adapter"]["note"].startswith("mapped to the edge program")
    assert "records no exported program" in captured.err
    assert main(["sync", str(example("xnnpack_lrn")), "--to", "exported"]) == EXIT_BAD_FILE
    line = _one_line(capsys.readouterr().err)
    assert "records no exported program" in line and "--to edge" in line


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        # No ETRecord beside the program.
        (["sync", "{mv2_ethosu55}"], EXIT_BAD_FILE, "no ETRecord beside it"),
        # An ETRecord of another program: said, and nothing written.
        (
            ["sync", "{mv2_lrn}", "--etrecord", "{xnnpack_lrn_etrecord}", "-o", "{out}"],
            EXIT_BAD_FILE,
            "does not belong to this program",
        ),
        (["sync", "{xnnpack_lrn}", "--to", "nothing"], EXIT_BAD_FILE, "records no graph 'nothing'"),
        (["sync", "{xnnpack_lrn}", "--method", "encode"], EXIT_USAGE, "the program's methods"),
        (["sync", "{xnnpack_lrn}", "-o", "{tmp}"], EXIT_USAGE, "is a directory"),
    ],
)
def test_bad_requests_are_one_line(
    argv: list[str],
    code: int,
    words: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = {
        "mv2_ethosu55": str(example("mv2_ethosu55")),
        "mv2_lrn": str(example("mv2_lrn_ethosu85")),
        "xnnpack_lrn": str(example("xnnpack_lrn")),
        "xnnpack_lrn_etrecord": str(EXAMPLES / "xnnpack_lrn.etrecord"),
        "out": str(tmp_path / "mapping.json"),
        "tmp": str(tmp_path),
    }
    assert main([a.format(**names) for a in argv]) == code
    assert words in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "mapping.json").exists()


@pytest.mark.parametrize("name", ["{stem}.etrecord", "{stem}_etrecord.bin", "etrecord.bin"])
def test_etrecord_opens_as_graphs_by_every_name(tmp_path: Path, name: str) -> None:
    pte = _copy(tmp_path, "sync_xnnpack", name)
    graphs = PteAdapter().convert(str(tmp_path / name.format(stem=pte.stem)), {})["graphs"]
    assert [g.id for g in graphs] == [
        "exported_program",
        "edge_dialect_exported_program/forward",
        "edge_after_transform/forward",
    ]
    conv = next(n for n in graphs[0].nodes if n.id == "conv2d")
    attrs = {a.key: a.value for a in conv.attrs}
    assert attrs["operator"] == "aten.conv2d.default"
    assert attrs["module"].startswith("stem.0 (Conv2d)")
    assert attrs["ran_in"] == "XNNPACK partition 1 (XnnpackBackend): instruction #0"
    assert attrs["source_line"].startswith("examples/models/")
    shapes = {m.id: {kv.key: kv.value for kv in m.attrs} for m in conv.outputsMetadata}
    assert shapes["0"]["shape"] == "[1, 8, 16, 16]" and shapes["0"]["dtype"] == "float32"


def test_etrecord_without_its_program_still_opens(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "xnnpack_lrn.etrecord", tmp_path / "xnnpack_lrn.etrecord")
    graphs = convert_path(tmp_path / "xnnpack_lrn.etrecord")
    assert graphs[0].groupNodeAttributes is not None
    facts = graphs[0].groupNodeAttributes[""]
    assert (
        facts["program"] == "no program beside it: looked for xnnpack_lrn.pte and xnnpack_lrn.bpte"
    )
    assert len(graphs[0].nodes) == 89
    assert all("ran_in" not in {a.key for a in n.attrs} for n in graphs[0].nodes)


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("weights.bin", b"\x00" * 64, "it is not an ETRecord"),
        ("etdump.bin", None, "it is an ETDump: its measured time shows on its program"),
        ("debug_buffer.bin", b"\x01" * 64, "it is a debug buffer"),
        ("empty.bin", b"", "it is not an ETRecord"),
    ],
)
def test_a_bin_that_is_no_etrecord_is_one_sentence(
    tmp_path: Path, name: str, data: bytes | None, words: str
) -> None:
    path = tmp_path / name
    if data is None:
        shutil.copy(EXAMPLES / "tiny_gpt_xnnpack.etdp", path)
    else:
        path.write_bytes(data)
    with pytest.raises(PteFormatError) as e:
        PteAdapter().convert(str(path), {})
    text = str(e.value)
    assert words in text and "\n" not in text
    assert "opens a .bin only when it is an ETRecord" in text


def test_measured_time_on_the_etrecords_graph() -> None:
    """The node data provider colours an ETRecord's graph by its runtime steps' measured time."""
    data = graph_node_data(
        str(EXAMPLES / "tiny_gpt_xnnpack.etrecord"), "edge_dialect_exported_program/forward", None
    )
    assert data.name.startswith("measured time") and len(data.results) > 100
    with pytest.raises(PteFormatError, match=r"no ETDump beside mv2_lrn_ethosu85\.pte"):
        graph_node_data(
            str(EXAMPLES / "mv2_lrn_ethosu85.etrecord"),
            "edge_dialect_exported_program/forward",
            None,
        )


@pytest.mark.parametrize("to", ["exported", "edge"])
def test_numeric_gap_on_the_etrecords_graph(to: str) -> None:
    """The numeric gap provider colours an ETRecord's graph too: every node a sync-mapping entry
    pairs with runtime instructions takes the worst value those instructions have on the
    program's own graph (the mapping's groups are the Inspector's: tests/oracle)."""
    from pte_adapter.explorer import numerics_provider

    etrecord, reference = (
        EXAMPLES / "numerics_island_int8.etrecord",
        example("numerics_island_fp32"),
    )
    mapping = sync_mapping(example("numerics_island_int8"), to=to)
    config = {numerics_provider.REFERENCE: str(reference)}
    on_program = numerics_provider.graph_node_data(
        str(example("numerics_island_int8")), mapping.left_graph, config
    ).results
    on_record = numerics_provider.graph_node_data(
        str(etrecord), mapping.right_graph, config
    ).results
    checked = 0
    for entry in mapping.document["mappingEntries"]:
        left = [on_program[i].value for i in entry["leftNodeIds"] if i in on_program]
        if not left:
            continue
        for node in entry["rightNodeIds"]:
            assert on_record[node].value == min(left), (node, entry)
            checked += 1
    assert checked >= 10


def test_numeric_gap_needs_the_etrecords_program(tmp_path: Path) -> None:
    from pte_adapter.explorer import numerics_provider

    alone = Path(shutil.copy(EXAMPLES / "numerics_island_int8.etrecord", tmp_path))
    config = {numerics_provider.REFERENCE: str(example("numerics_island_fp32"))}
    with pytest.raises(PteFormatError, match="no run to compare: no program beside it"):
        numerics_provider.graph_node_data(str(alone), "exported_program", config)
