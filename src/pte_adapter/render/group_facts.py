"""Group names that answer without a click: what each partition and block holds, in its name.

On a collapsed first screen a group shows only its name, so the name says what a user opens it
for: a CPU island its compute operators (and, with an ETRecord, the layer they came from), a
delegate partition its operation count and estimated time, a block its partitions by backend and
the CPU operators between them:

    CPU island 2 - aten::avg_pool3d (features.4 LocalResponseNorm)
    NPU partition 1 (EthosUBackend) - 16 ops, 1.87 ms
    blocks.3 | XNNPACK 3 | CPU aten::native_layer_norm x2

Each name starts with the partition's own name (`Partition.name`, unique in its method), so names
stay unique and every other view (summary, diff, attributes) still lines up; node ids are the
role ids and do not change. Inside a block (a method of many partitions, `analysis/blocks.py`)
the names are short, "XNNPACK 7 - 5 ops", "CPU 8 - split_with_sizes_copy", since there they are
drawn by the thousand: Model Explorer's drawing time follows the characters it draws
(docs/benchmarks.md), and the block already says where one is. The full name is the group's
`partition` attribute. Names are printable ASCII without "/" (Model Explorer splits group
paths at "/" and draws labels with an ASCII-only font), and short: the operators that fit in MAX_DETAIL characters, the rest counted.
"""

from __future__ import annotations

from pte_adapter.analysis.blocks import Block
from pte_adapter.analysis.partitions import Partition
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.backends import group_prefix
from pte_adapter.operator_names import kernel_base
from pte_adapter.wording import us_text

SEPARATOR = " - "  # between a partition's name and what it holds
BLOCK_SEPARATOR = " | "  # between a block's facets
MAX_DETAIL = 40  # characters of operator names in a group name; the rest are counted
MAX_SHORT_DETAIL = 24  # the same, in a block's short names


def ascii_name(text: str) -> str:
    """Printable ASCII without "/" (a namespace separator in Model Explorer)."""
    if text.isascii() and text.isprintable() and "/" not in text:  # the common case, at C speed
        return text.strip()
    out = "".join(c if " " <= c <= "~" and c != "/" else ("..." if c == "…" else "_") for c in text)
    return out.strip()


def _ops_text(counts: dict[str, int], short: bool = False, width: int = MAX_DETAIL) -> str:
    """The most frequent operators (overloads dropped; `short`: namespaces too) while they fit in
    `width` characters (at least one), the rest as "+k"."""
    merged: dict[str, int] = {}
    for name, n in counts.items():
        base = kernel_base(name)
        base = base.rsplit("::", 1)[-1] if short else base
        merged[base] = merged.get(base, 0) + n
    ranked = sorted(merged, key=lambda k: (-merged[k], k))
    shown: list[str] = []
    for k in ranked:
        text = f"{k} x{merged[k]}" if merged[k] > 1 else k
        if shown and len(", ".join([*shown, text])) > width:
            break
        shown.append(text)
    more = len(ranked) - len(shown)
    return ", ".join(shown) + (f" +{more}" if more > 0 else "")


def partition_detail(ma: MethodAnalysis, part: Partition) -> str:
    """What the partition holds, for its name ("" when there is nothing to say)."""
    if part.is_cpu:
        if part.compute_ops:
            module = ma.partition_sources[part.index].layer if ma.partition_sources else ""
            ops = _ops_text(dict(part.compute_ops))
            return f"{ops} ({module})" if module else ops
        if part.glue_ops:
            return f"glue ({_ops_text(dict(part.glue_ops), short=True)})"
        return "control" if part.control else ""
    facts = []
    if part.inner_ops is not None:
        facts.append(f"{part.inner_ops} op{'' if part.inner_ops == 1 else 's'}")
    if ma.estimate is not None and part.index in ma.estimate.per_partition_us:
        facts.append(us_text(ma.estimate.per_partition_us[part.index]))
    return ", ".join(facts)


def _group_name(name: str, detail: str) -> str:
    return ascii_name(name + (SEPARATOR + detail if detail else ""))


def partition_group_names(ma: MethodAnalysis) -> list[str]:
    """The Model Explorer group name of each partition, in partition order."""
    return [_group_name(p.name, partition_detail(ma, p)) for p in ma.partitions.partitions]


def short_partition_name(part: Partition) -> str:
    """ "XNNPACK 7", "CPU 8": the backend's short prefix and the partition's number."""
    prefix = "CPU" if part.is_cpu else group_prefix(part.backend).removesuffix(" partition")
    return f"{prefix} {part.number}"


def _short_detail(ma: MethodAnalysis, part: Partition) -> str:
    if part.is_cpu:
        ops = dict(part.compute_ops) or dict(part.glue_ops)
        if ops:
            return _ops_text(ops, short=True, width=MAX_SHORT_DETAIL)
        return "control" if part.control else ""
    return partition_detail(ma, part)


def drawn_group_names(ma: MethodAnalysis) -> list[str]:
    """Each partition's group name as the method graph draws it: short inside a block, in full
    elsewhere (`partition_group_names`). Short names that would not be unique in the method (two
    backends of one prefix) are drawn in full."""
    parts = ma.partitions.partitions
    short = {i: short_partition_name(parts[i]) for b in ma.blocks for i in b.partitions}
    if len(set(short.values())) < len(short):
        return partition_group_names(ma)
    return [
        _group_name(part.name, partition_detail(ma, part))
        if part.index not in short
        else _group_name(short[part.index], _short_detail(ma, part))
        for part in parts
    ]


def block_facets(ma: MethodAnalysis, block: Block) -> list[str]:
    """What a block holds: its partitions by backend, its CPU work ("NPU 2", "CPU aten::add")."""
    mine = [ma.partitions.partitions[i] for i in block.partitions]
    facets: list[str] = []
    by_backend: dict[str, int] = {}
    for p in mine:
        if not p.is_cpu:
            by_backend[p.backend] = by_backend.get(p.backend, 0) + 1
    for backend, n in by_backend.items():
        facets.append(f"{group_prefix(backend).removesuffix(' partition')} {n}")
    compute: dict[str, int] = {}
    for p in mine:
        for op, n in p.compute_ops.items():
            compute[op] = compute.get(op, 0) + n
    islands = sum(1 for p in mine if p.is_cpu)
    if compute:
        facets.append(f"CPU {_ops_text(compute)}")
    elif islands:
        facets.append(f"CPU glue x{islands}" if islands > 1 else "CPU glue")
    return facets


def block_and_run_names(ma: MethodAnalysis) -> tuple[list[str], list[str]]:
    """Each block's group name, `blocks.3 | NPU 2 | CPU aten::add` (the block, its partitions by
    backend, its CPU work), and each run's (`ma.block_runs`). A run whose blocks all hold the
    same carries their facets ("repeats 1-12 of 192 | XNNPACK 5 | CPU aten::mul x2"), and its
    blocks are named by their own names alone; otherwise each block has its own facets."""
    facets = [block_facets(ma, b) for b in ma.blocks]
    blocks = [
        ascii_name(BLOCK_SEPARATOR.join([b.name, *f]))
        for b, f in zip(ma.blocks, facets, strict=True)
    ]
    runs = []
    for run in ma.block_runs:
        first = facets[run.blocks[0]]
        shared = all(facets[i] == first for i in run.blocks)
        runs.append(ascii_name(BLOCK_SEPARATOR.join([run.name, *(first if shared else [])])))
        if shared:
            for i in run.blocks:
                blocks[i] = ascii_name(ma.blocks[i].name)
    return blocks, runs
