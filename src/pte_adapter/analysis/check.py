"""The `check` gate: compare a program's partition numbers with limits, and never pass vacuously.

A check with no limit, or for a method the program does not have, is a usage error (the caller
gets the list of methods that exist). A `--backend` the program does not use is counted (0
partitions) and said so, not silently accepted. The wording is `render/check_report.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.profile.report_types import DriftJSON
from pte_adapter.analysis.summary import MethodSummary


class CheckUsageError(ValueError):
    """The check cannot be run as asked (no limit, unknown method)."""


@dataclass
class Limits:
    max_partitions: int | None = None
    min_partitions: int | None = None
    max_cpu_ops: int | None = None
    max_cpu_islands: int | None = None
    backend: str | None = None  # count only this backend's partitions
    method: str | None = None  # check only this method
    # Most CPU islands an export setting alone would fix (what_if.EASY_FIXES).
    max_fixable_islands: int | None = None
    # A runtime's operator list or backends were given: a program it cannot load fails
    # (analysis/load_check.py).
    runtime: bool = False
    # Most the measured latency may change over the runs, in percent, either way (an ETDump's
    # drift: analysis/profile/drift.py).
    max_drift: float | None = None

    def any_limit(self) -> bool:
        return self.runtime or any(
            x is not None
            for x in (
                self.max_partitions,
                self.min_partitions,
                self.max_cpu_ops,
                self.max_cpu_islands,
                self.max_fixable_islands,
                self.max_drift,
            )
        )


@dataclass
class MethodCheck:
    """One method's numbers against the limits."""

    summary: MethodSummary
    partitions: int  # delegate partitions (of `Limits.backend` only, when given)
    compute: int  # CPU compute kernel calls
    islands: int
    fixable: list[str] = field(default_factory=list)  # those islands: "CPU island 2: <fix>"
    failed: list[str] = field(default_factory=list)  # limit names exceeded, in Limits' order
    # With --max-drift: the method's runs over time (None: the ETDump has no runs of it).
    drift: DriftJSON | None = None

    @property
    def too_many(self) -> bool:
        """A "too many" limit failed: the CPU ops that split the graph are worth naming."""
        return any(f not in ("min_partitions", "max_drift") for f in self.failed)


@dataclass
class CheckResult:
    limits: Limits
    methods: list[MethodCheck] = field(default_factory=list)
    unused_backend: list[str] | None = None  # `--backend` not in the program: the ones it uses

    @property
    def ok(self) -> bool:
        return not any(m.failed for m in self.methods)


NO_LIMIT = (
    "no limit given: pass at least one of --max-partitions, --min-partitions, --max-cpu-ops, "
    "--max-cpu-islands, --max-fixable-islands, --runtime-ops, --runtime-backends, --max-drift"
)


def run_check(
    methods: list[MethodSummary],
    limits: Limits,
    fixable: dict[str, list[str]] | None = None,
    drift: dict[str, DriftJSON] | None = None,
) -> CheckResult:
    """Check every method (or `limits.method`) against the limits; `fixable`: per method, its
    islands an export setting alone would fix (the what-if); `drift`: per method that ran, its
    runs over time (with `max_drift`)."""
    if not limits.any_limit():
        raise CheckUsageError(NO_LIMIT)
    names = [m.name for m in methods]
    if limits.method is not None and limits.method not in names:
        raise CheckUsageError(
            f"no method {limits.method!r} in this program; its methods are: "
            + (", ".join(names) or "none")
        )
    result = CheckResult(limits)
    if limits.backend is not None:
        used = sorted({b for m in methods for b in m.delegate_calls})
        if limits.backend not in used:
            result.unused_backend = used
    for m in methods:
        if limits.method is None or m.name == limits.method:
            checked = _check_method(m, limits, (fixable or {}).get(m.name, []))
            if limits.max_drift is not None:
                checked.drift = (drift or {}).get(m.name)
                if drift_exceeded(checked.drift, limits.max_drift):
                    checked.failed.append("max_drift")
            result.methods.append(checked)
    return result


def drift_exceeded(drift: DriftJSON | None, limit: float) -> bool:
    """The latency changed more than `limit` percent either way, or could not be measured (no
    runs, too few): a gate never passes on what it did not see."""
    if drift is None or drift["change_pct"] is None:
        return True
    return abs(drift["change_pct"]) > limit


def _check_method(m: MethodSummary, limits: Limits, fixable: list[str]) -> MethodCheck:
    count = m.delegate_calls.get(limits.backend, 0) if limits.backend else m.delegate_partitions
    out = MethodCheck(m, count, m.cpu_compute_calls, m.cpu_islands, list(fixable))
    if limits.max_partitions is not None and count > limits.max_partitions:
        out.failed.append("max_partitions")
    if limits.min_partitions is not None and count < limits.min_partitions:
        out.failed.append("min_partitions")
    if limits.max_cpu_ops is not None and out.compute > limits.max_cpu_ops:
        out.failed.append("max_cpu_ops")
    if limits.max_cpu_islands is not None and out.islands > limits.max_cpu_islands:
        out.failed.append("max_cpu_islands")
    if limits.max_fixable_islands is not None and len(fixable) > limits.max_fixable_islands:
        out.failed.append("max_fixable_islands")
    return out
