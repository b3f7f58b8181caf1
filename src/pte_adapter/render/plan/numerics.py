"""The numeric gap (`analysis/numerics/`) on the planned graphs, on the node ids the plan drew:

- every compared instruction node: its output's SNR (each output's, for a call with several),
  with MSE, max |difference| and cosine, and what its integers were dequantized with;
- every partition (its group's attributes): `output SNR`, the worst over the compared tensors that
  leave it (`NumericRow.boundary`: read by another partition or returned), and where;
- the method (graph attributes, shown when nothing is selected): the `accuracy` line (first below
  the threshold, the worst), what it was compared with, and `EMULATED` when a side's values come
  from an emulated run.

Without a comparison (no `--reference`, no `--aot`), nothing is added. A numeric gap that could not
be computed adds one `numeric gap problem` attribute to each method graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.render.plan.graph import Graph, MethodPlacement

if TYPE_CHECKING:
    from pte_adapter.analysis.numerics.rows import MethodNumerics, NumericRow

PROBLEM_KEY: Final = "numeric gap problem"
ACCURACY_KEY: Final = "accuracy"
OUTPUT_SNR_KEY: Final = "output SNR"


def _snr(r: NumericRow) -> str:
    from pte_adapter.render.numerics_facts import snr_text

    return f"{snr_text(r.snr_db)} dB"


def _node_attrs(rows: list[NumericRow]) -> dict[str, str]:
    attrs: dict[str, str] = {}
    several = len(rows) > 1
    for r in sorted(rows, key=lambda r: r.output):
        m = r.metrics
        if m is None:
            continue
        tail = f" (output {r.output}: {r.layer})" if several else ""
        attrs[f"SNR{tail}"] = _snr(r)
        cos = f", cosine {m.cosine:.6f}" if m.cosine is not None else ""
        attrs[f"gap{tail}"] = f"MSE {m.mse:.4g}, max |difference| {m.max_abs:.4g}{cos}"
        if m.non_finite:
            attrs[f"NaN/Inf{tail}"] = (
                f"{m.nan} NaN, {m.inf} Inf here; {m.reference_nan} NaN, {m.reference_inf} Inf "
                "in the reference"
            )
        if r.dequantized is not None:
            attrs[f"dequantized{tail}"] = r.dequantized.text
    return attrs


def _group_text(rows: list[NumericRow]) -> str:
    worst = min(rows, key=lambda r: (r.snr_db if r.snr_db is not None else 0.0, r.output))
    where = worst.layer or ", ".join(worst.runtime_ops)
    more = f", worst of {len(rows)} outputs" if len(rows) > 1 else ""
    return f"{_snr(worst)} at {where} (instruction {worst.first_instruction}{more})"


def _method_attrs(graph: Graph, m: MethodNumerics, placement: MethodPlacement) -> None:
    # The wording is imported here: a conversion that compares nothing does not import it.
    from pte_adapter.render.numerics_facts import accuracy_text, emulated_words, reference_text

    nodes = {n.id: n for n in graph.nodes}
    by_instruction: dict[int, list[NumericRow]] = {}
    by_partition: dict[int, list[NumericRow]] = {}
    for r in m.compared:
        for i in r.instructions[-1:]:  # the instruction whose output it is
            by_instruction.setdefault(i, []).append(r)
        if r.boundary:
            by_partition.setdefault(r.partition, []).append(r)
    for i, rows in by_instruction.items():
        node = (
            nodes.get(placement.instructions[i]) if 0 <= i < len(placement.instructions) else None
        )
        if node is not None:
            node.attrs.update(_node_attrs(rows))
    groups = graph.group_attrs if graph.group_attrs is not None else {}
    for p, rows in by_partition.items():
        if 0 <= p < len(placement.groups):
            groups.setdefault(placement.groups[p], {})[OUTPUT_SNR_KEY] = _group_text(rows)
    top = groups.setdefault("", {})
    top[ACCURACY_KEY] = accuracy_text(m)
    top["numeric gap vs"] = reference_text(m)
    words = emulated_words(m.emulated, m.reference_emulated)
    if words:
        top["numeric gap values"] = words
    graph.group_attrs = groups


def add_numerics(
    result: ProgramAnalysis, graphs: list[Graph], placements: dict[str, MethodPlacement]
) -> None:
    """Add the numeric gap to the planned graphs (module docstring)."""
    by_id = {g.id: g for g in graphs}
    if result.numerics_error is not None:
        for ma in result.methods:
            graph = by_id[placements[ma.name].graph_id]
            groups = graph.group_attrs if graph.group_attrs is not None else {}
            groups.setdefault("", {})[PROBLEM_KEY] = str(result.numerics_error)
            graph.group_attrs = groups
        return
    for ma in result.methods:
        m = ma.numerics
        if m is None or m.reference is None:
            continue
        placement = placements[ma.name]
        _method_attrs(by_id[placement.graph_id], m, placement)
