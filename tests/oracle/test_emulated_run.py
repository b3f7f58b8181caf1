"""The emulated run of `mv2_lrn_ethosu85` (examples/emulated/, built by
examples/build_emulated.py) is what it says it is.

- ExecuTorch's own readers read it (the ETDump deserializer, the Inspector with the program's
  ETRecord and the debug buffer), its run is named as emulated and holds no timings, and its
  events are the ones the runtime logs for this program, in the runtime's order and layout;
- the writer lays out what ExecuTorch's runtime lays out, checked on a program the pip runtime
  runs (delegate calls and kernels): the same events, the same bytes, offsets shifted by where
  the runtime's buffer happened to start;
- every delegate output is the TOSA reference model's on the stored delegate inputs, with the
  sidecar Vela compiles into that delegate's exact command stream;
- every CPU kernel output is the kernel's on the stored inputs (numpy from the kernels'
  definitions; ExecuTorch's pip runtime; torch's avg_pool3d with the instruction's arguments);
- the SNR oracle (tests/support/emulated_snr.py) uses the Inspector's definition, and the float
  reference's own run (the pip runtime's) gives the same numbers as the float network.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.support import emulated
from tests.support.emulated_snr import exported_layers, float_layers, rows
from tests.support.examples import EXAMPLES

UNSET_CHAIN = 2**64 - 1  # the runtime's chain -1, as the unsigned field stores it


@pytest.fixture(scope="module")
def events() -> list[emulated.Logged]:
    return emulated.logged()[1]


def _by_instruction(events: list[emulated.Logged]) -> dict[int, list[np.ndarray]]:
    out: dict[int, list[np.ndarray]] = {}
    for e in events:
        if e.chain == 0:
            out.setdefault(e.instruction, []).append(e.array)
    return out


def test_the_dump_says_it_is_emulated_and_holds_no_timings() -> None:
    doc, _ = emulated.logged()
    (run,) = doc.run_data
    assert run.name.startswith("emulated: TOSA reference model (tosa-tools ")
    assert run.events and all(
        e.debug_event and not (e.profile_event or e.allocation_event) for e in run.events
    )
    assert emulated.provenance()["run_name"] == run.name
    assert (
        emulated.provenance()["program_sha256"]
        == hashlib.sha256(emulated.PROGRAM.read_bytes()).hexdigest()
    )


def test_events_are_the_runtimes_for_this_program(events: list[emulated.Logged]) -> None:
    """A kernel logs its out argument, a delegate call every argument, then the method's outputs
    (chain -1, instruction 0, `output` set); each tensor at the next 64-byte boundary."""
    plan = emulated.program().execution_plan[0]
    expected = []
    for ins in emulated.instructions():
        logged = ins.args if ins.kind == "DelegateCall" else ins.outputs
        expected += [(0, ins.index, v, False) for v in logged]
    expected += [(UNSET_CHAIN, 0, v, True) for v in plan.outputs]
    assert [(e.chain, e.instruction, e.output) for e in events] == [
        (c, k, o) for c, k, _, o in expected
    ]
    end = 0
    for e, (_, _, vid, _) in zip(events, expected, strict=True):
        t = plan.values[vid].val
        assert e.sizes == list(t.sizes) and e.array.dtype.itemsize * e.array.size > 0
        assert e.strides == [int(np.prod(t.sizes[d + 1 :])) for d in range(len(t.sizes))]
        assert e.offset == -(-end // 64) * 64  # BufferDataSink from an aligned start
        end = e.offset + e.array.nbytes
    assert end == emulated.DEBUG_BUFFER.stat().st_size


def test_the_inspector_reads_it_with_the_programs_etrecord(events: list[emulated.Logged]) -> None:
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=str(emulated.ETDUMP),
            etrecord=str(emulated.PROGRAM.with_suffix(".etrecord")),
            debug_buffer_path=str(emulated.DEBUG_BUFFER),
        )
    (block,) = inspector.event_blocks
    assert block.name == emulated.logged()[0].run_data[0].name
    ours = _by_instruction(events)
    seen = {e._instruction_id: e for e in block.events}
    assert set(seen) == set(ours)
    for k, event in seen.items():
        assert event.debug_handles  # joined to the ETRecord's debug handle map
        assert [d.numpy().tobytes() for d in event.debug_data] == [a.tobytes() for a in ours[k]]
    (output,) = block.run_output
    assert output.numpy().tobytes() == events[-1].array.tobytes()


def _pip_run_of_tiny_gpt(folder: Path) -> tuple[Path, list[emulated.Logged]]:
    """tiny_gpt_xnnpack (XNNPACK calls between kernels, tensor lists) run once by the pip
    runtime with a debug buffer: the program and the runtime's own debug events."""
    import torch
    from executorch.extension.pybindings import portable_lib

    pte = EXAMPLES / "tiny_gpt_xnnpack.pte"
    module = portable_lib._load_for_executorch(
        str(pte), enable_etdump=True, debug_buffer_size=1 << 22
    )
    tokens = torch.randint(0, 8, (1, 16), generator=torch.Generator().manual_seed(0))
    module.run_method("forward", (tokens,))
    module.write_etdump_result_to_file(str(folder / "real.etdp"), str(folder / "real.bin"))
    return pte, emulated.logged(folder / "real.etdp", folder / "real.bin")[1]


