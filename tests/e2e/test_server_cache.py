"""The server's cache of converted programs (explorer/cache.py): re-opening the same file in the
same Model Explorer server returns the graphs already made, and never those of another content, of
other side files, or of another adapter version."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from model_explorer import graph_builder as gb

from pte_adapter.errors import PteFormatError
from pte_adapter.explorer.adapter import CACHE, PteAdapter
from pte_adapter.explorer.cache import Converter, GraphCache
from pte_adapter.explorer.convert import convert_path
from tests.support.examples import example


def _plain(graphs: list[gb.Graph]) -> list[dict[str, object]]:
    return [dataclasses.asdict(g) for g in graphs]


def _counting() -> tuple[list[Path], Converter]:
    calls: list[Path] = []

    def convert(path: Path) -> tuple[list[gb.Graph], tuple[Path, ...]]:
        calls.append(path)
        return [gb.Graph(id=path.read_bytes()[:8].hex())], ()

    return calls, convert


def test_reopening_the_same_file_is_served_from_the_cache(tmp_path: Path) -> None:
    pte = tmp_path / "model.pte"
    shutil.copy(example("cond"), pte)
    CACHE.clear()
    hits = CACHE.hits
    first = PteAdapter().convert(str(pte), {})["graphs"]
    again = PteAdapter().convert(str(pte), {})["graphs"]
    assert CACHE.hits == hits + 1
    assert _plain(again) == _plain(first) == _plain(convert_path(pte))


def test_another_program_under_the_same_name_is_converted_anew(tmp_path: Path) -> None:
    pte = tmp_path / "model.pte"
    shutil.copy(example("cond"), pte)
    CACHE.clear()
    PteAdapter().convert(str(pte), {})
    shutil.copy(example("two_methods"), pte)
    graphs = PteAdapter().convert(str(pte), {})["graphs"]
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(example("two_methods"), alone / "model.pte")
    assert _plain(graphs) == _plain(convert_path(alone / "model.pte"))


def test_same_size_same_mtime_other_bytes_is_a_miss(tmp_path: Path) -> None:
    """A rewrite that keeps size and mtime (as `cp -p` or `touch -r` would) still changes the
    ctime and the bytes: not served from the cache."""
    f = tmp_path / "a.pte"
    f.write_bytes(b"x" * 1000)
    st = f.stat()
    calls, convert = _counting()
    cache = GraphCache("1")
    cache.get(f, convert)
    cache.get(f, convert)
    assert len(calls) == 1
    f.write_bytes(b"y" * 1000)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_mtime_ns == st.st_mtime_ns and f.stat().st_size == st.st_size
    graphs = cache.get(f, convert)
    assert len(calls) == 2 and graphs[0].id == (b"y" * 8).hex()


def test_a_new_side_file_is_a_miss(tmp_path: Path) -> None:
    """An ETDump put beside the program after it was opened shows on the next opening."""
    pte = tmp_path / "two_methods.pte"
    shutil.copy(example("two_methods"), pte)
    CACHE.clear()
    without = PteAdapter().convert(str(pte), {})["graphs"]
    shutil.copy(example("two_methods").with_suffix(".etdp"), tmp_path / "two_methods.etdp")
    with_dump = PteAdapter().convert(str(pte), {})["graphs"]
    assert _plain(with_dump) != _plain(without)
    assert _plain(with_dump) == _plain(convert_path(pte))


def test_a_changed_file_in_a_sub_folder_is_a_miss(tmp_path: Path) -> None:
    """`<stem>_artifacts/` (the TOSA sidecars) is watched too."""
    (tmp_path / "m_artifacts").mkdir()
    f = tmp_path / "m.pte"
    f.write_bytes(b"p" * 100)
    calls, convert = _counting()
    cache = GraphCache("1")
    cache.get(f, convert)
    (tmp_path / "m_artifacts" / "output_tag0_x.tosa").write_bytes(b"t")
    cache.get(f, convert)
    assert len(calls) == 2


def test_another_adapter_version_is_a_miss(tmp_path: Path) -> None:
    f = tmp_path / "a.pte"
    f.write_bytes(b"x" * 10)
    calls, convert = _counting()
    old, new = GraphCache("1"), GraphCache("2")
    old.get(f, convert)
    new._entries = old._entries  # the same entries, read by another version
    new.get(f, convert)
    assert len(calls) == 2


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    calls, convert = _counting()
    cache = GraphCache("1", max_entries=2, max_nodes=10)
    files = []
    for i in range(3):
        f = tmp_path / f"{i}.pte"
        f.write_bytes(bytes([i]) * 10)
        files.append(f)
        cache.get(f, convert)
    assert len(cache) == 2
    cache.get(files[0], convert)  # evicted first: converted again
    assert len(calls) == 4

    def big(path: Path) -> tuple[list[gb.Graph], tuple[Path, ...]]:
        return [gb.Graph(id="g", nodes=[gb.GraphNode(id=str(i), label="") for i in range(11)])], ()

    cache.clear()
    cache.get(files[1], big)
    assert len(cache) == 0  # larger than the bound: never kept


def test_a_missing_file_is_the_conversion_s_error(tmp_path: Path) -> None:
    """No file: the adapter's own message (PteFormatError), as without a cache."""
    with pytest.raises(PteFormatError, match="cannot open"):
        PteAdapter().convert(str(tmp_path / "gone.pte"), {})


def test_the_kept_graphs_are_let_go_as_the_interpreter_exits() -> None:
    """The cache is emptied when the exit starts (`atexit`), before the teardown's collections
    would walk every graph object: a function registered before the adapter's import runs after
    its (`atexit` runs the last registered first) and finds the cache empty."""
    import subprocess
    import sys

    script = (
        "import atexit, os\n"
        "seen = []\n"
        "atexit.register(lambda: os.write(1, f'{seen[0]} {len(seen[1])}'.encode()))\n"
        "from pte_adapter.explorer.adapter import CACHE, PteAdapter\n"
        f"PteAdapter().convert({str(example('cond'))!r}, {{}})\n"
        "seen[:] = [len(CACHE), CACHE]\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout == "1 0"  # one program kept while it ran, none once the exit started
