"""Stable role ids: names for partitions and instructions that survive a re-export.

Instruction indices shift as soon as one operator is added or removed, so two exports of the same
model cannot be lined up by index. A *role* names a partition by what it is:

- a delegate partition by its backend and its number among that backend's partitions
  (`EthosUBackend_1`, `EthosUBackend_2`);
- the CPU island before the first delegate partition `cpu_in`, the one after the last `cpu_out`,
  one between partitions by the partition it follows (`cpu_after_EthosUBackend_1`); a method with
  no delegate has the single island `cpu`.

An instruction's role id is its partition's role, its position in that partition and what it
calls: `cpu_in.0.quantized_decomposed::quantize_per_tensor.out`, `EthosUBackend_1`. Two programs'
instructions with the same id correspond (same partition role, same operator at the same position);
`diff` pairs partitions by role, and the Model Explorer graph uses the ids as node ids so that the
split view lines corresponding nodes up.
"""

from __future__ import annotations

from pte_adapter.analysis.partitions import MethodPartitions
from pte_adapter.program.model import Instruction, InstructionKind, Method


def partition_roles(parts: MethodPartitions) -> list[str]:
    """One role per partition, in partition order; unique within the method."""
    delegates = [p.index for p in parts.partitions if not p.is_cpu]
    roles: list[str] = []
    for p in parts.partitions:
        if not p.is_cpu:
            roles.append(f"{_safe(p.backend)}_{p.number}")
        elif not delegates:
            roles.append("cpu" if p.number == 1 else f"cpu_{p.number}")
        elif p.index < delegates[0]:
            roles.append("cpu_in")
        elif p.index > delegates[-1]:
            roles.append("cpu_out")
        else:
            before = parts.partitions[p.index - 1]
            roles.append(f"cpu_after_{_safe(before.backend)}_{before.number}")
    return roles


def instruction_role_ids(
    method: Method, parts: MethodPartitions, roles: list[str] | None = None
) -> list[str]:
    """One id per instruction of the method, unique within it (`roles`: the partitions' roles,
    when already known)."""
    if roles is None:
        roles = partition_roles(parts)
    position: dict[int, int] = {}  # instruction -> its first position in its partition
    for part in parts.partitions:
        if part.is_cpu:
            for pos, i in enumerate(part.instructions):
                position.setdefault(i, pos)
    names = method.operator_names  # what each kernel calls, named once per operator
    partitions, partition_of = parts.partitions, parts.partition_of
    ids: list[str] = []
    for ins in method.instructions:
        part = partitions[partition_of[ins.index]]
        role = roles[part.index]
        if not part.is_cpu:
            ids.append(role)
            continue
        ids.append(f"{role}.{position[ins.index]}.{_what(ins, names)}")
    return ids


def _what(ins: Instruction, names: list[str]) -> str:
    if ins.kind is InstructionKind.KERNEL:
        o = ins.op_index
        return names[o] if o is not None and 0 <= o < len(names) else "unknown_op"
    return str(ins.kind.value)


def _safe(backend: str) -> str:
    """Backend ids are identifiers in practice; keep ids free of spaces and dots anyway."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in backend) or "delegate"