def test_the_writer_lays_out_what_the_runtime_does(tmp_path: Path) -> None:
    """The emulation's writer, given the values the pip runtime logged for a program it runs,
    writes the same events (which values, in which order, with which ids) and the same bytes,
    every offset shifted by one constant: where the runtime's buffer happened to start."""
    from examples.emulated_etdump import DebugBuffer, logged_by, value_event, write_etdump
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte, real = _pip_run_of_tiny_gpt(tmp_path)
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    places = [
        (0, k, v)
        for k, ins in enumerate(plan.chains[0].instructions)
        for v in logged_by(plan, ins.instr_args)
    ]
    places += [(UNSET_CHAIN, 0, v) for v in plan.outputs]
    assert [(e.chain, e.instruction) for e in real] == [(c, k) for c, k, _ in places]
    for e, (_, _, vid) in zip(real, places, strict=True):  # and each is the value it should be
        val = plan.values[vid].val
        items = [plan.values[i].val for i in val.items] if e.kind == "TensorList" else [val]
        assert [t.sizes for t in e.tensors] == [list(i.sizes) for i in items]

    buffer = DebugBuffer()
    mine = [
        value_event(
            e.chain,
            e.instruction,
            [t.array for t in e.tensors] if e.kind == "TensorList" else e.array,
            buffer,
            output=e.output,
        )
        for e in real
    ]
    write_etdump("pip runtime values, rewritten", mine, tmp_path / "mine.etdp")
    (tmp_path / "mine.bin").write_bytes(bytes(buffer.data))
    _, ours = emulated.logged(tmp_path / "mine.etdp", tmp_path / "mine.bin")
    shift = next(t.offset for e in real for t in e.tensors if t.array.size)
    assert 0 <= shift < 64
    for r, o in zip(real, ours, strict=True):
        assert (r.chain, r.instruction, r.output, r.kind) == (
            o.chain,
            o.instruction,
            o.output,
            o.kind,
        )
        for rt, ot in zip(r.tensors, o.tensors, strict=True):
            assert (rt.scalar_type, rt.sizes, rt.strides) == (ot.scalar_type, ot.sizes, ot.strides)
            assert rt.array.tobytes() == ot.array.tobytes()
            if ot.array.size:
                assert rt.offset == ot.offset + shift
            else:
                assert rt.offset == ot.offset == -1


# --------------------------------------------------------------------------------------
# Each value is what the thing that claims to have computed it computes
# --------------------------------------------------------------------------------------


def _row(k: int) -> dict:
    (row,) = [r for r in emulated.provenance()["instructions"] if r["instruction"] == k]
    return row


def _delegates() -> list[emulated.Instruction]:
    return [i for i in emulated.instructions() if i.kind == "DelegateCall"]


