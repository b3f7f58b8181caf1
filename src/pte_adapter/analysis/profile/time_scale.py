"""What one ETDump tick is, and the unit the profile's numbers are given in.

Nothing in an ETDump says what its ticks are: the runtime stores `et_pal_current_ticks()`, which
counts nanoseconds on a host (ExecuTorch's Python runtime) and CPU cycles on a Cortex-M board or
a Corstone FVP (Arm's runner reads the PMU cycle counter; ExecuTorch's Inspector is then run with
`source_time_scale="cycles"`). So the scale is the user's to give:

- `ns`, `us`, `ms`: ticks of that length; the numbers are shown in milliseconds (`unit` "ms");
- `cycles`: the numbers are shown in cycles (`unit` "cycles"), as recorded; with the clock in MHz
  each is also shown as time (`ms_per_unit`);
- `--tick-ns N` (older): ticks of N nanoseconds.

Where it comes from, first match wins: the command line (`pte-adapter profile --time-scale cycles
--clock-mhz 150`, `--tick-ns`), else the ETDump's file name (`scale_in_name`: `model.cycles.etdp`,
`model.150MHz.etdp`, `etdump.150MHz.bin` — the way to set it in Model Explorer, which has no
options), else nanoseconds. docs/profiling.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

UNITS: Final = ("ns", "us", "ms", "cycles")
NS_PER: Final = {"ns": 1.0, "us": 1e3, "ms": 1e6}
NS_PER_MS: Final = 1e6
_CLOCK: Final = re.compile(r"(\d+(?:\.\d+)?)mhz", re.IGNORECASE)


class TimeScaleError(ValueError):
    """A time scale that means nothing (a clock for nanoseconds, a zero tick)."""


@dataclass(frozen=True)
class TimeScale:
    unit: str = "ns"  # what a tick counts: ns | us | ms | cycles
    per_tick: float = 1.0  # units per tick (`--tick-ns N`: N ns per tick)
    clock_mhz: float | None = None  # cycles only: the CPU clock, to show cycles as time too

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise TimeScaleError(f"unknown time scale {self.unit!r}: use one of {', '.join(UNITS)}")
        if not self.per_tick > 0:
            raise TimeScaleError(f"a tick must be a positive number of {self.unit}")
        if self.clock_mhz is not None and (self.unit != "cycles" or not self.clock_mhz > 0):
            raise TimeScaleError("a clock (MHz) goes with a time scale of cycles, and is positive")

    @property
    def shown_unit(self) -> str:
        """The unit every number of the profile is given in: "ms", or "cycles"."""
        return "cycles" if self.unit == "cycles" else "ms"

    @property
    def per_tick_shown(self) -> float:
        """Ticks to the shown unit."""
        if self.unit == "cycles":
            return self.per_tick
        return self.per_tick * NS_PER[self.unit] / NS_PER_MS

    @property
    def ms_per_unit(self) -> float | None:
        """Milliseconds per shown unit; None for cycles without a clock (no time to show)."""
        if self.unit != "cycles":
            return 1.0
        return 1.0 / (self.clock_mhz * 1e3) if self.clock_mhz else None

    @property
    def tick_ns(self) -> float | None:
        """Nanoseconds per tick; None when unknown (cycles without a clock)."""
        ms = self.ms_per_unit
        return None if ms is None else self.per_tick_shown * ms * NS_PER_MS

    @property
    def text(self) -> str:
        """`1 tick = 1 ns`, `1 tick = 1 cycle at 150 MHz (6.667 ns)`, `1 tick = 1 cycle`."""
        if self.unit != "cycles":
            return f"1 tick = {self.per_tick:g} {self.unit}"
        cycle = "1 cycle" if self.per_tick == 1 else f"{self.per_tick:g} cycles"
        if self.clock_mhz is None:
            return f"1 tick = {cycle} (no clock given: times in cycles only)"
        return f"1 tick = {cycle} at {self.clock_mhz:g} MHz ({self.tick_ns:.4g} ns)"


NANOSECONDS: Final = TimeScale()


def from_tick_ns(tick_ns: float) -> TimeScale:
    """`--tick-ns N`: ticks of N nanoseconds."""
    return TimeScale("ns", tick_ns)


def scale_in_name(token: str) -> TimeScale | None:
    """The time scale a file-name part names: `ns`, `us`, `ms`, `cycles`, or `<N>MHz` (cycles at
    that clock); None for anything else."""
    low = token.lower()
    if low in UNITS:
        return TimeScale(low)
    clock = _CLOCK.fullmatch(low)
    if clock and float(clock.group(1)) > 0:
        return TimeScale("cycles", clock_mhz=float(clock.group(1)))
    return None
