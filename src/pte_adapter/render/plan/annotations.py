"""What the analysis adds to a drawn method: the ETRecord's layers and the partitioners' reasons on
nodes and groups, and the folding of a method of many partitions into blocks."""

from __future__ import annotations

from pte_adapter.analysis.partitions import Crossing
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.analysis.why import Reason
from pte_adapter.program.model import KERNEL
from pte_adapter.render.plan.boundaries import CrossingSides, crossing_sides
from pte_adapter.render.plan.graph import Graph, MethodPlacement, regex_escape
from pte_adapter.render.source_facts import (
    instruction_source_facts,
    layer_namespace,
    partition_source_facts,
    why_facts,
)
from pte_adapter.wording import bytes_text

# A CPU island with more instructions than this is drawn as nested layers of the model (ETRecord).
NEST_LAYERS_ABOVE = 16


def source_annotations(ma: MethodAnalysis, graph: Graph, names: list[str]) -> None:
    """The ETRecord's layers and the partitioner rules' reasons on the method graph.

    Node attributes: module, class, source line, why not delegated. Group attributes: modules
    covered, the cause of each CPU island, why. Kernel calls in a CPU island of more than
    NEST_LAYERS_ABOVE instructions are nested in their layers ("CPU island 1 - .../features/..."),
    so a large island opens one layer at a time, while a small one (the few kernels between two
    NPU partitions) shows its kernels as soon as it is opened. The first namespace component stays
    the partition, which everything else keys on.
    """
    method, parts, msrc, reasons = ma.method, ma.partitions, ma.source, ma.reasons
    if msrc is None and not reasons:
        return
    by_ins: dict[int, list[Reason]] = {}
    for r in reasons:
        by_ins.setdefault(r.instruction, []).append(r)
    nodes = {n.id: n for n in graph.nodes}
    for ins in method.instructions:
        node = nodes.get(ma.instruction_ids[ins.index])
        if node is None:
            continue
        src = msrc.instructions.get(ins.index) if msrc else None
        node.attrs.update({**instruction_source_facts(src), **why_facts(by_ins.get(ins.index, []))})
        part = parts.partitions[parts.partition_of[ins.index]]
        layers = layer_namespace(src)
        if (
            part.is_cpu
            and len(part.instructions) > NEST_LAYERS_ABOVE
            and layers
            and ins.kind is KERNEL
        ):
            node.namespace = "/".join([names[part.index], *layers])
    groups = graph.group_attrs if graph.group_attrs is not None else {}
    by_part: dict[int, list[Reason]] = {}  # each partition's reasons, in order
    for r in reasons:
        by_part.setdefault(parts.partition_of[r.instruction], []).append(r)
    for part in parts.partitions:
        groups.setdefault(names[part.index], {}).update(
            partition_source_facts(ma.partition_sources[part.index], by_part.get(part.index, []))
        )
    graph.group_attrs = groups


def fold_into_blocks(ma: MethodAnalysis, graph: Graph, placement: MethodPlacement) -> None:
    """Put each folded partition's group inside its block's group (`analysis/blocks.py`, named by
    `render/group_facts.py`), and each block inside its run of blocks when there are runs: the
    method's first screen is then its blocks (or runs), each opening onto its partitions and CPU
    islands. Boundary nodes between two partitions of one block were placed inside it already, and
    those between two blocks of one run inside the run (`placement.blocks` and `placement.runs`
    name their groups). The placement learns each partition's new group path."""
    labels, names = placement.blocks, list(placement.groups)
    run_of = {i: run for run in ma.block_runs for i in run.blocks}
    path_of: dict[str, str] = {}  # a group drawn at the top level so far -> its full path
    # A group's style regex -> its path's, escaped by parts ("/" is not special), each once.
    regexes: dict[str, str] = {}
    for k, b in enumerate(ma.blocks):
        run = run_of.get(k)
        block_path = f"{placement.runs[run.name]}/{labels[b.name]}" if run else labels[b.name]
        escaped = regex_escape(block_path)
        if run:
            path_of[labels[b.name]] = block_path
            regexes[f"^{regex_escape(labels[b.name])}$"] = f"^{escaped}$"
        for i in b.partitions:
            path_of[names[i]] = placement.groups[i] = f"{block_path}/{names[i]}"
            name = regex_escape(names[i])
            regexes[f"^{name}$"] = f"^{escaped}/{name}$"
    for node in graph.nodes:
        top, sep, rest = node.namespace.partition("/")
        if top in path_of:
            node.namespace = path_of[top] + sep + rest
    groups = graph.group_attrs or {}
    moved: dict[str, dict[str, str]] = {}
    for path, attrs in groups.items():
        top, sep, rest = path.partition("/")
        moved[path_of[top] + sep + rest if top in path_of else path] = attrs
    graph.group_attrs = moved
    for style in graph.group_styles or []:
        style.namespace_regex = regexes.get(style.namespace_regex, style.namespace_regex)
    sides = crossing_sides(ma.partitions)  # each block reads its own partitions' crossings
    for b in ma.blocks:
        label = labels[b.name]
        facts = {"block": b.basis, **_span_facts(ma, b.partitions, sides)}
        graph.group_attrs[path_of.get(label, label)] = facts
    for run in ma.block_runs:
        blocks = [ma.blocks[i] for i in run.blocks]
        facts = {"blocks": f"{blocks[0].name} to {blocks[-1].name} ({len(blocks)})"}
        span = tuple(i for b in blocks for i in b.partitions)
        graph.group_attrs[placement.runs[run.name]] = facts | _span_facts(ma, span, sides, "run")


def _span_facts(
    ma: MethodAnalysis, partitions: tuple[int, ...], sides: CrossingSides, what: str = "block"
) -> dict[str, str]:
    """A block's (or a run's) partitions and what crosses into, out of and inside it."""
    parts = ma.partitions
    mine = [parts.partitions[i] for i in partitions]
    names = {p.name for p in mine}
    backends: dict[str, int] = {}
    for p in mine:
        backends[p.backend] = backends.get(p.backend, 0) + 1
    entering, leaving = sides
    into = [c for n in names for c in entering.get(n, []) if c.source not in names]
    out = [c for n in names for c in leaving.get(n, []) if c.target not in names]
    inside = [c for n in names for c in leaving.get(n, []) if c.target in names]

    def tensors(cs: list[Crossing]) -> str:
        return f"{len(cs)} tensors, {bytes_text(sum(c.nbytes for c in cs))}"

    return {
        "partitions": f"{mine[0].name} to {mine[-1].name} ({len(mine)})",
        "partitions_by_backend": ", ".join(
            f"{'CPU islands' if b == 'CPU' else b} ×{n}" for b, n in backends.items()
        ),
        "instructions": str(sum(len(p.instructions) for p in mine)),
        f"crossings_into_{what}": tensors(into),
        f"crossings_out_of_{what}": tensors(out),
        f"crossings_inside_{what}": tensors(inside),
    }
