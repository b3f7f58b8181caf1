"""Whether an ETRecord belongs to a program, and each instruction's nodes when it does.

The join is ExecuTorch's Inspector's: an instruction's id (its index within its chain) keys the
ETRecord's `debug_handle_map`, and every edge-graph node that carries one of those handles is the
instruction's. The Inspector checks nothing; a wrong layer name is worse than none, so the ETRecord
is used only when everything the `.pte` can say agrees with it:

- the same methods; every recorded instruction id inside its method's chain;
- the delegate calls at the same instruction ids, with the same backend ids;
- each kernel call's operator among its nodes' operators, or one that a backend's CPU passes make
  of them after the ETRecord was recorded (`Backend.cpu_rewrites`: Arm's Cortex-M passes turn an
  `aten.linear` node into a `cortex_m::quantized_linear` kernel, a `quantized_decomposed` quantize
  into a `cortex_m::` one);
- and, where the ETRecord records it, the shape the kernel writes among the output shapes of the
  nodes it runs (the same operator, or one it replaced): two programs of one layout but different
  sizes (the same layers in another model) are told apart.

One mismatch and nothing of the ETRecord is used; one problem names the first few mismatches.
The join is linear: each instruction's handles are deduplicated, each handle's nodes are capped by
the reader, and a method's joins in total by `MAX_JOINED_NODES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pte_adapter.analysis.source import (
    MethodSource,
    ProgramSource,
    instruction_source,
)
from pte_adapter.backends import with_hook
from pte_adapter.delegates import hooks
from pte_adapter.delegates.hooks import KernelRewrites
from pte_adapter.operator_names import target_base
from pte_adapter.program.model import Instruction, InstructionKind, Method, Program

if TYPE_CHECKING:  # the ETRecord's reader is imported when there is one (api/sidefiles.py)
    from pte_adapter.container.etrecord import EtRecord, EtRecordMethod, FxNode

Rewrites = Callable[[str], KernelRewrites]

# Instruction-to-node joins per method: each node is joined to the one instruction that runs it
# (a node shared by many instructions, or a handle listed by each, would make the join quadratic).
MAX_JOINED_NODES = 200_000


def cpu_rewrites(problems: list[str] | None = None) -> Rewrites:
    """Kernel -> what the registered backends' CPU passes make it from (the union of their
    `cpu_rewrites` hooks; one that fails rewrites nothing, and says so in `problems`)."""
    said = problems if problems is not None else []
    records = {b.cpu_rewrites: b for b in with_hook("cpu_rewrites")}
    tables = [t for b in records.values() if (t := hooks.cpu_rewrites(b, said)) is not None]

    def rewritten_from(kernel: str) -> KernelRewrites:
        found = [t(kernel) for t in tables]
        return KernelRewrites(
            frozenset().union(*(f.made_from for f in found)),
            frozenset().union(*(f.replaces for f in found)),
        )

    return rewritten_from


def made_from(kernel: str, target: str, rewrites: Rewrites) -> bool:
    """Whether a kernel may run a node of this operator: the same operator, or a rewrite of it."""
    base = target_base(target)
    return target_base(kernel) == base or base in rewrites(kernel).made_from


def _chain_ids(method: Method) -> dict[int, int]:
    """Recorded instruction id -> method-level index. The emitter numbers instructions within
    their chain; ExecuTorch emits one chain per method, and only chain 0 is mapped."""
    return {ins.chain_position: ins.index for ins in method.instructions if ins.chain == 0}


def match_source(program: Program, record: EtRecord) -> tuple[ProgramSource | None, list[str]]:
    """Map each instruction to its nodes and modules, or say why the ETRecord does not belong."""
    mismatches: list[str] = []
    failures: list[str] = []  # a backend's cpu_rewrites hook that failed
    rewrites = cpu_rewrites(failures)
    names = [m.name for m in program.methods]
    for extra in sorted(set(record.methods) - set(names)):
        mismatches.append(f"it records method {extra!r}, which the program does not have")
    for missing in [n for n in names if n not in record.methods]:
        mismatches.append(f"it has no record of method {missing!r}")
    methods: dict[str, MethodSource] = {}
    for method in program.methods:
        rec = record.methods.get(method.name)
        if rec is not None:
            methods[method.name] = _match_method(method, rec, mismatches, rewrites)
    if mismatches:
        shown = "; ".join(mismatches[:3]) + (
            f"; and {len(mismatches) - 3} more" if len(mismatches) > 3 else ""
        )
        return None, [f"{record.source} does not belong to this program, not used: {shown}"]
    return ProgramSource(record.source, methods), failures


def _match_method(
    method: Method, rec: EtRecordMethod, mismatches: list[str], rewrites: Rewrites
) -> MethodSource:
    where = f"method {method.name!r}"
    ids = _chain_ids(method)
    out = MethodSource(method.name)
    for iid in sorted(set(rec.debug_handles) | set(rec.delegates)):
        if iid not in ids:
            mismatches.append(f"{where}: it records instruction {iid}, the chain has {len(ids)}")
            return out
    joined = 0
    for iid, index in ids.items():
        ins = method.instructions[index]
        handles = list(dict.fromkeys(rec.debug_handles.get(iid, [])))
        nodes = [n for h in handles for n in rec.nodes_by_handle.get(h, [])]
        joined += len(nodes)
        if joined > MAX_JOINED_NODES:
            mismatches.append(
                f"{where}: its instructions join more than {MAX_JOINED_NODES} ETRecord nodes "
                f"(limit {MAX_JOINED_NODES}; a real ETRecord joins each node once or twice)"
            )
            return out
        found = _delegate_mismatch(method, ins, rec.delegates.get(iid))
        if found is None and ins.kind is InstructionKind.KERNEL and nodes:
            found = _kernel_mismatch(method, ins, nodes, rewrites)
        if found is not None:
            mismatches.append(f"{where}: instruction {iid} {found}")
        if nodes:
            out.instructions[index] = instruction_source(index, handles, nodes)
    return out


def _delegate_mismatch(method: Method, ins: Instruction, recorded: str | None) -> str | None:
    """Why a delegate call (or a recorded one) does not fit, or None."""
    if ins.kind is InstructionKind.DELEGATE:
        d = ins.delegate_index
        backend = (
            method.delegates[d].id if d is not None and 0 <= d < len(method.delegates) else "?"
        )
        if recorded != backend:
            return f"is a {backend} call, the ETRecord records {recorded or 'no delegate'} there"
    elif recorded is not None:
        return f"is a {ins.kind.value}, the ETRecord records a {recorded} call there"
    return None


def _kernel_mismatch(
    method: Method, ins: Instruction, nodes: list[FxNode], rewrites: Rewrites
) -> str | None:
    """Why a kernel call does not run its nodes (operator, then output shape), or None."""
    op = method.operator_of(ins.op_index)
    name = op.full_name if op is not None else "?"
    if not any(made_from(name, n.target, rewrites) for n in nodes):
        return f"runs {name}, its ETRecord nodes are {', '.join(sorted({n.target for n in nodes}))}"
    same = {target_base(name)} | rewrites(name).replaces
    recorded = [s for n in nodes if target_base(n.target) in same for s in n.output_shapes]
    out = method.tensor(ins.args[-1]) if ins.args else None
    if out is None or not recorded or tuple(out.sizes) in recorded:
        return None
    shapes = ", ".join(str(list(s)) for s in dict.fromkeys(recorded))
    return f"runs {name} writing {list(out.sizes)}, its ETRecord nodes output {shapes}"
