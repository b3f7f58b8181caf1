"""The LRN example's numeric gap at each of its boundaries, through the product, against the
independent oracle: `pte-adapter numerics examples/mv2_lrn_ethosu85.pte` on its emulated run
(examples/emulated/) with its float export as the reference (the session's `float_reference`),
checked row by row against `tests/support/emulated_snr.py` (numpy over ExecuTorch's own reading of
both runs, the INT8 values dequantized with the program's parameters).

- every output of every instruction is either joined, with the oracle's SNR (within 0.01 dB),
  MSE and float layer (the same reference instruction), or listed with its reason;
- the joins that need the ETRecord's graph: which node wrote each output of the first NPU
  partition (features.3's add and the LRN's padded squares, where the Inspector's rule names a
  `view_copy`), the quantization parameters of the tensor one NPU partition hands the other
  (the ETRecord's quantize node of that add, as the oracle takes them), the requantize's layer
  (the window mean it quantizes), and the window mean joined by provenance to the reference's
  `avg_pool2d` over a view (`avg_pool3d` has no ExecuTorch kernel);
- the run is labelled emulated in text, JSON and the node data, and no layer is said to be missing
  from the reference.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from pte_adapter.analysis.numerics.rows import MethodNumerics
from pte_adapter.api import NumericsOptions, open_analysis
from pte_adapter.cli import main
from tests.support import emulated
from tests.support.emulated_snr import Row, etrecord_qparams, exported_layers, rows

SNR_DB = 0.01
MSE_REL = 1e-3


@cache
def _numerics(reference: Path) -> MethodNumerics:
    options = NumericsOptions(debug_buffer=emulated.DEBUG_BUFFER, reference=reference)
    result = open_analysis(emulated.PROGRAM, etdump=emulated.ETDUMP, numerics=options)
    assert result.numerics is not None, result.numerics_error
    return result.numerics.methods["forward"]


@pytest.fixture(scope="module")
def gap(float_reference: Path) -> MethodNumerics:
    return _numerics(float_reference / f"{emulated.FLOAT_STEM}.pte")


@pytest.fixture(scope="module")
def oracle(float_reference: Path) -> list[Row]:
    return rows(exported_layers(float_reference))


def test_every_boundary_is_the_oracles_or_says_why(gap: MethodNumerics, oracle: list[Row]) -> None:
    joined = {(r.instructions[0], r.output): r for r in gap.rows}
    unjoined = {(u.instructions[0], u.output): u for u in gap.unjoined}
    assert not gap.problems, gap.problems
    assert len(joined) + len(unjoined) == len(oracle) == 8
    for want in oracle:
        output = emulated.instructions()[want.instruction].outputs.index(want.value)
        key = (want.instruction, output)
        if key in unjoined:
            assert unjoined[key].reason, key
            continue
        row = joined[key]
        assert row.metrics is not None
        assert abs(row.metrics.snr_db - want.snr_db) < SNR_DB, (key, row.metrics.snr_db, want)
        mse = float(np.mean((want.reference.astype(np.float64) - want.measured) ** 2))
        assert row.metrics.mse == pytest.approx(mse, rel=MSE_REL), key
        assert not row.layer_by_rule, key
        found = re.search(r"instruction (\d+)", want.float_from)
        assert found, want.float_from  # the oracle's float value is the export's own
        assert row.reference_instructions == (int(found.group(1)),), (key, row)
    # The one output left: the input's quantization. The reference run never logs its input.
    assert set(unjoined) == {(0, 0)}
    assert "never its inputs" in unjoined[(0, 0)].reason


def test_the_first_partitions_outputs_are_the_nodes_that_wrote_them(gap: MethodNumerics) -> None:
    """Output 0 is features.3's add, output 1 the LRN's padded squares: each the one node of the
    partition whose value of that shape reaches that output's readers (the Inspector's rule
    names output 0 after a `view_copy`)."""
    first = sorted((r for r in gap.rows if r.instructions == (1,)), key=lambda r: r.output)
    assert [(r.layer, r.module.split(" ")[0]) for r in first] == [
        ("aten_add_tensor", "features.3"),
        ("aten_pad_default", "features.4"),
    ]
    handoff = first[0].dequantized
    assert handoff is not None and handoff.axis is None
    assert "the ETRecord's quantize node of aten_add_tensor" in handoff.source
    scale, zero = etrecord_qparams("features.3")
    assert handoff.scale[0] == scale and handoff.zero_point[0] == zero


def test_the_island_joins_by_the_layer_it_computes(gap: MethodNumerics) -> None:
    """The requantize of the window mean is the window mean's layer (not a weight's or an
    input's); both join the reference's avg_pool2d over a view by provenance."""
    island = {r.instructions[0]: r for r in gap.rows if r.instructions[0] in (3, 4)}
    assert set(island) == {3, 4}
    for row in island.values():
        assert row.layer == "aten_avg_pool3d_default", row
        assert row.joined_by == "provenance", row
        assert "avg_pool2d" in row.note and "avg_pool3d" in row.note, row.note
    assert {r.joined_by for r in gap.rows if r.instructions[0] not in (3, 4)} == {"layer"}


def test_the_run_is_labelled_emulated_everywhere(
    float_reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        str(emulated.PROGRAM),
        "--etdump",
        str(emulated.ETDUMP),
        "--debug-buffer",
        str(emulated.DEBUG_BUFFER),
        "--reference",
        str(float_reference / f"{emulated.FLOAT_STEM}.pte"),
    ]
    assert main(["numerics", *args]) == 0
    assert "EMULATED" in capsys.readouterr().out
    assert main(["numerics", *args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["emulated"] and doc["methods"][0]["numerics"]["emulated"]
    overlay = tmp_path / "snr.json"
    assert main(["numerics", *args, "--node-data", str(overlay)]) == 0
    capsys.readouterr()
    assert "EMULATED" in json.loads(overlay.read_text())["forward"]["name"]


def test_the_worst_is_named_where_the_value_was_made(gap: MethodNumerics) -> None:
    """NPU partition 2's call (instruction 5) and the dequantize of its INT8 logits (6) print the
    same 36.99 dB, the dequantize a float rounding lower: the worst names the call, not the CPU
    island that only carried the value."""
    by_instruction = {r.instructions[0]: r for r in gap.rows}
    made, carried = by_instruction[5].snr_db, by_instruction[6].snr_db
    assert made is not None and carried is not None
    assert carried < made < carried + 0.005
    assert gap.worst is not None and gap.worst.instructions == (5,)
