"""The numeric gap against ExecuTorch's Inspector and an independent numpy reading.

- `--aot` rows equal `Inspector.calculate_numeric_gap` with "MSE", "L1" and "SNR", one to one
  (same AOT and runtime ops, in order), on every example the pip runtime ran with a debug buffer:
  portable (float and INT8), XNNPACK float, XNNPACK INT8 and a CPU island between two XNNPACK
  partitions (float and INT8). The adapter reads the runtime values itself (its own ETDump and
  debug-buffer readers) and computes the metrics itself; the Inspector gives its pairing and the
  AOT values.
- `--reference`: each joined layer's SNR and MSE equal numpy's over both runs' outputs as
  ExecuTorch's own deserializers read them (`tests/support/numerics.py`), and the method's output
  row compares exactly the two runs' method outputs.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pte_adapter.analysis.numerics.rows import MethodNumerics
from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.api import NumericsOptions, open_analysis
from tests.support.examples import example
from tests.support.numerics import (
    NUMERICS_EXAMPLES,
    NUMERICS_PAIRS,
    inspector_gaps,
    method_outputs,
    runtime_outputs,
    snr_db,
)

REL = 1e-3
SNR_DB = 0.01


@cache
def _analysis(stem: str, reference: str | None = None, aot: bool = False) -> ProgramAnalysis:
    options = NumericsOptions(reference=example(reference) if reference else None, aot=aot)
    return open_analysis(example(stem), numerics=options)


def _forward(result: ProgramAnalysis) -> MethodNumerics:
    assert result.numerics is not None, result.numerics_error
    m = result.numerics.methods["forward"]
    assert not m.problems, m.problems
    return m


def _close(ours: float, theirs: float, what: str) -> None:
    if math.isnan(theirs) or math.isinf(theirs):
        assert ours == theirs or (math.isnan(theirs) and math.isinf(ours)), (what, ours, theirs)
        return
    assert ours == pytest.approx(theirs, rel=REL, abs=1e-12), (what, ours, theirs)


@pytest.mark.parametrize("stem", NUMERICS_EXAMPLES)
def test_aot_rows_equal_the_inspectors(stem: str) -> None:
    m = _forward(_analysis(stem, aot=True))
    gaps: dict[str, Any] = inspector_gaps(stem)
    frame = gaps["SNR"]
    assert len(frame) > 0
    assert len(m.rows) == len(frame), (len(m.rows), len(frame))
    for i, row in enumerate(m.rows):
        assert list(row.aot_ops) == list(frame["aot_ops"].iloc[i])
        assert list(row.runtime_ops) == list(frame["runtime_ops"].iloc[i])
        assert row.metrics is not None
        _close(row.metrics.mse, float(gaps["MSE"]["gap"].iloc[i][0]), f"{stem} row {i} MSE")
        _close(row.metrics.l1, float(gaps["L1"]["gap"].iloc[i][0]), f"{stem} row {i} L1")
        theirs = float(gaps["SNR"]["gap"].iloc[i][0])
        ours = row.metrics.snr_db
        if math.isfinite(theirs):
            assert abs(ours - theirs) < SNR_DB, (stem, i, ours, theirs)
        else:
            # Two equal tensors: the Inspector's 0/0 is NaN when both are all zeros; ours inf.
            assert math.isinf(ours) and (math.isinf(theirs) or math.isnan(theirs)), (ours, theirs)


def test_an_int8_program_against_its_own_graph_has_no_gap_inside_xnnpack() -> None:
    """What the issue saw: the Inspector compares an INT8 program with the same quantized graph,
    so XNNPACK's output is the graph's, up to rounding: a very high SNR, not the quantization
    loss, which only `--reference` against the float program shows."""
    aot = _forward(_analysis("numerics_xnnpack_int8", aot=True))
    ref = _forward(_analysis("numerics_xnnpack_int8", "numerics_xnnpack_fp32"))
    assert all(r.snr_db is not None and r.snr_db > 60 for r in aot.rows), aot.rows
    assert ref.worst is not None and ref.worst.snr_db is not None and ref.worst.snr_db < 60


@pytest.mark.parametrize(("stem", "reference"), NUMERICS_PAIRS)
def test_reference_snr_per_layer_equals_numpy(stem: str, reference: str) -> None:
    m = _forward(_analysis(stem, reference))
    assert m.rows, m.unjoined
    ours, theirs = runtime_outputs(stem), runtime_outputs(reference)
    for row in m.rows:
        assert row.metrics is not None
        values = ours[(row.instructions[0], row.output)]
        signal = theirs[(row.reference_instructions[0], row.reference_output)]
        if row.dequantized is not None:
            q = row.dequantized
            assert q.axis is None
            values = (values - q.zero_point[0]) * q.scale[0]
        assert row.reference_dequantized is None  # every reference here is float
        want = snr_db(signal, values)
        assert abs(row.metrics.snr_db - want) < SNR_DB or row.metrics.snr_db == want, (row, want)
        mse = float(np.mean((signal - values) ** 2))
        assert row.metrics.mse == pytest.approx(mse, rel=REL, abs=1e-15)
        assert row.metrics.max_abs == pytest.approx(float(np.max(np.abs(signal - values))))


@pytest.mark.parametrize(("stem", "reference"), NUMERICS_PAIRS)
def test_the_method_output_row_compares_the_two_runs_outputs(stem: str, reference: str) -> None:
    """The last row is the method's output: the two runs' logged method outputs, compared."""
    m = _forward(_analysis(stem, reference))
    last = max(m.rows, key=lambda r: r.first_instruction)
    (mine,), (theirs,) = method_outputs(stem), method_outputs(reference)
    assert last.metrics is not None
    assert abs(last.metrics.snr_db - snr_db(theirs, mine)) < SNR_DB


def test_an_island_splits_the_gap_by_partition() -> None:
    """INT8 vs float with a CPU island between two XNNPACK partitions: a row at each partition's
    outputs, each in its partition, and the first below the threshold is the first partition's."""
    m = _forward(_analysis("numerics_island_int8", "numerics_island_fp32"))
    assert [r.partition for r in m.rows] == sorted(r.partition for r in m.rows)
    assert {r.partition_name for r in m.rows} >= {"CPU island 1"}
    assert m.first_below is not None and m.first_below.partition == 0
    int8 = [r for r in m.rows if r.dtype == "int8"]
    assert int8 and all(r.dequantized is not None for r in int8)
    assert all("XnnpackBackend payload" in r.dequantized.source for r in int8 if r.dequantized)


