"""The `check` gate: compare a program's partition numbers with limits, and never pass vacuously.

A check with no limit, or for a method the program does not have, is a usage error (the caller
gets the list of methods that exist). A `--backend` the program does not use is counted (0
partitions) and said so, not silently accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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

    def any_limit(self) -> bool:
        return any(
            x is not None
            for x in (
                self.max_partitions,
                self.min_partitions,
                self.max_cpu_ops,
                self.max_cpu_islands,
            )
        )


@dataclass
class CheckResult:
    failures: list[str] = field(default_factory=list)  # one line per limit exceeded
    report: list[str] = field(default_factory=list)  # one line per method checked
    notes: list[str] = field(default_factory=list)  # e.g. a backend the program does not use

    @property
    def ok(self) -> bool:
        return not self.failures


NO_LIMIT = (
    "no limit given: pass at least one of --max-partitions, --min-partitions, --max-cpu-ops, "
    "--max-cpu-islands"
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def run_check(summary: dict[str, Any], limits: Limits) -> CheckResult:
    """Check every method (or `limits.method`) of a `summarize()` result against the limits."""
    if not limits.any_limit():
        raise CheckUsageError(NO_LIMIT)
    methods = summary["methods"]
    names = [m["name"] for m in methods]
    if limits.method is not None and limits.method not in names:
        raise CheckUsageError(
            f"no method {limits.method!r} in this program; its methods are: "
            + (", ".join(names) or "none")
        )
    result = CheckResult()
    if limits.backend is not None:
        used = sorted({b for m in methods for b in m["delegate_calls"]})
        if limits.backend not in used:
            result.notes.append(
                f"the program has no {limits.backend} partitions (delegates it uses: "
                + (", ".join(used) or "none")
                + ")"
            )
    for m in methods:
        if limits.method is not None and m["name"] != limits.method:
            continue
        _check_method(m, limits, result)
    return result


def _check_method(m: dict[str, Any], limits: Limits, result: CheckResult) -> None:
    name = m["name"]
    if limits.backend:
        count = int(m["delegate_calls"].get(limits.backend, 0))
        label = f"{limits.backend} partitions" if count != 1 else f"{limits.backend} partition"
    else:
        count = int(m["delegate_partitions"])
        label = "delegate partitions" if count != 1 else "delegate partition"
    compute = int(m["cpu_compute_calls"])
    islands = int(m["cpu_islands"])
    result.report.append(
        f"{name}: {count} {label}, {_plural(compute, 'CPU compute op')}, "
        f"{_plural(islands, 'CPU island')}"
    )
    if limits.max_partitions is not None and count > limits.max_partitions:
        result.failures.append(f"FAIL {name}: {count} {label} > {limits.max_partitions}")
    if limits.min_partitions is not None and count < limits.min_partitions:
        result.failures.append(f"FAIL {name}: {count} {label} < {limits.min_partitions}")
    if limits.max_cpu_ops is not None and compute > limits.max_cpu_ops:
        ops = ", ".join(f"{k} ×{n}" for k, n in m["cpu_compute_ops"].items())
        result.failures.append(
            f"FAIL {name}: {_plural(compute, 'CPU compute op')} > {limits.max_cpu_ops} ({ops})"
        )
    if limits.max_cpu_islands is not None and islands > limits.max_cpu_islands:
        result.failures.append(
            f"FAIL {name}: {_plural(islands, 'CPU island')} > {limits.max_cpu_islands}"
        )
    too_many = (
        (limits.max_partitions is not None and count > limits.max_partitions)
        or (limits.max_cpu_ops is not None and compute > limits.max_cpu_ops)
        or (limits.max_cpu_islands is not None and islands > limits.max_cpu_islands)
    )
    if too_many:  # the CPU ops that split the delegate's graph: their layer and reason
        result.failures.extend(why_lines(m))


def why_lines(m: dict[str, Any]) -> list[str]:
    """`  why aten::avg_pool3d.out in features.4 (LocalResponseNorm): <reason>` per CPU compute
    op (the layer from the ETRecord when there is one; the reason from the partitioner rules)."""
    modules = {s["instruction"]: s["modules"] for s in m.get("sources", [])}
    lines: list[str] = []
    for r in m.get("why", []):
        where = ", ".join(modules.get(r["instruction"], []))
        line = f"  why {r['operator']}" + (f" in {where}" if where else "") + f": {r['reason']}"
        if line not in lines:
            lines.append(line)
    return lines
