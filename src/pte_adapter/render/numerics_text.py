"""The numeric gap as text: `pte-adapter numerics` and the `--min-snr` check's lines; the words
every view shares are numerics_facts.py's."""

from __future__ import annotations

from pte_adapter.analysis.numerics.rows import (
    AOT,
    BY_PROVENANCE,
    MethodNumerics,
    NumericRow,
)
from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.render.numerics_facts import (
    emulated_words,
    figure_text,
    reference_text,
    snr_text,
    where_text,
)
from pte_adapter.wording import shape_compact


def _row_line(r: NumericRow, compared: bool) -> str:
    shape = shape_compact(r.shape) or "scalar"
    ins = ",".join(str(i) for i in r.instructions)
    mark = " ?" if r.layer_by_rule else " ~" if r.joined_by == BY_PROVENANCE else ""
    layer = r.layer[: 22 - len(mark)] + mark
    head = (
        f"  {ins:>5}  {', '.join(r.runtime_ops)[:34]:34}  {layer:22}  "
        f"{r.module[:24]:24}  {shape:>12}"
    )
    if compared and r.metrics is not None:
        m = r.metrics
        cos = f"{m.cosine:.5f}" if m.cosine is not None else "-"
        flag = "  NaN/Inf" if m.non_finite else ""
        return (
            f"{head}  {snr_text(m.snr_db):>8}  {figure_text(m.mse):>9}  {figure_text(m.l1):>9}  "
            f"{figure_text(m.max_abs):>9}  {cos:>8}{flag}"
        )
    s = r.stats
    if s is None:
        return f"{head}  {r.note}"
    flag = f"  {s.nan} NaN, {s.inf} Inf" if s.nan or s.inf else ""
    return f"{head}  {figure_text(s.minimum):>9}  {figure_text(s.maximum):>9}  {figure_text(s.mean):>9}{flag}"


def _method_text(m: MethodNumerics, everything: bool) -> list[str]:
    compared = m.reference is not None
    run = f"run {m.run + 1} of {m.runs}" if m.runs else "no run logged"
    lines = [
        f"method {m.method}: {run}, {len(m.compared)} outputs compared, "
        f"{len(m.unjoined)} not joined"
        if compared
        else f"method {m.method}: {run}, {len(m.rows)} logged outputs"
    ]
    if m.rows:
        cols = (
            f"{'SNR dB':>8}  {'MSE':>9}  {'L1 (sum)':>9}  {'max |d|':>9}  {'cosine':>8}"
            if compared
            else f"{'min':>9}  {'max':>9}  {'mean':>9}"
        )
        lines.append(
            f"  {'instr':>5}  {'runtime ops':34}  {'layer':22}  {'module':24}  {'shape':>12}  "
            + cols
        )
        by_partition = ""
        for r in sorted(m.rows, key=lambda r: (r.first_instruction, r.output)):
            if r.partition_name != by_partition:
                by_partition = r.partition_name
                lines.append(f"  [{r.partition_name}]")
            lines.append(_row_line(r, compared))
            if everything and r.dequantized is not None:
                lines.append(f"         dequantized with {r.dequantized.text}")
            if everything and r.reference_dequantized is not None:
                lines.append(f"         reference dequantized with {r.reference_dequantized.text}")
            if everything and r.note and (r.metrics is not None or r.stats is not None):
                lines.append(f"         {r.note}")
    if any(r.layer_by_rule for r in m.rows) and not everything:
        lines.append(
            "  ?: one of several outputs of a call, its layer named by the Inspector's rule "
            "(--all says more)"
        )
    if any(r.joined_by == BY_PROVENANCE for r in m.rows) and not everything:
        lines.append(
            "  ~: joined by provenance: the reference computes the same node of the network "
            "another way (--all names both)"
        )
    if compared:
        if m.worst is not None:
            lines.append(f"  worst: {snr_text(m.worst.snr_db)} dB at {where_text(m.worst)}")
        lines.append(
            f"  first below {m.threshold_db:g} dB: "
            + (where_text(m.first_below) if m.first_below is not None else "none")
        )
    for u in m.unjoined if everything else m.unjoined[:5]:
        ins = ",".join(str(i) for i in u.instructions)
        lines.append(f"  not joined: instruction {ins} {', '.join(u.runtime_ops)}: {u.reason}")
    if not everything and len(m.unjoined) > 5:
        lines.append(f"  ... and {len(m.unjoined) - 5} more not joined (--all lists them)")
    lines += [f"  problem: {p}" for p in m.problems]
    return lines


def numerics_text(result: ProgramAnalysis, everything: bool = False) -> str:
    """What `pte-adapter numerics` prints."""
    n = result.numerics
    name = result.program.path.name if result.program.path else "<program>"
    if n is None:
        why = str(result.numerics_error) if result.numerics_error else "no numerics"
        return f"{name}: {why}\n"
    files = f"{n.etdump} + {n.debug_buffer or '(no debug buffer)'}"
    lines = [f"{name} ({files}) compared with {reference_text(n)}"]
    if n.reference not in (None, AOT):
        lines.append(f"reference run: {n.reference_etdump} + {n.reference_debug_buffer or '-'}")
    words = emulated_words(n.emulated, n.reference_emulated)
    if words:
        lines.append(words)
    lines.append(
        f"SNR = 10 log10(mean(reference^2) / MSE); L1 is the sum of |difference| (the "
        f"Inspector's); threshold {n.threshold_db:g} dB"
        if n.reference is not None
        else f"{n.logged_outputs} logged outputs"
    )
    for m in result.methods:
        if m.numerics is not None:
            lines += ["", *_method_text(m.numerics, everything)]
    if n.problems:
        lines.append("")
        lines += [f"problem: {p}" for p in n.problems]
    return "\n".join(lines) + "\n"


def snr_check_lines(methods: list[MethodNumerics], min_snr: float) -> tuple[list[str], list[str]]:
    """`check --min-snr`: (one failure line per output below `min_snr`, or for a method where
    nothing was compared; the report lines when all pass)."""
    failed: list[str] = []
    report: list[str] = []
    for m in methods:
        tag = " (emulated)" if m.emulated or m.reference_emulated else ""
        if not m.compared:
            failed.append(
                f"method {m.method}{tag}: numeric gap: nothing compared "
                f"({len(m.unjoined)} outputs not joined); --min-snr {min_snr:g} cannot pass"
            )
            continue
        for r in sorted(m.below(min_snr), key=lambda r: (r.first_instruction, r.output)):
            failed.append(
                f"method {m.method}{tag}: SNR {snr_text(r.snr_db)} dB < {min_snr:g} at "
                f"{where_text(r)}"
            )
        worst = snr_text(m.worst.snr_db) if m.worst is not None else "-"
        report.append(
            f"method {m.method}{tag}: {len(m.compared)} outputs compared, worst SNR {worst} dB "
            f"(min {min_snr:g})"
        )
    if not methods:
        failed.append("numeric gap: no method's values were read; --min-snr cannot pass")
    return failed, report
