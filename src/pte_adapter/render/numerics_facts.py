"""The numeric gap in words every view shares (`snr_text`, `where_text`, `accuracy_line`): the
`numerics` command, the one line per method of `summary`, Model Explorer's attributes and the HTML
report, all read from the analysis."""

from __future__ import annotations

import math
from typing import Final

from pte_adapter.analysis.numerics.rows import (
    AOT,
    MethodNumerics,
    NumericRow,
    ProgramNumerics,
)

EMULATED: Final = "EMULATED"


def snr_text(db: float | None) -> str:
    if db is None:
        return "-"
    if math.isnan(db):
        return "NaN"
    if math.isinf(db):
        return "inf" if db > 0 else "-inf"
    return f"{db:.2f}"


def figure_text(x: float | None) -> str:
    """Three significant digits; `-` for none, NaN and inf as `snr_text` writes them."""
    if x is None:
        return "-"
    if math.isnan(x) or math.isinf(x):
        return snr_text(x)
    return f"{x:.3g}"


def reference_text(n: ProgramNumerics | MethodNumerics) -> str:
    """`numerics_xnnpack_fp32.pte` / `the ETRecord's graph (--aot)` / `nothing`."""
    if n.reference == AOT:
        return "the ETRecord's graph run by ExecuTorch's Inspector (--aot)"
    return n.reference or "nothing (values only: give --reference OTHER.pte or --aot)"


def emulated_words(emulated: bool, reference_emulated: bool) -> str:
    """'' for measured runs; else which side's values an emulation computed."""
    sides = [s for s, e in (("this run", emulated), ("the reference run", reference_emulated)) if e]
    return (
        f"{EMULATED}: {' and '.join(sides)} computed by an emulation, not a device" if sides else ""
    )


def where_text(r: NumericRow) -> str:
    """`head (Linear) linear, instruction 3 (XNNPACK partition 2 (XnnpackBackend))`."""
    what = r.layer or ", ".join(r.runtime_ops)
    module = f"{r.module} " if r.module else ""
    ins = ", ".join(str(i) for i in r.instructions)
    return f"{module}{what}, instruction {ins} ({r.partition_name})"


def accuracy_line(m: MethodNumerics) -> str:
    """One line per method: `accuracy: first below 30 dB at norm (XNNPACK partition 1 ...), worst
    22.5 dB at norm (...); 4 outputs vs numerics_island_fp32.pte`."""
    if m.reference is None:
        tag = " (emulated)" if m.emulated else ""
        return f"values: {len(m.rows)} logged outputs{tag}, nothing to compare with"
    return f"accuracy: {accuracy_text(m)}"


def accuracy_text(m: MethodNumerics) -> str:
    """`accuracy_line` without its label (the Graph info attribute is named `accuracy`)."""
    compared = m.compared
    if not compared:
        return f"nothing compared ({len(m.unjoined)} outputs not joined)"
    first = (
        f"first below {m.threshold_db:g} dB at {_short(m.first_below)}"
        if m.first_below is not None
        else f"none below {m.threshold_db:g} dB"
    )
    worst = ""
    if m.worst is not None:
        same = m.worst is m.first_below or _short(m.worst) == _short(m.first_below)
        worst = f", worst {snr_text(m.worst.snr_db)} dB" + (
            "" if same else f" at {_short(m.worst)}"
        )
    bad = len(m.non_finite)
    extra = f", {bad} with NaN/Inf" if bad else ""
    against = "the ETRecord graph" if m.reference == AOT else m.reference
    emulated = " (emulated)" if m.emulated or m.reference_emulated else ""
    outputs = f"{len(compared)} output{'' if len(compared) == 1 else 's'}"
    return f"{first}{worst}; {outputs} vs {against}{extra}{emulated}"


def _short(r: NumericRow | None) -> str:
    """`norm (XNNPACK partition 1)`: the layer's module path (else its node) and where it ran."""
    if r is None:
        return ""
    where = r.place or r.partition_name
    name = r.module.split(" ")[0] if r.module and not r.module.startswith("(") else r.layer
    return f"{name} ({where})" if name else where
