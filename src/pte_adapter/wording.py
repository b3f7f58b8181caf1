"""How every view writes a number for people: bytes, shapes, counts and signed changes.

One spelling per kind of value, on the ground floor so that every layer may use it (a decoder's
problem text, an analysis's error, a report's table): the same byte count reads the same in
`summary`, `fit`, the HTML report and Model Explorer's attributes. A measured time carries its
profile's unit and clock (`TimeFormat`; `render/time_facts.py` makes one from a profile).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def bytes_short(n: int) -> str:
    """`147.0 KiB`, `512 B`: binary units, one decimal."""
    for unit, size in _UNITS:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def bytes_text(n: int | None) -> str:
    """`147.0 KiB (150528 B)`: the short form with the exact count; `512 B`; `?` for unknown."""
    if n is None:
        return "?"
    short = bytes_short(n)
    return short if n < 1024 else f"{short} ({n} B)"


def signed_bytes(change: int, minus: str = "-") -> str:
    """`+1.2 KiB (1234 B)`, `-512 B`, `0 B`: a change in bytes (`minus`: "−" where the text
    around it uses the typographic sign)."""
    if change == 0:
        return "0 B"
    return ("+" if change > 0 else minus) + bytes_text(abs(change))


def shape_text(sizes: Iterable[object]) -> str:
    """`[1, 3, 224, 224]`: a shape as every view writes it."""
    return "[" + ", ".join(map(str, sizes)) + "]"


def shape_compact(sizes: Iterable[object]) -> str:
    """`1x3x224x224`: a shape where a label or a table column is narrow ("" for a scalar)."""
    return "x".join(map(str, sizes))


def counts_text(c: Mapping[str, int]) -> str:
    """`{"a": 1, "b": 3}` -> "b ×3, a ×1" (most frequent first)."""
    return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def thousands(n: int) -> str:
    """`4,253,326`: a large count with its thousands separated (a table cell whose header names
    the unit)."""
    return f"{n:,}"


def cycles_text(n: int) -> str:
    """`4,253,326 cycles`: a cycle count, its thousands separated as the what-if writes them."""
    return f"{thousands(n)} cycles"


def macs_text(n: int) -> str:
    """`301,301,120 MACs`: a count of multiply-accumulates, separated like a cycle count."""
    return f"{thousands(n)} MACs"


def plural(n: int, word: str, words: str | None = None) -> str:
    """`1 tensor`, `3 tensors` (`words`: the plural when it is not `word` + "s")."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def us_text(us: float) -> str:
    """A time in microseconds, three significant digits: 812.3 -> "812 us", 1868.8 -> "1.87 ms".

    Every estimated time (the NPU estimate, a partition's, the boundary cost, a what-if's) and a
    what-if's measured CPU time: one spelling in `summary`, the report and Model Explorer."""
    return f"{us / 1000:.3g} ms" if us >= 1000 else f"{us:.3g} us"


def time_figure(v: float | None, unit: str, signed: bool = False) -> str:
    """A measured time without its unit: three decimals in ms (`1.234`), whole ticks or cycles
    otherwise (`123456`); `signed`: with its sign (`+0.120`); `-` for none."""
    if v is None:
        return "-"
    if unit == MS:
        return f"{v:+.3f}" if signed else f"{v:.3f}"
    return f"{v:+.0f}" if signed else f"{v:.0f}"


def ms_text(ms: float) -> str:
    """`1.234 ms`: a measured time in milliseconds."""
    return f"{ms:.3f} ms"


MS: Final = "ms"


@dataclass(frozen=True)
class TimeFormat:
    unit: str  # "ms" | "cycles"
    ms_per_unit: float | None  # None: cycles without a clock

    def bare(self, v: float | None) -> str:
        """A number without its unit, for tables whose header names it."""
        return time_figure(v, self.unit)

    def ms(self, v: float | None) -> float | None:
        """The value in milliseconds; None when there is no time to give."""
        if v is None or self.ms_per_unit is None:
            return None
        return v * self.ms_per_unit

    def _time(self, v: float) -> str:
        if self.unit == MS or self.ms_per_unit is None or math.isnan(v):
            return ""
        return f" ({ms_text(v * self.ms_per_unit)})"

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
