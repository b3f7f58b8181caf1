"""The what-if pairs and the truth of each side from the real toolchain (issue 32).

A pair is one network exported twice by examples/build_whatif_pairs.py: fragmented (CPU islands
with compute kernels) and fixed (the re-export a what-if predicts). `whatif_pairs()` reads
examples/whatif_pairs.json; `truth(side, base)` is what the toolchain says of a program, never
what pte_adapter predicts:

- NPU partitions, delegate calls, CPU islands and CPU kernels: ExecuTorch's own deserializer
  (`oracle`), its instruction stream split into runs (`instruction_runs`);
- glue kernels: the quantize/dequantize KernelCalls, recognised by their operator names in the
  deserializer's operator table (not by pte_adapter's glue list);
- boundary bytes: pte_adapter's partition analysis (analysis/partitions.py, whose crossings
  tests/oracle/test_partitions.py recounts from the deserializer). BOUNDARY_DEFINITION says
  which bytes count; `delegate_io_bytes` is the deserializer's count of every tensor argument of
  every DelegateCall, equal to the boundary bytes for a program of one partition;
- Vela's cycles: `vela` run on each `.tosa` sidecar with the delegate's own compile flags
  (tests/support/vela.py `vela_runs`), matched to the partition whose command stream it gives
  byte for byte; its summary's `cycles_total` (the estimate the NPU estimate is compared with)
  and `cycles_npu`, per partition and in total.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from tests.support.examples import EXAMPLES, oracle
from tests.support.oracles import instruction_runs, tosa_enum, value_nbytes

PAIRS_JSON = EXAMPLES / "whatif_pairs.json"
KINDS = ("remove_check", "replace_operator", "quantize", "other_target")
NPU = "EthosUBackend"
BOUNDARY_DEFINITION = (
    "analysis/partitions.py: every tensor read across a partition boundary (delegate <-> CPU, "
    "method inputs and outputs included, and delegate -> delegate handoffs), counted once per "
    "direction per receiving partition, shape x element size; the sum of crossings and handoffs "
    "(the bytes the NPU estimate's boundary cost prices)"
)
# TOSA operators whose second input is a weight tensor.
WEIGHTED_TOSA_OPS = frozenset({"CONV2D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "CONV3D"})


@dataclass(frozen=True)
class Side:
    """One program of a pair, as whatif_pairs.json lists it."""

    pte: Path
    built_by: str  # the build script
    accelerator: str
    system_config: str
    memory_mode: str
    artifacts: Path | None  # the folder of its .tosa sidecars, when it keeps them
    network_sha256: str  # the float network it was exported from (recorded by the build)

    @property
    def name(self) -> str:
        return self.pte.stem


@dataclass(frozen=True)
class WhatIfPair:
    name: str
    kind: str  # one of KINDS
    changed: str  # what the fix was, in words
    same_network: bool  # the two float networks are the same (else the same up to the fix)
    island_operators: tuple[str, ...]  # the compute operators the fragmented side's islands hold
    fragmented: Side
    fixed: Side
    input_sha256: str
    calibration_sha256: str


def _side(row: dict[str, Any]) -> Side:
    art = [EXAMPLES / s for s in row["sidecars"]]
    return Side(
        EXAMPLES / row["file"],
        row["built_by"],
        row["accelerator"],
        row["system_config"],
        row["memory_mode"],
        art[0] if art else None,
        row["network_sha256"],
    )


def whatif_pairs() -> list[WhatIfPair]:
    """Every pair of examples/whatif_pairs.json; a missing manifest or program is a failure."""
    if not PAIRS_JSON.exists():
        pytest.fail(f"{PAIRS_JSON.name} is missing: run python -m examples.build_whatif_pairs")
    pairs = []
    for row in json.loads(PAIRS_JSON.read_text())["pairs"]:
        pair = WhatIfPair(
            row["name"],
            row["kind"],
            row["changed"],
            row["same_network"],
            tuple(row["island_operators"]),
            _side(row["fragmented"]),
            _side(row["fixed"]),
            row["input_sha256"],
            row["calibration_sha256"],
        )
        for side in (pair.fragmented, pair.fixed):
            assert side.pte.exists(), (
                f"{side.pte.name} is missing: run python -m examples.build_whatif_pairs"
            )
        pairs.append(pair)
    return pairs


# --------------------------------------------------------------------------------------
# What ExecuTorch's deserializer says of a program
# --------------------------------------------------------------------------------------


def _operator(plan: Any, call: Any) -> str:
    op = plan.operators[call.op_index]
    return f"{op.name}.{op.overload}".rstrip(".")


def is_qdq(operator: str) -> bool:
    """A quantize or dequantize kernel, by its name (`quantized_decomposed::quantize_per_tensor.out`,
    `cortex_m::dequantize_per_tensor.out` ...)."""
    name = operator.split("::")[-1]
    return name.startswith(("quantize_per_", "dequantize_per_"))


@dataclass
class ProgramFacts:
    """The `forward` method of a program, as ExecuTorch's deserializer reads it."""

    npu_partitions: int  # EthosUBackend delegates
    delegate_calls: int  # DelegateCall instructions
    cpu_islands: int  # maximal runs of other instructions
    compute_kernels: Counter[str] = field(default_factory=Counter)  # CPU KernelCalls, not q/dq
    glue_kernels: Counter[str] = field(default_factory=Counter)  # quantize/dequantize KernelCalls
    delegate_io_bytes: int = 0  # bytes of every tensor argument of every DelegateCall
    input_qparams: tuple[float, int] | None = None  # the method input's quantize: scale, zp
    output_qparams: tuple[float, int] | None = None  # the method output's dequantize


