"""An emulated run of a committed Ethos-U program on this host, instruction by instruction.

Ethos-U programs cannot run here (no NPU, no Corstone FVP; ExecuTorch's pip runtime registers no
EthosUBackend). This steps through the program's own instructions, as ExecuTorch's runtime would,
on one fixed input, and computes each instruction's outputs on the host:

- an **EthosUBackend DelegateCall** by running the TOSA graph that partition was compiled from
  (the `.tosa` the Arm backend kept beside the program) with the TOSA reference model
  (`tosa_reference_model`, tosa-tools). Each sidecar is matched to its delegate by evidence, never
  by file order: the delegate's argument tensors (shapes and dtypes, split into inputs and
  outputs by the counts in the payload's Vela I/O records) equal the TOSA graph's inputs and
  outputs in order and Vela's I/O records; `vela_recompiles` also checks that Vela compiles the
  sidecar into exactly the payload's command stream. The runtime copies the delegate's I/O
  byte for byte (`EthosUBackend.cpp`), so the TOSA graph's arrays are the tensors' bytes.
- a **KernelCall** whose kernel ExecuTorch's pip runtime has (`quantized_decomposed` quantize and
  dequantize) by that kernel itself: the instruction is cut out of the committed program into a
  program of its own (its values, arguments and memory plan unchanged; ExecuTorch's own
  serializer) and run by the pip runtime.
- a **KernelCall** whose kernel no ExecuTorch build has (`aten::avg_pool3d.out`: there is no
  `op_avg_pool3d` in ExecuTorch's kernel libraries, so this program would not load on a stock
  runner without a custom kernel) by torch's ATen CPU operator, called with the exact arguments
  the instruction holds.

What this does not show: whether Vela's command stream computes what the TOSA reference model
computes (Vela aims to be bit-exact for INT8 TOSA; only a board or an FVP proves it), and how long
anything takes (nothing is timed).
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from examples.emulated_etdump import logged_by

# ExecuTorch ScalarType (value) -> numpy dtype, for the tensors this reads
_DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32}
_TOSA_DTYPES = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "BOOL": np.bool_}
_VELA_IO_RECORD = struct.Struct("<6iiii")  # VelaIO: shape[6], elem_size, offset, region


@dataclass
class Step:
    """One instruction of the run: what it is, which values the runtime logs for it, and how its
    outputs were computed here."""

    instruction: int
    kind: str  # "kernel" or "delegate"
    name: str  # the operator ("ns::name.overload") or the backend id
    logged: list[int]  # value ids the runtime logs for it, in order
    how: str
    sidecar: Path | None = None


@dataclass
class EmulatedRun:
    program: object  # executorch.exir.schema.Program
    steps: list[Step]
    logged: list[list[np.ndarray]]  # per step, the logged arrays (as they were when logged)
    outputs: list[np.ndarray]  # the method's outputs
    values: dict[int, np.ndarray] = field(default_factory=dict)


def read_program(pte: Path):
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(pte.read_bytes()).program


def tensor_spec(value) -> tuple[type, tuple[int, ...]]:
    """(numpy dtype, sizes) of a program Tensor value in the default dim order."""
    t = value.val
    if list(t.dim_order) != list(range(len(t.sizes))):
        raise NotImplementedError(f"dim order {t.dim_order} is not contiguous")
    return _DTYPES[int(t.scalar_type)], tuple(t.sizes)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------
# Delegates: the payload's Vela records, the sidecar TOSA, the TOSA reference model
# --------------------------------------------------------------------------------------


def vela_blocks(payload: bytes) -> dict[str, bytes]:
    """The blocks of a `vela_bin_stream` payload (VelaBinStream.h: 16-byte name, size, padding to
    32 bytes; each block padded to 16)."""
    blocks, off = {}, 0
    while off + 32 <= len(payload):
        raw, size = struct.unpack_from("<16sI", payload, off)
        name = raw.rstrip(b"\0").decode()
        blocks[name] = payload[off + 32 : off + 32 + size]
        off += 32 + -(-size // 16) * 16
        if name == "vela_end_stream":
            break
    return blocks


def vela_io(payload: bytes) -> tuple[list[tuple[tuple[int, ...], int]], ...]:
    """(inputs, outputs): each Vela I/O record's shape (leading 1s dropped) and element size."""
    blocks = vela_blocks(payload)
    out = []
    for name in ("inputs", "outputs"):
        data = blocks[name]
        (count,) = struct.unpack_from("<i", data, 0)
        records = [_VELA_IO_RECORD.unpack_from(data, 4 + i * 36) for i in range(count)]
        out.append([(_squeeze(r[:6]), r[6]) for r in records])
    return tuple(out)


