"""Which layer of the user's model each instruction came from, from the program's ETRecord.

The chain is: instruction id (its index within its chain) -> debug handles (`debug_handle_map`)
-> edge-graph nodes with those handles -> their `nn_module_stack` and `stack_trace`. A delegate
call lists every handle it absorbed, so a partition covers all the modules of its nodes.

This is the join ExecuTorch's Inspector makes (its `debug_handle_map` lookup by instruction id,
then the edge-graph nodes that carry each handle). Before anything is used, `match_source` (`source_match.py`) checks
that the ETRecord belongs to this program: the same methods, every recorded instruction id inside
the method, the delegate calls at the same instruction ids with the same backend ids, and each
kernel call's operator among the operators of its nodes - or one that a backend's CPU passes make
of them after the ETRecord was recorded (`Backend.cpu_rewrites`: Arm's Cortex-M passes turn an
`aten.linear` node into a `cortex_m::quantized_linear` kernel). One mismatch and the ETRecord is
reported as foreign and nothing from it is shown: a wrong layer name is worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pte_adapter.analysis.partitions import MethodPartitions, Partition, is_glue
from pte_adapter.program.model import InstructionKind, Method

if TYPE_CHECKING:  # the ETRecord's reader is imported when there is one (api/sidefiles.py)
    from pte_adapter.container.etrecord import FxNode


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
    targets: list[str] = field(default_factory=list)  # each node's operator, as `nodes`

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


def instruction_source(index: int, handles: list[int], nodes: list[FxNode]) -> InstructionSource:
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
        [n.target for n in nodes],
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
        op = method.operator_of(ins.op_index)
        if ins.kind is not InstructionKind.KERNEL or op is None:
            continue
        name = op.full_name
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
    # CPU islands: the one layer all its compute kernels come from (`features.4 LocalResponseNorm`),
    # when the ETRecord records one below the root module; "" otherwise.
    layer: str = ""


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
        layer = island_layer(method, source, p) if p.is_cpu else ""
        out.append(PartitionSource(covered_modules(source, p), causes, layer))
    return out


def island_layer(method: Method, source: MethodSource, part: Partition) -> str:
    """The layer all the island's compute operators come from, or ""."""
    stacks = []
    for i in part.instructions:
        src = source.instructions.get(i)
        op = method.operator_of(method.instructions[i].op_index)
        if src is None or op is None:
            continue
        if op.full_name in part.compute_ops:
            stacks.extend(src.stacks)
    layer = [m for m in common_prefix(stacks) if m.path]
    return f"{layer[-1].path} {layer[-1].short_cls}" if layer else ""