def _qparams(plan: Any, call: Any) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor quantize/dequantize: its arguments 1 and 2."""
    scale, zero = (plan.values[a].val for a in call.args[1:3])
    return float(scale.double_val), int(zero.int_val)


def program_facts(pte: Path) -> ProgramFacts:
    program: Any = oracle(pte).program  # type: ignore[attr-defined]
    plan = next(p for p in program.execution_plan if p.name == "forward")
    runs = instruction_runs(plan)
    facts = ProgramFacts(
        npu_partitions=sum(d.id == NPU for d in plan.delegates),
        delegate_calls=sum(b != "CPU" for b, _ in runs),
        cpu_islands=sum(b == "CPU" for b, _ in runs),
    )
    kernels = []
    for backend, calls in runs:
        for call in calls:
            kind = type(call).__name__
            if kind == "DelegateCall":
                tensors = [a for a in call.args if type(plan.values[a].val).__name__ == "Tensor"]
                facts.delegate_io_bytes += sum(value_nbytes(plan, a) for a in tensors)
            elif kind == "KernelCall" and backend == "CPU":
                kernels.append(call)
                name = _operator(plan, call)
                (facts.glue_kernels if is_qdq(name) else facts.compute_kernels)[name] += 1
    first, last = kernels[0] if kernels else None, kernels[-1] if kernels else None
    if first is not None and _operator(plan, first).split("::")[-1].startswith("quantize_"):
        facts.input_qparams = _qparams(plan, first)
    if last is not None and _operator(plan, last).split("::")[-1].startswith("dequantize_"):
        facts.output_qparams = _qparams(plan, last)
    return facts


# --------------------------------------------------------------------------------------
# What tosa-tools reads in the sidecars
# --------------------------------------------------------------------------------------


def tosa_weights(artifacts: Path) -> Counter[str]:
    """sha256 of (shape, bytes) of every weight tensor (input 1 of a convolution) in every
    partition's `.tosa` of an export, read with tosa-tools' own generated reader."""
    from tosa.TosaGraph import TosaGraph

    ops = tosa_enum("Op")
    out: Counter[str] = Counter()
    for path in sorted(artifacts.glob("output_tag*.tosa")):
        graph = TosaGraph.GetRootAs(path.read_bytes(), 0)
        for r in range(graph.RegionsLength()):
            region = graph.Regions(r)
            for b in range(region.BlocksLength()):
                block = region.Blocks(b)
                tensors = {}
                for i in range(block.TensorsLength()):
                    t = block.Tensors(i)
                    tensors[t.Name().decode()] = t
                for i in range(block.OperatorsLength()):
                    op = block.Operators(i)
                    if ops[op.Op()] not in WEIGHTED_TOSA_OPS:
                        continue
                    t = tensors[op.Inputs(1).decode()]
                    shape = [int(x) for x in t.ShapeAsNumpy()] if t.ShapeLength() else []
                    data = t.DataAsNumpy().tobytes() if t.DataLength() else b""
                    out[hashlib.sha256(repr(shape).encode() + data).hexdigest()] += 1
    return out


def tosa_operators(artifacts: Path) -> Counter[str]:
    """The TOSA operators of every partition's `.tosa` of an export (tosa-tools' reader)."""
    from tosa.TosaGraph import TosaGraph

    ops = tosa_enum("Op")
    out: Counter[str] = Counter()
    for path in sorted(artifacts.glob("output_tag*.tosa")):
        graph = TosaGraph.GetRootAs(path.read_bytes(), 0)
        for r in range(graph.RegionsLength()):
            region = graph.Regions(r)
            for b in range(region.BlocksLength()):
                block = region.Blocks(b)
                out.update(ops[block.Operators(i).Op()] for i in range(block.OperatorsLength()))
    return out


# --------------------------------------------------------------------------------------
# The truth of one program
# --------------------------------------------------------------------------------------


@dataclass
class PartitionTruth:
    """One Ethos-U partition (in delegate order) and Vela's own estimate of it."""

    delegate: int
    tosa: str  # the sidecar whose Vela compile gives its command stream byte for byte
    vela_cycles: int  # Vela's summary `cycles_total`
    vela_npu_cycles: int  # Vela's summary `cycles_npu`
    vela_clock_hz: float  # Vela's summary `core_clock`: cycles / clock = seconds


