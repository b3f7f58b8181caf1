"""Measured times as text, in the unit the profile gives them (`ProfileSummary["unit"]`).

Milliseconds read `1.234 ms`. Cycles read `123456 cycles`, and with a clock also as time:
`123456 cycles (0.823 ms)` - the conversion is the summary's own `ms_per_unit`, applied to its
numbers, never to text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pte_adapter.analysis.profile.time_scale import NS_PER
from pte_adapter.wording import TimeFormat

if TYPE_CHECKING:  # a profile's modules are imported when there is one
    from pte_adapter.analysis.profile.report_types import ProfileSummary


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


# The parts a run's time splits into, as every view names them.
SPLIT_LABELS: Final = {
    "delegates": "delegates",
    "cpu_compute": "CPU compute",
    "glue": "glue",
    "control": "control flow",
    "runtime": "runtime overhead",
}