def _inspector_metric(name: str, a: np.ndarray, b: np.ndarray) -> float:
    import torch
    from executorch.devtools.inspector.numerical_comparator import (
        L1Comparator,
        MSEComparator,
        SNRComparator,
    )

    comparator = {"MSE": MSEComparator, "L1": L1Comparator, "SNR": SNRComparator}[name]()
    return float(comparator.element_compare(torch.from_numpy(a), torch.from_numpy(b)))


@pytest.mark.parametrize("case", ["noise", "nan", "inf", "equal", "zero_signal"])
def test_metrics_equal_the_inspectors_comparators(case: str) -> None:
    """The Inspector's comparators on the same float64 arrays: noise, a NaN (read as 0 on both
    sides, as `convert_to_float_tensor` does), an infinity, equal tensors, no signal."""
    from pte_adapter.analysis.numerics.metrics import compare

    rng = np.random.default_rng(43)
    a = rng.normal(size=(4, 8))
    b = a + rng.normal(scale=0.05, size=a.shape)
    if case == "nan":
        b[1, 2] = np.nan
    elif case == "inf":
        b[0, 0] = np.inf
    elif case == "equal":
        b = a.copy()
    elif case == "zero_signal":
        a = np.zeros_like(a)
    ours = compare(a, b)
    for name, value in (("MSE", ours.mse), ("L1", ours.l1), ("SNR", ours.snr_db)):
        theirs = _inspector_metric(name, a, b)
        if math.isfinite(theirs):
            assert value == pytest.approx(theirs, rel=1e-9), (case, name)
        else:
            assert value == theirs or (math.isnan(value) and math.isnan(theirs)), (case, name)
    assert (ours.nan, ours.inf) == (
        (1, 0) if case == "nan" else (0, 1) if case == "inf" else (0, 0)
    )