def test_each_delegate_output_is_the_tosa_reference_models(events: list[emulated.Logged]) -> None:
    import tosa_reference_model

    logged = _by_instruction(events)
    delegates = _delegates()
    assert len(delegates) == 2
    for ins in delegates:
        row = _row(ins.index)
        assert row["computed_by"].startswith("emulated: tosa_reference_model")
        sidecar = EXAMPLES / row["sidecar"]
        data = sidecar.read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sidecar_sha256"]
        stored = dict(zip(ins.args, logged[ins.index], strict=True))
        outputs, status = tosa_reference_model.run(data, [stored[v].copy() for v in ins.inputs])
        assert status == tosa_reference_model.GraphStatus.TOSA_VALID
        assert len(outputs) == len(ins.outputs)
        for vid, out in zip(ins.outputs, outputs, strict=True):
            assert out.dtype == stored[vid].dtype and out.shape == stored[vid].shape
            assert out.tobytes() == stored[vid].tobytes(), f"#{ins.index} value {vid}"


@pytest.mark.slow
def test_each_sidecar_is_the_one_vela_compiles_into_its_delegate(vela_runs) -> None:
    """The sidecar each delegate was run with is the one whose Vela compile, with the delegate's
    own flags, is byte for byte the payload's command stream (tests/support/vela.py)."""
    plan = emulated.program().execution_plan[0]
    for ins in _delegates():
        index = plan.chains[0].instructions[ins.index].instr_args.delegate_index
        run = vela_runs[f"{emulated.PROGRAM.stem}/forward/{index}"]
        assert run.tosa.name == Path(_row(ins.index)["sidecar"]).name
        assert _row(ins.index)["vela_recompiles_to_payload"] is True


def _kernel_inputs(events: list[emulated.Logged]) -> dict[int, np.ndarray]:
    """Every value the run logged, and the method's input (its seed and sha256 recorded)."""
    from examples.float_reference import fixed_input

    plan = emulated.program().execution_plan[0]
    x = fixed_input().numpy()
    assert hashlib.sha256(x.tobytes()).hexdigest() == emulated.provenance()["input"]["sha256"]
    values = {plan.inputs[0]: x}
    for ins in emulated.instructions():
        logged = ins.args if ins.kind == "DelegateCall" else ins.outputs
        arrays = _by_instruction(events)[ins.index]
        for vid, array in zip(logged, arrays, strict=True):
            assert values.setdefault(vid, array).tobytes() == array.tobytes(), (
                "logged twice, unlike"
            )
    return values


def _quantize(x: np.ndarray, scale: float, zp: int, lo: int, hi: int) -> np.ndarray:
    """ExecuTorch's quantize_per_tensor kernel: nearbyint(x * (1.0f / (float)scale)) + zp."""
    inv = np.float32(1.0) / np.float32(scale)
    return np.clip(np.rint((x * inv).astype(np.float32)) + zp, lo, hi).astype(np.int8)


def _window_mean(x: np.ndarray, depth: int) -> np.ndarray:
    out = x.shape[2] - depth + 1
    return (sum(x[:, :, c : c + out].astype(np.float64) for c in range(depth)) / depth).astype(
        np.float32
    )


def test_each_cpu_kernel_output_is_the_kernels(events: list[emulated.Logged]) -> None:
    import torch

    values = _kernel_inputs(events)
    kernels = [i for i in emulated.instructions() if i.kind == "KernelCall"]
    assert [k.name.split("::")[1] for k in kernels] == [
        "quantize_per_tensor.out",
        "dequantize_per_tensor.out",
        "avg_pool3d.out",
        "quantize_per_tensor.out",
        "dequantize_per_tensor.out",
    ]
    plan = emulated.program().execution_plan[0]
    for ins in kernels:
        (x,) = [values[v] for v in ins.inputs]
        (stored,) = [values[v] for v in ins.outputs]
        a = emulated.scalar_args(ins.index)
        if "::quantize" in ins.name:
            assert stored.tobytes() == _quantize(x, a[1], a[2], a[3], a[4]).tobytes()
        elif "dequantize" in ins.name:
            expected = (x.astype(np.int32) - a[2]).astype(np.float32) * np.float32(a[1])
            assert stored.tobytes() == expected.tobytes()
        else:  # avg_pool3d: the window over the first pooled dimension, the others 1
            kernel = [plan.values[v].val.int_val for v in plan.values[ins.args[1]].val.items]
            assert kernel[1:] == [1, 1]
            np.testing.assert_allclose(stored, _window_mean(x, kernel[0]), rtol=2e-6, atol=1e-9)
            same = torch.nn.functional.avg_pool3d(torch.from_numpy(x.copy()), kernel, stride=1)
            assert same.numpy().tobytes() == stored.tobytes()
        assert _row(ins.index)["computed_by"].startswith(
            "emulated: torch" if "avg_pool3d" in ins.name else "host: ExecuTorch"
        )