def _squeeze(shape) -> tuple[int, ...]:
    dims = list(shape)
    while len(dims) > 1 and dims[0] in (0, 1):
        dims.pop(0)
    return tuple(dims)


def tosa_io(data: bytes) -> tuple[list[tuple[tuple[int, ...], type]], ...]:
    """(inputs, outputs) of a TOSA file's main block: shape and numpy dtype, by tosa-tools'
    generated reader."""
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph

    names = {v: k for k, v in vars(DType).items() if not k.startswith("_")}
    block = TosaGraph.GetRootAs(data, 0).Regions(0).Blocks(0)
    tensors = {block.Tensors(i).Name(): block.Tensors(i) for i in range(block.TensorsLength())}

    def spec(name):
        t = tensors[name]
        return tuple(int(d) for d in t.ShapeAsNumpy()), _TOSA_DTYPES[names[t.Type()]]

    inputs = [spec(block.Inputs(i)) for i in range(block.InputsLength())]
    return inputs, [spec(block.Outputs(i)) for i in range(block.OutputsLength())]


def delegate_io(plan, args: list[int], payload: bytes) -> tuple[list[int], list[int]]:
    """A DelegateCall's arguments split into inputs and outputs as the Ethos-U backend splits
    them: the first as many as the payload has input records."""
    inputs, outputs = vela_io(payload)
    if len(inputs) + len(outputs) != len(args):
        raise ValueError(f"{len(args)} arguments for {len(inputs)} inputs + {len(outputs)} outputs")
    return args[: len(inputs)], args[len(inputs) :]


def sidecar_fits(plan, args: list[int], payload: bytes, tosa: bytes) -> bool:
    """Whether a TOSA file's I/O are the delegate's argument tensors, in order, and Vela's."""
    ins, outs = delegate_io(plan, args, payload)
    specs = [tensor_spec(plan.values[i]) for i in ins + outs]
    t_in, t_out = tosa_io(tosa)
    v_in, v_out = vela_io(payload)
    if len(t_in) != len(ins) or len(t_out) != len(outs):
        return False
    tosa_specs = [(shape, np.dtype(dt)) for shape, dt in t_in + t_out]
    if tosa_specs != [(shape, np.dtype(dt)) for dt, shape in specs]:
        return False
    return v_in + v_out == [(_squeeze(shape), np.dtype(dt).itemsize) for dt, shape in specs]


def match_sidecars(program, artifacts: Path) -> dict[int, Path]:
    """Delegate index -> the one `output_tag*_*.tosa` in `artifacts` that fits it, for every
    EthosUBackend delegate of the first method; anything else is an error."""
    plan = program.execution_plan[0]
    files = sorted(artifacts.glob("output_tag*_*.tosa"))
    matches: dict[int, Path] = {}
    for ins in plan.chains[0].instructions:
        a = ins.instr_args
        if type(a).__name__ != "DelegateCall":
            continue
        payload = delegate_payload(program, a.delegate_index)
        fits = [f for f in files if sidecar_fits(plan, a.args, payload, f.read_bytes())]
        if len(fits) != 1:
            raise ValueError(f"delegate {a.delegate_index}: {len(fits)} sidecars fit, not one")
        matches[a.delegate_index] = fits[0]
    if len(set(matches.values())) != len(matches):
        raise ValueError("one sidecar fits two delegates")
    return matches


def delegate_payload(program, index: int) -> bytes:
    delegate = program.execution_plan[0].delegates[index]
    if delegate.id != "EthosUBackend":
        raise NotImplementedError(f"delegate {index} is {delegate.id}, not EthosUBackend")
    return bytes(program.backend_delegate_data[delegate.processed.index].data)


def vela_recompiles(program, index: int, tosa: Path) -> bool:
    """Whether Vela, run with the delegate's own compile flags, turns `tosa` into exactly the
    payload's command stream (the strongest evidence that the sidecar is the partition)."""
    delegate = program.execution_plan[0].delegates[index]
    specs = {c.key: bytes(c.value).decode() for c in delegate.compile_specs}
    flags = [f for f in shlex.split(specs["compile_flags"]) if not f.startswith("--output-dir")]
    beside = Path(sys.executable).with_name("vela")  # the venv's, when not on PATH
    vela = str(beside) if beside.exists() else shutil.which("vela") or "vela"
    with tempfile.TemporaryDirectory() as d:
        cmd = [vela, *flags, f"--output-dir={d}", str(tosa.resolve())]
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)
        # Vela stores ragged I/O lists as object arrays; this is its own fresh output.
        with np.load(next(Path(d).glob("*_vela.npz")), allow_pickle=True) as npz:
            cmd_data = npz["cmd_data"].tobytes()
    return cmd_data == vela_blocks(delegate_payload(program, index))["cmd_data"]


