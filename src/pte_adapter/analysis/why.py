"""Why a CPU compute kernel was not delegated: the partitioners' rules, evaluated from the `.pte`.

Each backend whose partitioner the adapter knows has a `partition_rules` hook in its record
(`pte_adapter.backends`; Arm's in `delegates/arm/partition_rules.py`, XNNPACK's in
`delegates/xnnpack/partition_rules.py`). For every CPU compute kernel of a method, each such
partitioner among the method's delegates gives its verdict. Every reason names the rules'
ExecuTorch version.

Reason kinds (stable, in `summary --json`):
- `not_listed`: no Arm operator list or registered check accepts the operator for that TOSA spec
  (the partitioner says "Not included in BaseTOSASupportList or a registered tosa_support_check"),
  or XNNPACK has no partitioner config for it;
- `u55`: on the list, but `EthosU55NotSupported` rejects it on the Ethos-U55 subset;
- `rank`: a tensor has more dimensions than the Arm backend's MAX_RANK;
- `int64`: an int64 tensor and the TOSA spec has no int64 extension;
- `not_quantized`: an INT-only TOSA spec and the kernel computes in floating point;
- `check`: accepted by the lists, refused by a further check that needs the pre-delegation graph;
- `unknown`: an Arm delegate records no TOSA spec, so no rules can be chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pte_adapter.analysis.partitions import MethodPartitions, is_glue
from pte_adapter.backends import with_hook
from pte_adapter.delegates.registry import Verdict, hook
from pte_adapter.program.model import Delegate, InstructionKind, Method


@dataclass
class Reason:
    instruction: int
    operator: str  # the kernel, "aten::avg_pool3d.out"
    backend: str  # "Arm TOSA-1.0+INT+int16+int4+cf" or "XNNPACK"
    kind: str  # see the module docstring
    text: str  # one line, with the rules' version


def _judges(method: Method) -> list[Callable[[int, str], list[Verdict]]]:
    """One judge per partitioner among the method's delegates, in the order of the records."""
    families: dict[str, list[Delegate]] = {}
    for record in with_hook("partition_rules"):
        mine = [d for d in method.delegates if d.id == record.id]
        if mine and record.partition_rules:
            families.setdefault(record.partition_rules, []).extend(mine)
    return [hook(target)(method, delegates) for target, delegates in families.items()]


def why_not_delegated(method: Method, parts: MethodPartitions) -> list[Reason]:
    """A reason per CPU compute kernel and partitioner present in the method."""
    judges = _judges(method)
    if not judges:
        return []
    out: list[Reason] = []
    for p in parts.cpu_islands:
        for i in p.instructions:
            ins = method.instructions[i]
            o = ins.op_index
            if (
                ins.kind is not InstructionKind.KERNEL
                or o is None
                or not 0 <= o < len(method.operators)
            ):
                continue
            op = method.operators[o].full_name
            if is_glue(op):
                continue
            for judge in judges:
                out.extend(Reason(i, op, v.backend, v.kind, v.text) for v in judge(i, op))
    return out
