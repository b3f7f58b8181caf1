"""The numeric gap as stable JSON (`pte-adapter numerics --json`, and `methods[].numerics` of
`summary --json`): the keys of docs/json.md, read from the analysis (`analysis/numerics/`)."""

from __future__ import annotations

import math
from typing import Any

from pte_adapter.analysis.numerics.rows import (
    MethodNumerics,
    NumericRow,
    ProgramNumerics,
    Unjoined,
)
from pte_adapter.analysis.numerics.values import QuantParams
from pte_adapter.analysis.program_analysis import ProgramAnalysis


def number(x: float | None) -> float | str | None:
    """A float as JSON holds it: `"inf"`, `"-inf"` and `"nan"` as strings."""
    if x is None:
        return None
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _quant(q: QuantParams | None) -> dict[str, Any] | None:
    if q is None:
        return None
    return {
        "scale": list(q.scale) if q.axis is not None else q.scale[0],
        "zero_point": list(q.zero_point) if q.axis is not None else q.zero_point[0],
        "axis": q.axis,
        "source": q.source,
    }


def row_json(r: NumericRow) -> dict[str, Any]:
    m, s = r.metrics, r.stats
    return {
        "aot_ops": list(r.aot_ops),
        "runtime_ops": list(r.runtime_ops),
        "layer": r.layer,
        "layer_by_rule": r.layer_by_rule,
        "module": r.module,
        "source_line": r.source_line,
        "instructions": list(r.instructions),
        "partition": r.partition,
        "partition_name": r.partition_name,
        "output": r.output,
        "shape": list(r.shape),
        "dtype": r.dtype,
        "dequantized": _quant(r.dequantized),
        "reference_instructions": list(r.reference_instructions),
        "reference_output": r.reference_output if r.reference_instructions else None,
        "reference_dtype": r.reference_dtype or None,
        "reference_dequantized": _quant(r.reference_dequantized),
        "mse": number(m.mse) if m else None,
        "l1": number(m.l1) if m else None,
        "mean_abs": number(m.mean_abs) if m else None,
        "snr_db": number(m.snr_db) if m else None,
        "max_abs": number(m.max_abs) if m else None,
        "cosine": number(m.cosine) if m else None,
        "elements": m.elements if m else (s.elements if s else None),
        "nan": (m.nan if m else s.nan if s else None),
        "inf": (m.inf if m else s.inf if s else None),
        "reference_nan": m.reference_nan if m else None,
        "reference_inf": m.reference_inf if m else None,
        "min": number(s.minimum) if s else None,
        "max": number(s.maximum) if s else None,
        "mean": number(s.mean) if s else None,
        "note": r.note,
    }


def _unjoined(u: Unjoined) -> dict[str, Any]:
    return {
        "runtime_ops": list(u.runtime_ops),
        "instructions": list(u.instructions),
        "layer": u.layer,
        "partition": u.partition,
        "output": u.output,
        "reason": u.reason,
    }


def _pointer(m: MethodNumerics, r: NumericRow | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "row": m.rows.index(r),
        "layer": r.layer,
        "layer_by_rule": r.layer_by_rule,
        "module": r.module,
        "snr_db": number(r.snr_db),
        "instructions": list(r.instructions),
        "partition": r.partition,
        "partition_name": r.partition_name,
    }


def method_numerics_json(m: MethodNumerics) -> dict[str, Any]:
    return {
        "reference": m.reference,
        "emulated": m.emulated,
        "reference_emulated": m.reference_emulated,
        "threshold_db": m.threshold_db,
        "run": m.run,
        "runs": m.runs,
        "rows": [row_json(r) for r in m.rows],
        "unjoined": [_unjoined(u) for u in m.unjoined],
        "worst": _pointer(m, m.worst),
        "first_below": _pointer(m, m.first_below),
        "below": len(m.below(m.threshold_db)),
        "non_finite": len(m.non_finite),
        "problems": list(m.problems),
    }


def numerics_json(result: ProgramAnalysis) -> dict[str, Any]:
    """What `pte-adapter numerics --json` prints."""
    n: ProgramNumerics | None = result.numerics
    program = result.program
    out: dict[str, Any] = {
        "file": program.path.name if program.path else "",
        "reference": n.reference if n else None,
        "etdump": n.etdump if n else None,
        "debug_buffer": n.debug_buffer or None if n else None,
        "reference_etdump": (n.reference_etdump or None) if n else None,
        "reference_debug_buffer": (n.reference_debug_buffer or None) if n else None,
        "emulated": n.emulated if n else False,
        "reference_emulated": n.reference_emulated if n else False,
        "threshold_db": n.threshold_db if n else None,
        "logged_outputs": n.logged_outputs if n else 0,
        "methods": [
            {"name": m.name, "numerics": method_numerics_json(m.numerics)}
            for m in result.methods
            if m.numerics is not None
        ],
        "problems": list(n.problems) if n else [],
    }
    if result.numerics_error is not None:
        out["problems"].append(str(result.numerics_error))
    return out
