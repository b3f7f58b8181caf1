"""An ETRecord opened as graphs, hand-corrupted: every failure is one PteFormatError line, and what
is accepted reads exactly as the intact file.

The inputs are copies of a real ETRecord (`examples/sync_xnnpack.etrecord`: an exported program,
an edge program and a graph-map entry) with seeded byte edits, and with its graph JSON edited the
ways a stranger's file could be: a node without a name, two nodes of one name, no graph at all,
a graph that is not a graph, an exported program whose provenance cannot be read. Beside them, an
ETRecord of another program is named as such and its graphs still open.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.api.etrecord_view import open_etrecord
from pte_adapter.container.etrecord_graphs import EtRecordGraphs, read_etrecord_graphs
from pte_adapter.errors import PteFormatError
from tests.support.corruption import Outcomes
from tests.support.examples import EXAMPLES

SOURCE = EXAMPLES / "sync_xnnpack.etrecord"
EDGE = "edge_dialect_exported_program/forward"


def _summary(g: EtRecordGraphs) -> list[tuple[str, list[tuple[str, str, str]]]]:
    return [(x.part, [(n.name, n.op, n.target) for n in x.nodes]) for x in g.graphs]


def _rewritten(edit: dict[str, Any] | None = None, drop: tuple[str, ...] = ()) -> bytes:
    """The source ETRecord with JSON parts replaced (`edit`: entry -> document) or dropped."""
    out = io.BytesIO()
    with zipfile.ZipFile(SOURCE) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename in drop:
                continue
            data = src.read(info)
            if edit and info.filename in edit:
                data = json.dumps(edit[info.filename]).encode()
            dst.writestr(info.filename, data)
    return out.getvalue()


def _edge() -> dict[str, Any]:
    with zipfile.ZipFile(SOURCE) as z:
        doc: dict[str, Any] = json.loads(z.read(EDGE))
    return doc


def _read_spans(data: bytes) -> list[tuple[int, int]]:
    """The bytes the graph reader reads: each graph and debug-map part (local header and
    deflated data) and the zip's central directory; the pickled parts are never opened."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        spans = [
            (i.header_offset, i.header_offset + 30 + len(i.filename) + i.compress_size)
            for i in infos
            if not i.filename.endswith(("_state_dict", "_constants", "_example_inputs"))
            and i.filename != "representative_inputs"
        ]
        directory = max(i.header_offset + 30 + len(i.filename) + i.compress_size for i in infos)
    return [*spans, (directory, len(data))]


def test_byte_edits_are_rejected_or_change_nothing() -> None:
    data = SOURCE.read_bytes()
    intact = _summary(read_etrecord_graphs(io.BytesIO(data), SOURCE.name))
    spans = _read_spans(data)
    rng = random.Random(45)
    outcomes: Outcomes[EtRecordGraphs] = Outcomes("ETRecord graphs, byte edits")
    for i in range(300):
        edited = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            lo, hi = rng.choice(spans)
            edited[rng.randrange(lo, hi)] = rng.randrange(256)
        outcomes.attempt(i, read_etrecord_graphs, io.BytesIO(bytes(edited)), SOURCE.name)
    # Deflated parts and the zip's CRCs catch most edits of what is read; one in a field the zip
    # reader does not check (a date, a version, an attribute) changes nothing read.
    assert outcomes.rejected_share > 0.8, outcomes
    for label, graphs in outcomes.accepted:
        assert _summary(graphs) == intact, label
    assert all("\n" not in str(e) for e in outcomes.errors)


def _no_name(doc: dict[str, Any]) -> None:
    node = doc["graph_module"]["graph"]["nodes"][3]
    node["outputs"] = [{"as_tensors": [{"name": "a"}, {"name": "b"}]}]
    node["name"] = ""


def _same_name(doc: dict[str, Any]) -> None:
    nodes = doc["graph_module"]["graph"]["nodes"]
    nodes[4]["outputs"] = [{"as_tensor": {"name": nodes[2]["outputs"][0]["as_tensor"]["name"]}}]


