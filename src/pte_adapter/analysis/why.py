"""Why a CPU compute kernel was not delegated: the partitioners' rules, evaluated from the `.pte`.

Each backend whose partitioner the adapter knows has a `partition_rules` hook in its record
(`pte_adapter.backends`; Arm's in `delegates/arm/partition_rules.py`, XNNPACK's in
`delegates/xnnpack/partition_rules.py`). For every CPU compute kernel of a method, each such
partitioner among the method's delegates gives its verdict. Every reason names the rules'
ExecuTorch version, or the partitioner's own report it comes from.

What the judges are told besides the kernel (`KernelOrigin`): the ETRecord's nodes of the
instruction and their operators, and whether a backend's CPU passes made the kernel of them after
partitioning (`Backend.cpu_rewrites`; without an ETRecord, from those rewrite tables alone). A
`cortex_m::quantized_linear` kernel is judged as the `aten.linear` layer it was.

Reason kinds (stable, in `summary --json`):
- `not_listed`: no Arm operator list or registered check accepts the operator for that TOSA spec
  (the partitioner says "Not included in BaseTOSASupportList or a registered tosa_support_check"),
  or XNNPACK has no partitioner config for it, or the operator is not in the Vulkan registry;
- `u55`: on the list, but `EthosU55NotSupported` rejects it on the Ethos-U55 subset;
- `rank`: a tensor has more dimensions than the Arm backend's MAX_RANK, or than the 4 a Vulkan
  operator without high-dim support takes;
- `dtype`: a tensor's dtype is one the Vulkan delegate cannot hold, or not in the Vulkan
  operator's dtype sets;
- `int64`: an int64 tensor and the TOSA spec has no int64 extension;
- `not_quantized`: an INT-only TOSA spec and the kernel computes in floating point on values
  that were never quantized (an input that no dequantize made, or a result no quantize takes);
- `not_quantized_or_check`: the same, but between a dequantize and a quantize: either the quantizer
  skipped it or a partitioner check refused it after quantization; the `.pte` cannot tell which;
- `check`: accepted by the lists, refused by a further check that needs the pre-delegation graph;
- `supported`: the layer's operator (before Arm's Cortex-M passes rewrote it) is supported for
  that TOSA spec: something the `.pte` does not record kept it off the NPU (a partitioner check
  such as `additional_checks`, or its quantization);
- `additional_check`: the partitioner's own report says an `additional_checks` entry refused it;
- `unknown`: an Arm delegate records no TOSA spec, so no rules can be chosen; or the kernel could
  have come from operators the rules judge differently, and no ETRecord says which.

`by` says who says so: `rules` (evaluated from the `.pte`) or `partitioner` (its own report,
Arm's `partition_report.txt`, whose kinds are `not_listed`, `u55`, `additional_check`, `check`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.analysis.source import InstructionSource, MethodSource
from pte_adapter.analysis.source_match import Rewrites, cpu_rewrites
from pte_adapter.backends import Backend, with_hook
from pte_adapter.delegates import hooks
from pte_adapter.delegates.hooks import KernelOrigin, Verdict
from pte_adapter.operator_names import target_base
from pte_adapter.program.model import FLOAT_DTYPES, Delegate, InstructionKind, Method


@dataclass
class Reason:
    instruction: int
    operator: str  # the kernel, "aten::avg_pool3d.out"
    backend: str  # "Arm TOSA-1.0+INT+int16+int4+cf" or "XNNPACK"
    kind: str  # see the module docstring
    text: str  # one line, with the rules' version
    by: str = "rules"  # "rules" | "partitioner" (its own report)
    # The layer's operator when a CPU pass rewrote it into this kernel ("aten.linear"), else "".
    layer_operator: str = ""
    # Another target of the same backend whose rules accept it ("an Ethos-U85"), and the one
    # whose rules refused it ("the Ethos-U55"), as a sentence says them; else "".
    accepted_on: str = ""
    refused_on: str = ""


Judge = Callable[[int, str, KernelOrigin | None], list[Verdict]]


def _judges(method: Method) -> list[Judge]:
    """One judge per partitioner among the method's delegates, in the order of the records."""
    families: dict[str, tuple[Backend, list[Delegate]]] = {}
    for record in with_hook("partition_rules"):
        mine = [d for d in method.delegates if d.id == record.id]
        if mine and record.partition_rules:
            families.setdefault(record.partition_rules, (record, []))[1].extend(mine)
    judges = (hooks.partition_rules(r, method, delegates) for r, delegates in families.values())
    return [j for j in judges if j is not None]


