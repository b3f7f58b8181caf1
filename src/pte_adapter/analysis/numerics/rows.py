"""The numeric gap as typed results: one row per compared runtime output, per method the worst row
and the first below the threshold, and what could not be compared.

Every view (`numerics` text and JSON, `summary`, `check --min-snr`, the report, Model Explorer)
reads these; none computes a metric or a join itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # the row's parts; every view imports this module, the numbers only when made
    from pte_adapter.analysis.numerics.metrics import Metrics, ValueStats
    from pte_adapter.analysis.numerics.values import QuantParams

DEFAULT_THRESHOLD_DB: Final = 30.0
AOT: Final = "aot"  # the reference of `--aot`: the ETRecord's graph, run by the Inspector


@dataclass(frozen=True)
class NumericRow:
    """One runtime output: where it is, what it is, and how far it is from the reference."""

    runtime_ops: tuple[str, ...]  # `native_call_convolution.out`, `DELEGATE_CALL`
    aot_ops: tuple[str, ...]  # the exported graph's nodes (the Inspector's names)
    layer: str  # the last of aot_ops that is not a quantize/dequantize ("" without an ETRecord)
    module: str  # `stem.0 (Conv2d)`
    source_line: str
    instructions: tuple[int, ...]  # method-level indices
    partition: int  # index among the method's partitions
    partition_name: str  # `XNNPACK partition 1 (XnnpackBackend)`, `CPU island 2`
    output: int  # which output of its instruction (0-based)
    shape: tuple[int, ...]
    dtype: str
    # One of several outputs of a call: `layer` is named by the Inspector's rule, a guess.
    layer_by_rule: bool = False
    place: str = ""  # its partition in short: `XNNPACK partition 1`, `CPU island 2`
    dequantized: QuantParams | None = None  # how this side's integers were made real numbers
    reference_instructions: tuple[int, ...] = ()  # the reference program's (`--reference`)
    reference_output: int = 0  # which output of its instruction
    reference_dtype: str = ""
    reference_dequantized: QuantParams | None = None
    metrics: Metrics | None = None  # None: nothing compared (no reference given)
    stats: ValueStats | None = None  # the values on their own
    note: str = ""  # e.g. "compared as integers, as the Inspector does"

    @property
    def snr_db(self) -> float | None:
        return self.metrics.snr_db if self.metrics is not None else None

    @property
    def first_instruction(self) -> int:
        return self.instructions[0] if self.instructions else -1


@dataclass(frozen=True)
class Unjoined:
    """A runtime output no reference value was found for, and why (listed, never guessed)."""

    runtime_ops: tuple[str, ...]
    instructions: tuple[int, ...]
    layer: str
    partition: int
    output: int
    reason: str


@dataclass
class MethodNumerics:
    method: str
    reference: str | None  # AOT, the reference program's file name, or None (values only)
    threshold_db: float
    run: int  # which of the method's runs (0-based) was compared
    runs: int  # how many the ETDump holds
    emulated: bool = False  # this program's values come from an emulated run (`emulated: ...`)
    reference_emulated: bool = False
    rows: list[NumericRow] = field(default_factory=list)
    unjoined: list[Unjoined] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    worst: NumericRow | None = None  # the lowest SNR (NaN rows aside)
    first_below: NumericRow | None = None  # the first row, in program order, below threshold_db

    @property
    def compared(self) -> list[NumericRow]:
        return [r for r in self.rows if r.metrics is not None]

    @property
    def non_finite(self) -> list[NumericRow]:
        """Rows whose values (either side) hold NaN or infinities."""
        out = []
        for r in self.rows:
            m, s = r.metrics, r.stats
            if (m is not None and m.non_finite) or (s is not None and (s.nan or s.inf)):
                out.append(r)
        return out

    def below(self, threshold_db: float) -> list[NumericRow]:
        """Compared rows whose SNR is under `threshold_db` (NaN counts as under: it is no
        agreement)."""
        return [
            r
            for r in self.compared
            if r.snr_db is not None and (math.isnan(r.snr_db) or r.snr_db < threshold_db)
        ]


@dataclass
class ProgramNumerics:
    """The numeric gap of a program's run: per method, and what was read."""

    etdump: str  # file names
    debug_buffer: str
    reference: str | None  # AOT, the reference program's file name, or None
    reference_etdump: str = ""
    reference_debug_buffer: str = ""
    threshold_db: float = DEFAULT_THRESHOLD_DB
    emulated: bool = False
    reference_emulated: bool = False
    logged_outputs: int = 0  # tensors the ETDump logged as instruction outputs (all runs)
    methods: dict[str, MethodNumerics] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def method(self, name: str) -> MethodNumerics | None:
        return self.methods.get(name)


def summarise(m: MethodNumerics) -> None:
    """Set the method's worst row and its first row below the threshold."""
    compared = [r for r in m.compared if r.snr_db is not None and not math.isnan(r.snr_db)]
    m.worst = min(compared, key=lambda r: (r.snr_db, r.first_instruction), default=None)
    below = sorted(m.below(m.threshold_db), key=lambda r: (r.first_instruction, r.output))
    m.first_below = below[0] if below else None