def tosa_version() -> str:
    from importlib.metadata import version

    return version("tosa-tools")


def run_tosa(tosa: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The TOSA reference model on `inputs` (in the graph's input order)."""
    import tosa_reference_model

    outputs, status = tosa_reference_model.run(tosa, inputs)
    if status != tosa_reference_model.GraphStatus.TOSA_VALID:
        raise RuntimeError(f"tosa_reference_model: {status}")
    return [np.asarray(o) for o in outputs]


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


def emulate(pte: Path, artifacts: Path, inputs: list[np.ndarray], root: Path) -> EmulatedRun:
    """Run the first method of `pte` on `inputs`, each instruction as the module says; paths in
    the steps' descriptions are relative to `root`."""
    program = read_program(pte)
    plan = program.execution_plan[0]
    if len(plan.chains) != 1:
        raise NotImplementedError("more than one chain")
    sidecars = match_sidecars(program, artifacts)
    values: dict[int, np.ndarray] = {}
    for vid, array in zip(plan.inputs, inputs, strict=True):
        dtype, shape = tensor_spec(plan.values[vid])
        values[vid] = np.asarray(array, dtype=dtype).reshape(shape)
    steps, logged = [], []
    for k, ins in enumerate(plan.chains[0].instructions):
        a = ins.instr_args
        kind = type(a).__name__
        if kind == "DelegateCall":
            sidecar = sidecars[a.delegate_index]
            step = _delegate_step(program, k, a, sidecar, values, root)
        elif kind == "KernelCall":
            step = _kernel_step(program, k, a, values)
        else:
            raise NotImplementedError(f"instruction {k}: {kind}")
        steps.append(step)
        logged.append([values[v].copy() for v in step.logged])
    outputs = [values[v] for v in plan.outputs]
    return EmulatedRun(program, steps, logged, outputs, values)


def _delegate_step(program, k: int, a, sidecar: Path, values: dict, root: Path) -> Step:
    plan = program.execution_plan[0]
    ins, outs = delegate_io(plan, list(a.args), delegate_payload(program, a.delegate_index))
    _check_apart(plan, ins, outs)
    results = run_tosa(sidecar.read_bytes(), [values[v].copy() for v in ins])
    for vid, result in zip(outs, results, strict=True):
        dtype, shape = tensor_spec(plan.values[vid])
        if result.shape != shape or result.dtype != np.dtype(dtype):
            raise ValueError(f"instruction {k}: TOSA gave {result.dtype}{list(result.shape)}")
        values[vid] = result
    rel = sidecar.resolve().relative_to(root.resolve())
    how = f"emulated: tosa_reference_model (tosa-tools {tosa_version()}) on {rel}"
    return Step(k, "delegate", "EthosUBackend", logged_by(plan, a), how, sidecar)


def _check_apart(plan, ins: list[int], outs: list[int]) -> None:
    """The runtime logs a delegate's inputs after it ran: an output planned over an input would
    have overwritten it, and this run (which keeps every value apart) would log other bytes."""

    def span(vid):
        info = plan.values[vid].val.allocation_info
        start = info.memory_offset_low + (info.memory_offset_high << 32)
        dtype, shape = tensor_spec(plan.values[vid])
        return info.memory_id, start, start + int(np.prod(shape)) * np.dtype(dtype).itemsize

    for i in ins:
        for o in outs:
            (mi, si, ei), (mo, so, eo) = span(i), span(o)
            if mi == mo and si < eo and so < ei:
                raise NotImplementedError(f"delegate output {o} is planned over input {i}")


def _kernel_step(program, k: int, a, values: dict) -> Step:
    from examples.emulated_kernels import (
        cut_program,
        operator_name,
        out_values,
        run_in_runtime,
        run_with_torch,
        runtime_operators,
        tensor_inputs,
    )

    plan = program.execution_plan[0]
    name = operator_name(plan, a.op_index)
    args = list(a.args)
    outs = out_values(name, args)
    if name in runtime_operators():
        ins = tensor_inputs(plan, name, args)
        results = run_in_runtime(cut_program(program, k, ins, outs), [values[v] for v in ins])
        how = (
            f"host: ExecuTorch's own {name} kernel in its pip runtime (this instruction, cut "
            "into a program of its own, on this host's CPU)"
        )
    else:
        results = run_with_torch(plan, name, args, values)
        how = f"emulated: torch's ATen {name} with the instruction's arguments (ExecuTorch has no kernel for it)"
    for vid, result in zip(outs, results, strict=True):
        dtype, shape = tensor_spec(plan.values[vid])
        values[vid] = np.asarray(result, dtype=dtype).reshape(shape)
    return Step(k, "kernel", name, logged_by(plan, a), how)