def test_integers_are_dequantized_with_their_kernels_arguments() -> None:
    """INT8 on the portable kernels: every int8 row is dequantized with the scale and zero point
    of the quantize kernel that wrote it, as ExecuTorch's own deserializer reads its arguments; and
    each weight dequantized with the per-channel parameters found (the dequantize_per_channel
    kernel's constant tensors) is what that kernel wrote in the run."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from pte_adapter.analysis.numerics.values import QuantParamsFinder, dequantize
    from pte_adapter.api import load
    from pte_adapter.container.etdump import TensorRef

    stem = "numerics_portable_int8"
    m = _forward(_analysis(stem, "numerics_portable"))
    plan = deserialize_pte_binary(example(stem).read_bytes()).program.execution_plan[0]
    int8 = [r for r in m.rows if r.dtype == "int8"]
    assert len(int8) >= 5
    for r in int8:
        q = r.dequantized
        assert q is not None and q.axis is None
        args = plan.chains[0].instructions[r.instructions[0]].instr_args.args
        assert q.scale == (plan.values[args[1]].val.double_val,)
        assert q.zero_point == (plan.values[args[2]].val.int_val,)
        assert f"instruction {r.instructions[0]} " in q.source
    program = load(example(stem))
    method = program.methods[0]
    result = _analysis(stem, "numerics_portable")
    finder = QuantParamsFinder(program, method, result.methods[0].partitions.dataflow)
    logged = runtime_outputs(stem)  # what the runtime's dequantize kernels wrote
    checked = 0
    for ins in method.instructions:
        op = method.operator_of(ins.op_index)
        if op is None or "dequantize_per_channel" not in op.name:
            continue
        weight = method.tensor(ins.args[0])
        assert weight is not None and weight.constant is not None
        ref = TensorRef(weight.scalar_type, tuple(weight.sizes), 0)
        found = finder(ins.args[0], ref)
        assert found is not None and found.axis == 0 and len(found.scale) == weight.sizes[0]
        raw = program.tensor_bytes(weight, weight.numel)
        assert raw is not None
        ints = np.frombuffer(raw, dtype=np.int8).astype(np.float64).reshape(weight.sizes)
        ours = dequantize(ints, found)
        theirs = logged[(ins.index, 0)]
        assert np.allclose(ours, theirs, rtol=1e-6, atol=1e-7), ins.index
        checked += 1
    assert checked == 4


def test_a_run_that_logged_empty_tensors_fits_its_buffer(float_reference: Path) -> None:
    """The pip runtime logs an empty tensor (batch norm's unused saved statistics, in the float
    MobileNetV2 of the emulated run's reference) with no bytes at offset -1, as ExecuTorch's own
    deserializer reads it. Such a buffer is still the run's own: nothing lies outside it, and the
    empty tensor reads as no bytes."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    from pte_adapter.analysis.numerics.logged import element_size
    from pte_adapter.api.sidefiles import misfit
    from pte_adapter.container.debug_buffer import load_debug_buffer
    from pte_adapter.container.etdump import load_etdump

    stem = float_reference / "mv2_lrn_float"
    etdp, bin_ = stem.with_suffix(".etdp"), stem.with_suffix(".debug_buffer.bin")
    theirs = deserialize_from_etdump_flatcc(etdp.read_bytes())
    empty_offsets = {
        t.offset
        for run in theirs.run_data
        for event in run.events
        if event.debug_event is not None and event.debug_event.debug_entry.tensor is not None
        for t in [event.debug_event.debug_entry.tensor]
        if 0 in t.sizes
    }
    assert empty_offsets == {-1}, empty_offsets  # the runtime's own spelling of "no bytes"
    dump, buffer = load_etdump(etdp), load_debug_buffer(bin_)
    assert misfit(buffer, dump) == ""
    empties = [
        t
        for run in dump.runs
        for e in run.debug_events
        for t in (e.value.tensors if e.value is not None else ())
        if 0 in t.sizes
    ]
    assert empties
    assert all(len(buffer.tensor_bytes(t, element_size(t))) == 0 for t in empties)
