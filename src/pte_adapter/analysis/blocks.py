"""Fold the partitions of a method with many of them into blocks of consecutive partitions.

A transformer exported for XNNPACK or an NPU splits at every attention mask and layer norm: the
12-layer GPT of the benchmark has 124 partitions and CPU islands in one method. Drawn side by side
that is a picture nobody reads (and one Model Explorer takes seconds to draw in software WebGL).
An engineer thinks of it as its layers, so the method's first screen shows blocks, each a run of
consecutive partitions.

Folding hides the split, which is what the first screen is for, so it must pay: a method is folded
only when its first screen, every partition a collapsed group, would cost more to draw than
FIRST_SCREEN_BUDGET (nodes and edges Model Explorer lays out and draws; the figures in
docs/benchmarks.md), and only into blocks that at least halve that cost; a block holds at least
MIN_BLOCK partitions. A MobileNetV2 whose residual adds stayed on the CPU (23 partitions) opens
with every partition in its backend's colour; the 124-partition GPT opens on its layers. Blocks,
named by what they are:

1. the model's own layers, from the ETRecord when there is one: the partitions whose instructions
   all come from `blocks.3` form the block `blocks.3` (ModuleList/Sequential containers opened);
2. otherwise the program's repeating structure: the shortest period after which the sequence of
   partitions repeats (same backend, same kernels, same number of delegate operations) for at least
   three periods, each period one block ("repeat 3 of 12");
3. otherwise runs of a fixed number of partitions ("partitions 21-30").

A partition that belongs to none (the CPU island at the start that builds every layer's attention
mask, the final layer norm) stays on its own between the blocks. Blocks only change how the
partitions are grouped: the partitions, their names and every number stay the same.

A model of more than MAX_TOP_LEVEL layers (a 192-layer transformer) would still open on a screen
of hundreds of blocks, so consecutive blocks are grouped once more into at most MAX_TOP_LEVEL runs
of blocks ("repeats 1-12 of 192"): the first screen stays a few dozen items at any depth.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from pte_adapter.analysis.partitions import (
    METHOD_INPUT,
    METHOD_OUTPUT,
    MethodPartitions,
    Partition,
)
from pte_adapter.analysis.source import CONTAINERS, MethodSource
from pte_adapter.program.model import Method

# Nodes + edges of a first screen Model Explorer draws in about as long as it takes to convert
# and lay out the program (benchmarks/bench_browser.py; docs/benchmarks.md): above it, fold.
FIRST_SCREEN_BUDGET = 200
# Folding must at least halve the first screen's cost, or it only hides the split.
FOLD_PAYS = 0.5
# A block holds at least this many partitions (a block of two saves one box and hides two).
MIN_BLOCK = 3
# Folding aims at no more than this many top-level items (blocks and partitions left on their own).
MAX_TOP_LEVEL = 16
# A repeating structure must repeat at least this often to be taken for the model's layers.
MIN_REPEATS = 3


@dataclass(frozen=True)
class Block:
    name: str  # unique, no "/": the group's name in Model Explorer ("blocks.3", "repeat 2 of 12")
    partitions: tuple[int, ...]  # consecutive partition indices, in order
    basis: str  # how it was found: "ETRecord module blocks.3 (Block)", "repeating structure", ...
    repeat: tuple[int, int] | None = None  # (k, n) of "repeat k of n"; None for other blocks


@dataclass(frozen=True)
class BlockRun:
    """Consecutive blocks grouped together when a method has more than MAX_TOP_LEVEL of them."""

    name: str  # unique among the method's blocks and runs, no "/": "repeats 1-12 of 192"
    blocks: tuple[int, ...]  # consecutive indices into the method's blocks, in order


def first_screen_cost(parts: MethodPartitions, blocks: list[Block]) -> int:
    """Nodes and edges of the method's first screen, every group collapsed: one item per block or
    partition left on its own, the graph's inputs and outputs, and one boundary node per pair of
    items that tensors cross between (everything entering a block shares one) with an edge in from
    each item it gathers and out to each it feeds (`render/plan/boundaries.py`)."""
    top = {p.name: p.name for p in parts.partitions}
    in_block = set()
    for b in blocks:
        for i in b.partitions:
            top[parts.partitions[i].name] = b.name
        in_block.add(b.name)
    cpu = {p.name for p in parts.partitions if p.is_cpu} | {METHOD_INPUT, METHOD_OUTPUT}
    bounds: set[tuple[str, str]] = set()
    edges: set[tuple[str | tuple[str, str], str | tuple[str, str]]] = set()  # a bound is its key
    for c in parts.crossings:
        if c.source in cpu and c.target in cpu:
            continue
        a, z = top.get(c.source, c.source), top.get(c.target, c.target)
        if a == z:
            continue
        key = ("", z) if z in in_block else (a, z)
        bounds.add(key)
        edges.add((a, key))
        edges.add((key, z))
    items = len(set(top.values())) + 2
    return items + len(bounds) + len(edges)


def fold_partitions(
    method: Method, parts: MethodPartitions, source: MethodSource | None
) -> list[Block] | None:
    """The blocks of a method whose first screen would cost more than FIRST_SCREEN_BUDGET, when
    folding pays; None otherwise. Partitions left on their own are not in any block."""
    unfolded = first_screen_cost(parts, [])
    if unfolded <= FIRST_SCREEN_BUDGET:
        return None
    for blocks in _candidates(method, parts, source):
        blocks = [b for b in blocks if len(b.partitions) >= MIN_BLOCK]
        if blocks and first_screen_cost(parts, blocks) <= unfolded * FOLD_PAYS:
            return blocks
    return None


def _candidates(
    method: Method, parts: MethodPartitions, source: MethodSource | None
) -> Iterator[list[Block]]:
    """The ways to fold, best first (made lazily: each is tried only if the one before fails)."""
    if source is not None:
        yield _by_module(parts.partitions, source)
    yield _by_repetition(method, parts.partitions)
    yield _by_count(parts.partitions)


def _module_at(source: MethodSource, part: Partition, depth: int) -> str | None:
    """The one module (at `depth` below the root, containers opened) every recorded node of this
    partition belongs to; "" when its nodes are at the root or shallower; None when they differ."""
    found: set[str] = set()
    for i in part.instructions:
        src = source.instructions.get(i)
        if src is None:
            continue
        for stack in src.stacks:
            path = stack[1:]  # below the root module
            d = 0
            level = 0
            while d < len(path):
                if path[d].short_cls in CONTAINERS and d + 1 < len(path):
                    d += 1
                    continue
                if level == depth:
                    break
                level += 1
                d += 1
            found.add(path[d].path if d < len(path) and level == depth else "")
    found.discard("")
    if len(found) > 1:
        return None
    return found.pop() if found else ""


def _by_module(partitions: list[Partition], source: MethodSource) -> list[Block]:
    """Runs of consecutive partitions inside one module, at the shallowest depth that gives at least
    two blocks of several partitions."""
    for depth in range(4):
        keys = [_module_at(source, p, depth) for p in partitions]
        blocks = _runs(partitions, keys)
        if sum(1 for b in blocks if len(b.partitions) > 1) >= 2:
            top = len(partitions) - sum(len(b.partitions) - 1 for b in blocks)
            if top <= max(MAX_TOP_LEVEL, len(partitions) // 4):
                return blocks
    return []


def _runs(partitions: list[Partition], keys: list[str | None]) -> list[Block]:
    """Maximal runs of equal, known module keys. A partition whose nodes are all at the root or
    outside any module ("" key) between two parts of the same module joins it: the glue between
    two delegate partitions of one layer belongs to that layer."""
    filled = list(keys)
    for i, k in enumerate(keys):
        if k == "":
            before = next((keys[j] for j in range(i - 1, -1, -1) if keys[j] != ""), None)
            after = next((keys[j] for j in range(i + 1, len(keys)) if keys[j] != ""), None)
            filled[i] = before if before and before == after else None
    blocks: list[Block] = []
    i = 0
    while i < len(partitions):
        k = filled[i]
        j = i + 1
        while k and j < len(partitions) and filled[j] == k:
            j += 1
        if k and j - i > 1:
            blocks.append(
                Block(
                    _unique(k, blocks),
                    tuple(p.index for p in partitions[i:j]),
                    f"ETRecord module {k}",
                )
            )
        i = j
    return blocks


def _signature(method: Method, part: Partition) -> tuple[object, ...]:
    """What a partition does, without where: its backend, its kernels in order, the size of its
    delegate graph."""
    ops = []
    instructions, names = method.instructions, method.operator_names
    for i in part.instructions:
        ins = instructions[i]
        o = ins.op_index
        ops.append(names[o] if o is not None and 0 <= o < len(names) else ins.kind.name)
    return (part.backend, tuple(ops), part.inner_ops)


def _by_repetition(method: Method, partitions: list[Partition]) -> list[Block]:
    """The shortest period p after which the partitions repeat for at least MIN_REPEATS periods:
    each period from the first repeat on is one block."""
    n = len(partitions)
    sig = [_signature(method, p) for p in partitions]
    for period in range(2, n // MIN_REPEATS + 1):
        # The longest stretch where every partition matches the one `period` later.
        best_start, best_len, start = 0, 0, 0
        for i in range(n - period + 1):
            if i < n - period and sig[i] == sig[i + period]:
                continue
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = i + 1
        repeats = (best_len + period) // period
        if repeats < MIN_REPEATS:
            continue
        blocks = []
        for r in range(repeats):
            first = best_start + r * period
            blocks.append(
                Block(
                    f"repeat {r + 1} of {repeats}",
                    tuple(p.index for p in partitions[first : first + period]),
                    f"repeating structure: {period} partitions repeat {repeats} times",
                    (r + 1, repeats),
                )
            )
        return blocks
    return []


def _by_count(partitions: list[Partition]) -> list[Block]:
    """Runs of a fixed size (at least MIN_BLOCK) when nothing better is known."""
    size = max(MIN_BLOCK, math.ceil(len(partitions) / MAX_TOP_LEVEL))
    blocks = []
    for first in range(0, len(partitions), size):
        chunk = partitions[first : first + size]
        blocks.append(
            Block(
                f"partitions {chunk[0].index + 1}-{chunk[-1].index + 1}",
                tuple(p.index for p in chunk),
                f"every {size} partitions (no ETRecord, no repeating structure found)",
            )
        )
    return blocks


def _unique(name: str, blocks: list[Block]) -> str:
    taken = {b.name for b in blocks}
    if name not in taken:
        return name
    k = 2
    while f"{name} ({k})" in taken:
        k += 1
    return f"{name} ({k})"


def block_runs(blocks: list[Block]) -> list[BlockRun]:
    """Runs of consecutive blocks (adjacent in partition order: a partition left on its own ends a
    run) of equal length, about MAX_TOP_LEVEL of them; [] when there are no more blocks than
    MAX_TOP_LEVEL. A block that would be a run of one stays on its own."""
    most = MAX_TOP_LEVEL  # read at each call: tests fold a small program as a large one
    if len(blocks) <= most:
        return []
    size = math.ceil(len(blocks) / most)
    runs: list[BlockRun] = []
    start = 0
    for i in range(1, len(blocks) + 1):
        adjacent = i < len(blocks) and blocks[i].partitions[0] == blocks[i - 1].partitions[-1] + 1
        if adjacent and i - start < size:
            continue
        if i - start > 1:
            run = blocks[start:i]
            runs.append(BlockRun(_run_name(run), tuple(range(start, i))))
        start = i
    return runs


def _run_name(run: list[Block]) -> str:
    first, last = run[0], run[-1]
    if first.repeat is not None and last.repeat is not None:
        return f"repeats {first.repeat[0]}-{last.repeat[0]} of {first.repeat[1]}"
    return f"{first.name} to {last.name}"