def test_quantize_and_dequantize_are_the_pip_runtimes_kernels(
    events: list[emulated.Logged],
) -> None:
    """Each q/dq instruction cut out of the program and run by ExecuTorch's pip runtime gives
    the stored output."""
    from examples.emulated_kernels import cut_program, run_in_runtime

    values = _kernel_inputs(events)
    program = emulated.program()
    for ins in emulated.instructions():
        if "quantize_per_tensor" in ins.name:
            cut = cut_program(program, ins.index, ins.inputs, ins.outputs)
            (out,) = run_in_runtime(cut, [values[v] for v in ins.inputs])
            assert out.tobytes() == values[ins.outputs[0]].tobytes()


# --------------------------------------------------------------------------------------
# The SNR oracle
# --------------------------------------------------------------------------------------


def test_boundary_snr_uses_the_inspectors_definition() -> None:
    import torch
    from executorch.devtools.inspector.numerical_comparator import SNRComparator

    found = rows()
    assert {(r.instruction, r.value) for r in found if r.boundary} == {
        (0, 1),
        (1, 7),
        (1, 8),
        (4, 32),
        (5, 38),
        (6, 39),
    }
    for r in found:
        theirs = SNRComparator().element_compare(
            torch.from_numpy(r.reference.astype(np.float64)),
            torch.from_numpy(r.measured.astype(np.float64)),
        )
        assert r.snr_db == pytest.approx(theirs, abs=1e-6)
        # An INT8 network tracks its float twin: a wrong scale or a wrong layer is far below.
        assert 30 < r.snr_db < 60, r
    last = [r for r in found if r.instruction in (5, 6)]
    assert last[0].snr_db == pytest.approx(last[1].snr_db, abs=1e-4)  # dequantize loses nothing


@pytest.mark.slow
def test_the_float_reference_is_the_pip_runtimes_run(float_reference: Path) -> None:
    """Its ETDump is the runtime's own (load and run events, timings, every kernel's output);
    its output is the float network's; its ETRecord holds the run's input; and its logged
    tensors give the same SNRs as the float network does."""
    import torch
    from examples.float_reference import fixed_input, float_network
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    from executorch.devtools.etrecord import parse_etrecord

    stem = float_reference / emulated.FLOAT_STEM
    doc = deserialize_from_etdump_flatcc(stem.with_suffix(".etdp").read_bytes())
    assert [r.name for r in doc.run_data] == ["Default", "Execute"]
    assert any(e.profile_event for e in doc.run_data[1].events)
    _, logged = emulated.logged(stem.with_suffix(".etdp"), Path(f"{stem}.debug_buffer.bin"))
    x = fixed_input()
    np.testing.assert_allclose(logged[-1].array, float_network()(x).numpy(), rtol=1e-4, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = parse_etrecord(str(stem.with_suffix(".etrecord")))
    assert torch.equal(record._representative_inputs[0][0], x)
    exported = exported_layers(float_reference)
    assert [w.startswith("the float export") for _, _, w in exported.values()] == [
        False,
        True,
        True,
        True,
        True,  # the input is never logged
    ]
    eager = {(r.instruction, r.value): r.snr_db for r in rows(float_layers())}
    for r in rows(exported):
        assert r.snr_db == pytest.approx(eager[(r.instruction, r.value)], abs=0.01)