def _not_a_graph(doc: dict[str, Any]) -> None:
    doc["graph_module"]["graph"]["nodes"] = {"not": "a list"}


def _no_graph_module(doc: dict[str, Any]) -> None:
    del doc["graph_module"]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (_no_name, "node has no name: a mapping could not address it"),
        (_same_name, "is given twice: a mapping could not address it"),
        (_not_a_graph, "graph has no node or input list"),
        (_no_graph_module, "expected a JSON object, found NoneType"),
    ],
)
def test_malformed_graphs_are_one_line(edit: Any, words: str, tmp_path: Path) -> None:
    doc = _edge()
    edit(doc)
    path = tmp_path / "sync_xnnpack.etrecord"
    path.write_bytes(_rewritten({EDGE: doc}))
    with pytest.raises(PteFormatError) as e:
        read_etrecord_graphs(path)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert EDGE in str(e.value)  # names the part


def test_no_graph_at_all(tmp_path: Path) -> None:
    path = tmp_path / "bare.etrecord"
    with zipfile.ZipFile(SOURCE) as z:
        names = [n for n in z.namelist() if "/" in n or n == "exported_program" or "_" in n]
    keep = ("ETRECORD_V0", "debug_handle_map", "delegate_map")
    path.write_bytes(_rewritten(drop=tuple(n for n in names if n not in keep)))
    with pytest.raises(PteFormatError, match="no graph in it"):
        read_etrecord_graphs(path)


def test_without_debug_handle_map_the_graphs_still_open(tmp_path: Path) -> None:
    path = tmp_path / "sync_xnnpack.etrecord"
    path.write_bytes(_rewritten(drop=("debug_handle_map",)))
    shutil.copy(EXAMPLES / "sync_xnnpack.pte", tmp_path / "sync_xnnpack.pte")
    view = open_etrecord(path)
    assert view.program is None and len(view.graphs.graphs) == 3
    assert "no debug handle map" in view.notes[0]


def test_unreadable_provenance_fails_only_the_exported_mapping(tmp_path: Path) -> None:
    """A `from_node` that is not JSON is read only when handles are carried back: the graphs open,
    `sync --to edge` maps, `--to exported` is one line."""
    from pte_adapter.cli import EXIT_BAD_FILE, EXIT_OK, main

    doc = _edge()
    for node in doc["graph_module"]["graph"]["nodes"]:
        node["metadata"]["from_node"] = "[{not json"
    folder = tmp_path
    (folder / "sync_xnnpack.etrecord").write_bytes(_rewritten({EDGE: doc}))
    pte = Path(shutil.copy(EXAMPLES / "sync_xnnpack.pte", folder / "sync_xnnpack.pte"))
    assert len(read_etrecord_graphs(folder / "sync_xnnpack.etrecord").graphs) == 3
    assert main(["sync", str(pte), "--to", "edge", "-o", str(folder / "m.json")]) == EXIT_OK
    assert main(["sync", str(pte), "--to", "exported"]) == EXIT_BAD_FILE


def test_foreign_etrecord_opens_and_says_so(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "sync_xnnpack.pte", tmp_path / "undelegated.pte")
    shutil.copy(EXAMPLES / "undelegated.etrecord", tmp_path / "undelegated.etrecord")
    view = open_etrecord(tmp_path / "undelegated.etrecord")
    assert view.program is None and not view.runs
    assert any("does not belong to undelegated.pte" in n for n in view.notes)


def test_an_entry_without_a_name(tmp_path: Path) -> None:
    """A zip entry whose name is empty (the fuzzer's find: `ZipInfo.is_dir()` raised IndexError
    on it) is read as any other part: here not a graph, one line naming it."""
    path = tmp_path / "sync_xnnpack.etrecord"
    data = io.BytesIO(_rewritten())
    with zipfile.ZipFile(data, "a") as z:
        z.writestr(zipfile.ZipInfo(""), b"{}")
    path.write_bytes(data.getvalue())
    with pytest.raises(
        PteFormatError, match=r"sync_xnnpack\.etrecord::graph_module: expected a JSON"
    ):
        read_etrecord_graphs(path)
