"""Measured times as text, in the unit the profile gives them (`ProfileSummary["unit"]`).

Milliseconds read `1.234 ms`. Cycles read `123456 cycles`, and with a clock also as time:
`123456 cycles (0.823 ms)` - the conversion is the summary's own `ms_per_unit`, applied to its
numbers, never to text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from pte_adapter.analysis.profile.report_types import ProfileSummary
from pte_adapter.analysis.profile.time_scale import NS_PER

MS: Final = "ms"


@dataclass(frozen=True)
class TimeFormat:
    unit: str  # "ms" | "cycles"
    ms_per_unit: float | None  # None: cycles without a clock

    def bare(self, v: float | None) -> str:
        """A number without its unit, for tables whose header names it."""
        if v is None:
            return "-"
        return f"{v:.3f}" if self.unit == MS else f"{v:.0f}"

    def ms(self, v: float | None) -> float | None:
        """The value in milliseconds; None when there is no time to give."""
        if v is None or self.ms_per_unit is None:
            return None
        return v * self.ms_per_unit

    def _time(self, v: float) -> str:
        if self.unit == MS or self.ms_per_unit is None or math.isnan(v):
            return ""
        return f" ({v * self.ms_per_unit:.3f} ms)"

    def value(self, v: float | None) -> str:
        """`1.234 ms`, `123456 cycles (0.823 ms)`, `123456 cycles`; "-" when there is none."""
        if v is None:
            return "-"
        return f"{self.bare(v)} {self.unit}{self._time(v)}"

    def pair(self, low: float, high: float) -> str:
        """`0.100 / 0.300 ms`, `1000 / 3000 cycles (0.007 / 0.020 ms)`."""
        text = f"{self.bare(low)} / {self.bare(high)} {self.unit}"
        if self.unit == MS or self.ms_per_unit is None:
            return text
        return f"{text} ({low * self.ms_per_unit:.3f} / {high * self.ms_per_unit:.3f} ms)"


def time_format(summary: ProfileSummary) -> TimeFormat:
    return TimeFormat(summary["unit"], summary["ms_per_unit"])


def scale_text(summary: ProfileSummary) -> str:
    """What a tick was taken to be: `1 tick = 1 ns`, `1 tick = 1 cycle at 150 MHz`."""
    source, tick_ns, clock = summary["time_scale"], summary["tick_ns"], summary["clock_mhz"]
    if source != "cycles":
        per = (tick_ns or 0) / NS_PER[source]
        return f"1 tick = {per:g} {source}"
    if clock is None:
        return "1 tick = 1 cycle; no clock given, so no time"
    return f"1 tick = 1 cycle at {clock:g} MHz ({tick_ns:.4g} ns)"
