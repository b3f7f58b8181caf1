"""Constant methods of a damaged LLM export (hand-corrupted copies of the real example): the values
that can still be read are shown, the one that cannot says why, and nothing raises."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.constants import TensorPreview
from pte_adapter.cli import EXIT_OK, main
from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.pte import PteFile
from pte_adapter.explorer.convert import convert_path
from tests.support.examples import example

LLM = "tiny_llama_xnnpack"


def _copy(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / f"{LLM}.pte"
    path.write_bytes(data)
    return path


def test_an_unreadable_output_spec_shows_the_flat_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """get_eos_ids's spec (the only list in the file) made invalid JSON: its two outputs are
    still shown, as a tuple, without a structure."""
    data = example(LLM).read_bytes()
    spec = b'[1, {"type": "builtins.list"'
    assert data.count(spec) == 1
    path = _copy(tmp_path, data.replace(spec, b'X1, {"type": "builtins.list"'))
    result = pte_adapter.analyse(pte_adapter.load(path))
    assert result.constant_methods["get_eos_ids"] == (2, 3)
    assert result.constant_methods["get_max_seq_len"] == 32
    assert main(["summary", str(path)]) == EXIT_OK
    assert "  get_eos_ids            = (2, 3)\n" in capsys.readouterr().out


def _constant_offsets_at(data: bytes) -> int:
    """Where the constant segment's offsets vector lies in the file."""
    pte = PteFile(data, LLM)
    seg = pte.root.table(S.Program.constant_segment, "constant_segment")
    assert seg is not None
    offsets = seg.ints(S.SubsegmentOffsets.offsets, "Q", "offsets")
    packed = struct.pack(f"<{len(offsets)}Q", *offsets)
    assert data.count(packed) == 1
    return data.index(packed)


def test_a_constant_tensor_outside_the_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """get_kv_cache_scales's data pointed past the end of the file: a problem on that method, a
    note instead of values; every other constant method and the JSON still come out."""
    data = bytearray(example(LLM).read_bytes())
    at = _constant_offsets_at(bytes(data))
    program = pte_adapter.load(example(LLM))
    scales = program.method("get_kv_cache_scales").tensor(0)
    assert scales is not None and scales.constant is not None
    index = scales.constant.buffer_index
    data[at + 8 * index : at + 8 * index + 8] = struct.pack("<Q", 1 << 40)
    path = _copy(tmp_path, bytes(data))
    result = pte_adapter.analyse(pte_adapter.load(path))
    value = result.constant_methods["get_kv_cache_scales"]
    assert isinstance(value, TensorPreview) and value.values is None
    assert value.note == "its data is outside the file"
    method = result.method("get_kv_cache_scales")
    assert method is not None and len(method.summary.problems) == 1
    assert "spans bytes" in method.summary.problems[0]
    assert result.constant_methods["get_logits_scale"] == 0.00068
    assert main(["summary", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "get_kv_cache_scales    = float32[2, 2] (its data is outside the file)\n" in text
    assert "\n    problem: output 0: " in text and "constant tensor data spans bytes" in text
    assert main(["summary", "--json", str(path)]) == EXIT_OK
    shown = json.loads(capsys.readouterr().out)["constant_methods"]["get_kv_cache_scales"]
    assert shown == {"dtype": "float32", "shape": [2, 2], "values": None}
    graphs = {g.id: g for g in convert_path(path)}
    attrs = graphs["get_kv_cache_scales"].groupNodeAttributes[""]  # type: ignore[index]
    assert attrs["returns"] == "float32[2, 2] (its data is outside the file)"
    assert "spans bytes" in attrs["problems"]
