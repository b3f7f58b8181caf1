"""Which layer of the user's model each instruction came from, from the program's ETRecord.

The chain is: instruction id (its index within its chain) -> debug handles (`debug_handle_map`)
-> edge-graph nodes with those handles -> their `nn_module_stack` and `stack_trace`. A delegate
call lists every handle it absorbed, so a partition covers all the modules of its nodes.

Before anything is used, `match_source` checks that the ETRecord belongs to this program: the
same methods, every recorded instruction id inside the method, the delegate calls at the same
instruction ids with the same backend ids, and each kernel call's operator among the operators
of its nodes. One mismatch and the ETRecord is reported as foreign and nothing from it is shown:
a wrong layer name is worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pte_adapter.analysis.partitions import MethodPartitions, Partition, is_glue
from pte_adapter.container.etrecord import EtRecord, EtRecordMethod, FxNode
from pte_adapter.program.model import InstructionKind, Method, Program


@dataclass(frozen=True)
class ModuleRef:
    path: str  # fully qualified name, "" for the root module
    cls: str  # class, fully qualified as recorded ("torch.nn.modules.conv.Conv2d")

    @property
    def short_cls(self) -> str:
        return self.cls.rsplit(".", 1)[-1]

    @property
    def text(self) -> str:
        """`features.4 (LocalResponseNorm)`; the root module is shown by its class."""
        return f"{self.path} ({self.short_cls})" if self.path else f"({self.short_cls})"


@dataclass
class InstructionSource:
    index: int  # method-level instruction index
    handles: list[int]
    nodes: list[str]  # edge-graph node names
    modules: list[ModuleRef]  # innermost module of each node, distinct, in graph order
    stacks: list[list[ModuleRef]]  # the full module stack (outermost first) of each such node
    source_line: str  # "examples/model.py:194  x = self.lrn(x)" ("" = not recorded)
    torch_fn: str = ""

    @property
    def layer(self) -> list[ModuleRef]:
        """The module stack (without the root) that all this instruction's nodes share."""
        return [m for m in common_prefix(self.stacks) if m.path]


@dataclass
class MethodSource:
    name: str
    instructions: dict[int, InstructionSource] = field(default_factory=dict)


@dataclass
class ProgramSource:
    etrecord: str  # file name
    methods: dict[str, MethodSource]


def common_prefix(stacks: list[list[ModuleRef]]) -> list[ModuleRef]:
    if not stacks:
        return []
    prefix = stacks[0]
    for s in stacks[1:]:
        n = 0
        while n < min(len(prefix), len(s)) and prefix[n] == s[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def _base(name: str) -> str:
    """`aten::avg_pool3d.out`, `aten.avg_pool3d.default` and `torch.ops.aten.avg_pool3d.default`
    (how a node added by a decomposition at export time can be recorded) -> `aten.avg_pool3d`."""
    name = name.replace("::", ".").removeprefix("torch.ops.")
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else name


def _chain_ids(method: Method) -> dict[int, int]:
    """Recorded instruction id -> method-level index. The emitter numbers instructions within
    their chain; ExecuTorch emits one chain per method, and only chain 0 is mapped."""
    return {ins.chain_position: ins.index for ins in method.instructions if ins.chain == 0}


def match_source(program: Program, record: EtRecord) -> tuple[ProgramSource | None, list[str]]:
    """Map each instruction to its nodes and modules, or say why the ETRecord does not belong."""
    mismatches: list[str] = []
    names = [m.name for m in program.methods]
    for extra in sorted(set(record.methods) - set(names)):
        mismatches.append(f"it records method {extra!r}, which the program does not have")
    for missing in [n for n in names if n not in record.methods]:
        mismatches.append(f"it has no record of method {missing!r}")
    methods: dict[str, MethodSource] = {}
    for method in program.methods:
        rec = record.methods.get(method.name)
        if rec is not None:
            methods[method.name] = _match_method(method, rec, mismatches)
    if mismatches:
        shown = "; ".join(mismatches[:3]) + (
            f"; and {len(mismatches) - 3} more" if len(mismatches) > 3 else ""
        )
        return None, [f"{record.source} does not belong to this program, not used: {shown}"]
    return ProgramSource(record.source, methods), []


def _match_method(method: Method, rec: EtRecordMethod, mismatches: list[str]) -> MethodSource:
    where = f"method {method.name!r}"
    ids = _chain_ids(method)
    out = MethodSource(method.name)
    for iid in sorted(set(rec.debug_handles) | set(rec.delegates)):
        if iid not in ids:
            mismatches.append(f"{where}: it records instruction {iid}, the chain has {len(ids)}")
            return out
    for iid, index in ids.items():
        ins = method.instructions[index]
        if ins.kind is InstructionKind.DELEGATE:
            d = ins.delegate_index
            backend = (
                method.delegates[d].id if d is not None and 0 <= d < len(method.delegates) else "?"
            )
            if rec.delegates.get(iid) != backend:
                mismatches.append(
                    f"{where}: instruction {iid} is a {backend} call, the ETRecord "
                    f"records {rec.delegates.get(iid) or 'no delegate'} there"
                )
        elif iid in rec.delegates:
            mismatches.append(
                f"{where}: the ETRecord records a {rec.delegates[iid]} call at "
                f"instruction {iid}, the program has a {ins.kind.value}"
            )
        handles = rec.debug_handles.get(iid, [])
        nodes = [n for h in handles for n in rec.nodes_by_handle.get(h, [])]
        if ins.kind is InstructionKind.KERNEL and nodes:
            op = ins.op_index
            name = (
                method.operators[op].full_name
                if op is not None and 0 <= op < len(method.operators)
                else "?"
            )
            if _base(name) not in {_base(n.target) for n in nodes}:
                mismatches.append(
                    f"{where}: instruction {iid} runs {name}, its ETRecord nodes "
                    f"are {', '.join(sorted({n.target for n in nodes}))}"
                )
        if nodes:
            out.instructions[index] = _instruction_source(index, handles, nodes)
    return out


def _instruction_source(index: int, handles: list[int], nodes: list[FxNode]) -> InstructionSource:
    modules: list[ModuleRef] = []
    stacks: list[list[ModuleRef]] = []
    for n in nodes:
        stack = [ModuleRef(p, c) for p, c in n.module_stack]
        if not stack or (len(stack) == 1 and "<locals>" in stack[0].cls):
            # Nodes that quantization or export added outside any module carry only
            # torch.export's internal wrapper as their "module": that is no layer of the model.
            continue
        if stack[-1] not in modules:
            modules.append(stack[-1])
            stacks.append(stack)
    line = next((s for s in (user_source_line(n.stack_trace) for n in nodes) if s), "")
    return InstructionSource(
        index,
        handles,
        [n.name for n in nodes],
        modules,
        stacks,
        line,
        next((n.torch_fn for n in nodes if n.torch_fn), ""),
    )


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)\s*$')
_LIBRARY = ("<site-packages>/", "<python>/", "/site-packages/", "/dist-packages/", "/lib/python")