def kernel_origin(
    op: str, src: InstructionSource | None, rewrites: Rewrites
) -> KernelOrigin | None:
    """Where a kernel came from: its ETRecord nodes of the same operator, else those a CPU pass
    rewrote into it; without an ETRecord, the operators the rewrite tables make it from."""
    base = target_base(op)
    made = rewrites(op).made_from
    if src is None:
        return KernelOrigin(tuple(sorted(made)), rewritten=True, recorded=False) if made else None
    pairs = list(dict.fromkeys(zip(src.targets, src.nodes, strict=True)))
    same = [(t, n) for t, n in pairs if target_base(t) == base]
    if same:
        return KernelOrigin((base,), tuple(n for _, n in same))
    made_of = [(t, n) for t, n in pairs if target_base(t) in made]
    if not made_of:
        return None
    operators = tuple(dict.fromkeys(target_base(t) for t, _ in made_of))
    return KernelOrigin(operators, tuple(n for _, n in made_of), rewritten=True)


def between_qdq(
    method: Method, parts: MethodPartitions, readers: dict[int, set[int]], index: int
) -> bool:
    """Whether every floating-point value the kernel reads was made by a dequantize kernel and
    what it writes is read only by quantize kernels (at least one of each)."""
    edges = parts.dataflow.edges[index] if 0 <= index < len(parts.dataflow.edges) else []
    floats = [
        e for e in edges if (t := method.tensor(e.value)) is not None and t.dtype in FLOAT_DTYPES
    ]
    if not floats or not all(
        "dequantize" in method.kernel_operator(e.producer) for e in floats if e.producer >= 0
    ):
        return False
    if any(e.producer < 0 for e in floats):
        return False
    out = readers.get(index, set())
    return bool(out) and all(
        "quantize" in (name := method.kernel_operator(r)) and "dequantize" not in name for r in out
    )


def with_qdq(origin: KernelOrigin | None, op: str, flag: bool) -> KernelOrigin | None:
    if not flag:
        return origin
    if origin is None:
        return KernelOrigin((target_base(op),), recorded=False, between_qdq=True)
    return origin._replace(between_qdq=True)


def why_not_delegated(
    method: Method, parts: MethodPartitions, source: MethodSource | None = None
) -> list[Reason]:
    """A reason per CPU compute kernel and partitioner present in the method (with the method's
    ETRecord, judged as the layer it came from)."""
    judges = _judges(method)
    if not judges:
        return []
    failures: list[str] = []  # a cpu_rewrites hook that failed: said on the method's delegates
    rewrites = cpu_rewrites(failures)
    readers = parts.dataflow.readers
    out: list[Reason] = []
    # Without the ETRecord's nodes a kernel's origin follows from its operator alone: worked out
    # once per operator, not once per call (a transformer calls a few operators many times).
    by_operator: dict[str, KernelOrigin | None] = {}
    for p in parts.cpu_islands:
        for i in p.instructions:
            ins = method.instructions[i]
            operator = method.operator_of(ins.op_index)
            if ins.kind is not InstructionKind.KERNEL or operator is None:
                continue
            op = operator.full_name
            if op in p.glue_ops:  # the island has sorted its kernels into glue and compute
                continue
            src = source.instructions.get(i) if source is not None else None
            if src is not None:
                origin = kernel_origin(op, src, rewrites)
            elif op in by_operator:
                origin = by_operator[op]
            else:
                origin = by_operator[op] = kernel_origin(op, None, rewrites)
            layer = ", ".join(origin.operators) if origin and origin.rewritten else ""
            for judge in judges:
                out.extend(
                    Reason(
                        i, op, v.backend, v.kind, v.text, v.by, layer, v.accepted_on, v.refused_on
                    )
                    for v in judge(
                        i, op, with_qdq(origin, op, between_qdq(method, parts, readers, i))
                    )
                )
    for d in method.delegates if failures else ():
        d.decoded.problems += [f for f in failures if f not in d.decoded.problems]
    return out