@dataclass
class Truth:
    program: str
    facts: ProgramFacts
    crossing_bytes: int  # delegate <-> CPU (method inputs and outputs included)
    handoff_bytes: int  # delegate -> delegate
    partitions: list[PartitionTruth]  # [] when not asked for or without sidecars
    boundary_definition: str = BOUNDARY_DEFINITION

    @property
    def boundary_bytes(self) -> int:
        return self.crossing_bytes + self.handoff_bytes

    @property
    def glue_kernels(self) -> int:
        return sum(self.facts.glue_kernels.values())

    @property
    def vela_cycles(self) -> int:
        return sum(p.vela_cycles for p in self.partitions)

    @property
    def vela_npu_cycles(self) -> int:
        return sum(p.vela_npu_cycles for p in self.partitions)

    @property
    def vela_time_us(self) -> float:
        return sum(p.vela_cycles / p.vela_clock_hz * 1e6 for p in self.partitions)


def vela_partitions(side: Side, base: Path) -> list[PartitionTruth]:
    """Vela on every `.tosa` sidecar of `side` (its delegates' own compile flags), each compile
    matched to the partition whose command stream it gives; a partition without one fails."""
    from tests.support.vela import ethosu_partitions, vela_runs

    parts = ethosu_partitions(side.pte)
    assert side.artifacts is not None and side.artifacts.is_dir(), f"{side.name}: no sidecars"
    runs = vela_runs(parts, base)
    out = []
    for part in parts:
        run = runs.get(part.name)
        assert run is not None, f"{part.name}: no sidecar compiles to its command stream"
        out.append(
            PartitionTruth(
                part.index,
                run.tosa.name,
                int(run.summary["cycles_total"]),
                int(run.summary["cycles_npu"]),
                float(run.summary["core_clock"]),
            )
        )
    return out


def truth(side: Side, base: Path | None = None) -> Truth:
    """The real toolchain's account of one program; Vela's cycles when `base` (a scratch folder
    for Vela's output) is given."""
    analysis = pte_adapter.analyse(pte_adapter.load(side.pte))
    method = next(m for m in analysis.methods if m.name == "forward")
    parts = method.partitions
    return Truth(
        side.name,
        program_facts(side.pte),
        sum(parts.crossing_bytes().values()),
        sum(parts.crossing_bytes(handoffs=True).values()),
        vela_partitions(side, base) if base is not None else [],
    )
