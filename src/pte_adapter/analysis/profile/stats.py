"""Run-to-run statistics of measured times (no numpy: the adapter's runtime needs only flatbuffers)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pte_adapter.analysis.profile.report_types import StatsJSON


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks.

    The same definition as numpy's default (`method="linear"`), which ExecuTorch's Inspector uses
    for its p10/p50/p90, so the numbers can be compared with it."""
    if not values:
        return math.nan
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    p10: float
    p90: float
    min: float
    max: float
    mean: float

    @classmethod
    def of(cls, values: list[float]) -> Stats:
        if not values:
            return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
        return cls(
            len(values),
            percentile(values, 50),
            percentile(values, 10),
            percentile(values, 90),
            min(values),
            max(values),
            sum(values) / len(values),
        )

    def as_dict(self, digits: int = 4) -> StatsJSON:
        def r(v: float) -> float | None:
            return None if math.isnan(v) else round(v, digits)

        return {
            "n": self.n,
            "median": r(self.median),
            "p10": r(self.p10),
            "p90": r(self.p90),
            "min": r(self.min),
            "max": r(self.max),
            "mean": r(self.mean),
        }


def median_share(parts: list[float], totals: list[float]) -> float:
    """Median over runs of part / total (runs without a total are left out)."""
    ratios = [p / t for p, t in zip(parts, totals, strict=True) if t > 0]
    return percentile(ratios, 50) if ratios else 0.0