def user_source_line(stack_trace: str) -> str:
    """The innermost frame of the stack trace that is the user's code, not torch or Python:
    `file:line  code`."""
    lines = stack_trace.splitlines()
    best = ""
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if not m or any(lib in m.group(1) for lib in _LIBRARY):
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
        best = f"{m.group(1)}:{m.group(2)}" + (f"  {code}" if code else "")
    return best


# -- partitions ----------------------------------------------------------------------------

# Plain containers: a layer path opens them one level ("blocks" -> "blocks.3").
CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")


def covered_modules(source: MethodSource, part: Partition) -> list[str]:
    """The layers a partition covers, at the first level where its nodes differ, e.g.
    `features.0 … features.3`; plain containers (Sequential, ModuleList) are opened one level."""
    all_stacks = [
        s
        for i in part.instructions
        if i in source.instructions
        for s in source.instructions[i].stacks
    ]
    # The root module is shared by everything; name it only when nothing deeper is recorded.
    stacks = [s[1:] for s in all_stacks if len(s) > 1]
    if not stacks:
        roots = {f"({s[0].short_cls})" for s in all_stacks if s}
        return sorted(roots)
    depth = len(common_prefix(stacks))
    if len(stacks) == 1 or all(len(s) <= depth for s in stacks):
        depth = max(0, depth - 1)  # a single layer: name that layer itself
    paths: list[str] = []
    for s in stacks:
        d = min(depth, len(s) - 1)
        while s[d].short_cls in CONTAINERS and d + 1 < len(s):
            d += 1
        text = s[d].path
        if text not in paths:
            paths.append(text)
    return compress_runs(paths)


def compress_runs(paths: list[str]) -> list[str]:
    """`a.0, a.1, a.2, a.3, b` -> `a.0 … a.3, b`: runs of consecutive numbered siblings."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append(f"{run[0][0]}.{run[0][1]} … {run[-1][0]}.{run[-1][1]}")
        else:
            out.extend(f"{p}.{n}" for p, n in run)
        run.clear()

    for p in paths:
        stem, _, last = p.rpartition(".")
        if stem and last.isdigit():
            if run and run[-1][0] == stem and run[-1][1] + 1 == int(last):
                run.append((stem, int(last)))
                continue
            flush()
            run.append((stem, int(last)))
        else:
            flush()
            out.append(p)
    flush()
    return out


def island_causes(method: Method, source: MethodSource, part: Partition) -> list[str]:
    """Each CPU compute kernel of an island with the layer it came from:
    `features.4 LocalResponseNorm → aten::avg_pool3d.out` (glue kernels are not causes)."""
    causes: list[str] = []
    for i in part.instructions:
        ins = method.instructions[i]
        op = ins.op_index
        if (
            ins.kind is not InstructionKind.KERNEL
            or op is None
            or not 0 <= op < len(method.operators)
        ):
            continue
        name = method.operators[op].full_name
        if is_glue(name):
            continue
        src = source.instructions.get(i)
        where = (
            ", ".join(f"{m.path or '(root)'} {m.short_cls}" for m in src.modules)
            if src and src.modules
            else "(no module recorded)"
        )
        text = f"{where} → {name}"
        if text not in causes:
            causes.append(text)
    return causes


@dataclass
class PartitionSource:
    modules: list[str]  # covered layers (compressed runs)
    causes: list[str]  # CPU islands: the layers whose compute kernels stayed on the CPU


def partition_sources(
    method: Method, source: MethodSource | None, parts: MethodPartitions
) -> list[PartitionSource]:
    out = []
    has_delegate = bool(parts.delegate_partitions)
    for p in parts.partitions:
        if source is None:
            out.append(PartitionSource([], []))
            continue
        # Without any delegate, nothing "fell off" it: an island has no cause to name.
        causes = island_causes(method, source, p) if p.is_cpu and has_delegate else []
        out.append(PartitionSource(covered_modules(source, p), causes))
    return out
