"""The numeric gap as Model Explorer node data: each compared instruction, and each partition's
group (its output's value), coloured by the chosen metric (`pte-adapter numerics --node-data`,
the "Numeric gap" node data provider).

The format is Model Explorer's own, as for measured time (`render/node_data.py`): per graph id,
`results` maps a node id to `{"value": number}`, and the `gradient` colours from the smallest value
(stop 0) to the largest (stop 1). The colours run from deep red (the worst) to pale (the best):
for SNR and cosine the worst is the lowest value, for the error metrics the highest. SNR without
noise (`inf`, two equal tensors) is drawn as `INF_DB`, which the overlay's name says.

Values are read from the analysis (`analysis/numerics/`), placed on the node ids the plan drew
(`render/plan/`): an instruction with several compared outputs takes the worst of them, as does a
partition's group (its outputs, the tensors that leave it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from pte_adapter.analysis.numerics.rows import MethodNumerics, NumericRow
from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.render.plan.graph import MethodPlacement, ProgramPlan

INF_DB: Final = 200.0
LAYER_SUFFIX: Final = "___group___"  # Model Explorer's node id of a layer (group)
_WORST: Final = "#b2182b"  # deep red
_MIDDLE: Final = "#f4a582"
_BEST: Final = "#fddbc7"


def _snr(r: NumericRow) -> float | None:
    v = r.metrics.snr_db if r.metrics else None
    if v is None or math.isnan(v):
        return None
    return INF_DB if math.isinf(v) and v > 0 else max(v, -INF_DB)


def _get(name: str) -> Callable[[NumericRow], float | None]:
    def value(r: NumericRow) -> float | None:
        v = getattr(r.metrics, name, None) if r.metrics else None
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    return value


# metric -> (value of a row, its name in the overlay, whether lower is worse)
METRICS: Final[dict[str, tuple[Callable[[NumericRow], float | None], str, bool]]] = {
    "snr": (_snr, f"SNR dB (no noise shown as {INF_DB:g})", True),
    "mse": (_get("mse"), "MSE", False),
    "l1": (_get("l1"), "L1 (sum of |difference|)", False),
    "mean_abs": (_get("mean_abs"), "mean |difference|", False),
    "max_abs": (_get("max_abs"), "max |difference|", False),
    "cosine": (_get("cosine"), "cosine similarity", True),
}


def gradient(lower_is_worse: bool) -> list[dict[str, Any]]:
    worst, best = (0, 1) if lower_is_worse else (1, 0)
    return [
        {"stop": worst, "bgColor": _WORST},
        {"stop": 0.5, "bgColor": _MIDDLE},
        {"stop": best, "bgColor": _BEST},
    ]


def _worst(values: list[float], lower_is_worse: bool) -> float:
    return min(values) if lower_is_worse else max(values)


def method_values(m: MethodNumerics, placement: MethodPlacement, metric: str) -> dict[str, float]:
    """Node id -> the metric's value: instructions and partition groups (module docstring)."""
    value, _, lower_is_worse = METRICS[metric]
    per_node: dict[str, list[float]] = {}
    per_group: dict[int, list[float]] = {}
    for r in m.rows:
        v = value(r)
        if v is None:
            continue
        for i in r.instructions:
            if 0 <= i < len(placement.instructions):
                per_node.setdefault(placement.instructions[i], []).append(v)
        per_group.setdefault(r.partition, []).append(v)
    out = {node: _worst(vs, lower_is_worse) for node, vs in per_node.items()}
    for p, vs in per_group.items():
        if 0 <= p < len(placement.groups):
            out[placement.groups[p] + LAYER_SUFFIX] = _worst(vs, lower_is_worse)
    return out


def numerics_node_data(
    result: ProgramAnalysis, plan: ProgramPlan, metric: str = "snr"
) -> dict[str, Any]:
    """Node data for every method with compared rows, keyed by graph id."""
    _, label, lower_is_worse = METRICS[metric]
    n = result.numerics
    against = "" if n is None or n.reference is None else f" vs {n.reference}"
    emulated = " (EMULATED)" if n is not None and (n.emulated or n.reference_emulated) else ""
    out: dict[str, Any] = {}
    for ma in result.methods:
        m = ma.numerics
        if m is None or not m.compared:
            continue
        placement = plan.methods[ma.name]
        values = method_values(m, placement, metric)
        out[placement.graph_id] = {
            "name": f"numeric gap: {label}{against}{emulated}",
            "results": {k: {"value": float(f"{v:.6g}")} for k, v in values.items()},
            "gradient": gradient(lower_is_worse),
        }
    return out
