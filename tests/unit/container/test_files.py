"""container/files.py on real side files: a regular file inside the program's folder is read
exactly; a FIFO, a directory, a symlink out of the folder, a name too long and a file over the
limit are each one PteFormatError that says which, before anything is read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pte_adapter.container import files
from pte_adapter.container.etdump import load_etdump
from pte_adapter.errors import LimitExceededError, PteFormatError
from tests.support.examples import EXAMPLES

ETDP = "cond.etdp"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    here = tmp_path / "model"
    here.mkdir()
    shutil.copyfile((EXAMPLES / ETDP), here / ETDP)
    (tmp_path / "outside.etdp").write_bytes((EXAMPLES / ETDP).read_bytes())
    return here


def test_a_regular_file_inside_is_read_whole(folder: Path) -> None:
    data = files.read_regular(folder / ETDP, 1 << 20, inside=folder)
    assert data == (EXAMPLES / ETDP).read_bytes()
    assert bytes(files.map_regular(folder / ETDP, inside=folder)) == data
    assert load_etdump(folder / ETDP, inside=folder).runs


def test_a_fifo_is_refused_without_blocking(folder: Path) -> None:
    os.mkfifo(folder / "etdump.bin")
    with pytest.raises(PteFormatError, match="FIFO"):
        files.read_regular(folder / "etdump.bin", 1 << 20, inside=folder)


def test_a_directory_is_refused(folder: Path) -> None:
    (folder / "etdump.bin").mkdir()
    with pytest.raises(PteFormatError, match="a directory, not a regular file"):
        files.map_regular(folder / "etdump.bin", inside=folder)


def test_a_symlink_out_of_the_folder_is_refused_but_one_inside_is_followed(folder: Path) -> None:
    os.symlink(folder.parent / "outside.etdp", folder / "etdump.bin")
    with pytest.raises(PteFormatError, match="leads outside the program's folder"):
        files.read_regular(folder / "etdump.bin", 1 << 20, inside=folder)
    os.symlink(ETDP, folder / "inside.etdp")
    assert files.read_regular(folder / "inside.etdp", 1 << 20, inside=folder)


def test_a_file_over_the_limit_is_refused_by_its_size(folder: Path) -> None:
    size = (EXAMPLES / ETDP).stat().st_size
    with pytest.raises(LimitExceededError, match=f"{size} bytes \\(limit {size - 1}\\)"):
        files.read_regular(folder / ETDP, size - 1, inside=folder)


def test_names_that_cannot_be_looked_up_are_format_errors(folder: Path) -> None:
    assert not files.probe(folder / "absent.etdp")
    with pytest.raises(PteFormatError, match="File name too long"):
        files.probe(folder / ("x" * 300))
    os.symlink("loop.etdp", folder / "loop.etdp")
    assert files.probe(folder / "loop.etdp")  # it exists; reading it says why not
    with pytest.raises(PteFormatError, match="cannot open"):
        files.read_regular(folder / "loop.etdp", 1 << 20, inside=folder)


def test_json_values_bound_what_the_parser_builds() -> None:
    import json

    for text in ("[]", "[1, 2, 3]", '{"a": [1, {"b": "x,y"}]}', "[[], [], {}]"):
        built = json.loads(text)
        count = 0
        stack = [built]
        while stack:
            v = stack.pop()
            count += 1
            stack += v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
        assert files.json_values(text.encode()) >= count


def test_a_device_is_refused_by_its_kind_before_it_is_read() -> None:
    with pytest.raises(PteFormatError, match="a character device, not a regular file"):
        files.read_regular(Path("/dev/zero"), 1 << 20)
