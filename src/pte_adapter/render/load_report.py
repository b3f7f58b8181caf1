"""`pte-adapter ops`'s whole output and the check against a runtime in words: the text (what the
program needs, `ops_report.py`'s lines, then the runtime's verdict), the JSON (`ops --json`, keys
in docs/json.md), the `missing ...` lines (stderr, and `check`'s `FAIL` lines) and the reason a
kernel is missing in one sentence."""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.load_check import (
    NO_KERNEL_KEYS,
    NOT_LISTED,
    NOT_ROOT,
    OTHER_KERNEL_KEYS,
    LoadCheck,
    MissingOperator,
)
from pte_adapter.analysis.needs import RuntimeNeeds
from pte_adapter.container.runtime_list import OPERATOR_LIST
from pte_adapter.program.model import dtype_name
from pte_adapter.render.needs_facts import needs_line
from pte_adapter.render.ops_report import (
    backend_lines,
    call_json,
    call_lines,
    custom_text,
    operator_json,
    operator_lines,
)
from pte_adapter.wording import plural


def _few(keys: list[str], n: int = 4) -> str:
    return ", ".join(keys[:n]) + (f" (+{len(keys) - n} more)" if len(keys) > n else "")


def missing_text(m: MissingOperator, runtime_name: str) -> str:
    """Why the runtime lacks the operator, in one sentence."""
    op = m.operator
    if m.reason == NOT_LISTED:
        text = f"not in {runtime_name}"
    elif m.reason == NOT_ROOT:
        text = f"{runtime_name} lists it with is_root_operator: false (codegen registers no kernel)"
    elif m.reason == NO_KERNEL_KEYS:
        text = (
            f"{runtime_name} lists it without et_kernel_metadata (codegen registers no kernel "
            "for it)"
        )
    else:
        lacking = ", ".join(dtype_name(d) for d in m.missing_dtypes)
        text = (
            f"{runtime_name} has it only for kernel keys {_few(m.runtime_keys)}; the program "
            f"calls it with {_few(m.missing_keys)}: a library of kernels specialised per key "
            "has none for these (the method is refused at load); ExecuTorch's portable kernels "
            "register one kernel for every key, "
            + (
                f"but built dtype-selective they lack {lacking} (the call fails when it runs)"
                if lacking
                else "and built dtype-selective they have these dtypes"
            )
        )
    return text + (f"; {custom_text(op)}" if op.custom else "")


def check_lines(check: LoadCheck) -> list[str]:
    """`missing: ...` per kernel and backend the runtime lacks, each followed by the calls that
    need it (for stderr, and `check`)."""
    several = len(check.needs.programs) > 1
    name = check.runtime.source if check.runtime is not None else "the runtime"
    lines: list[str] = []
    for m in check.missing_operators:
        lines.append(f"missing kernel {m.operator.name}: {missing_text(m, name)}")
        lines += call_lines(m.operator.calls, several, "    needed by ")
    have = ", ".join(check.backends or []) or "none"
    for b in check.missing_backends:
        lines.append(f"missing backend {b.backend}: not among the runtime's backends ({have})")
        lines += call_lines(b.calls, several, "    needed by ")
    return lines


def load_failure_lines(check: LoadCheck) -> list[str]:
    """`check`'s lines: `FAIL missing kernel ...` per kernel and backend the runtime lacks, each
    followed by the calls that need it."""
    return [f"FAIL {x}" if x.startswith("missing ") else x for x in check_lines(check)]


def load_ok_line(check: LoadCheck) -> str:
    """`check`'s line when the runtime has everything checked."""
    return (
        f"runtime {runtime_text(check)}: has every kernel and backend checked (the program "
        f"{needs_line(check.needs)})"
    )


def runtime_text(check: LoadCheck) -> str:
    parts = []
    if check.runtime is not None:
        r = check.runtime
        what = "all operators" if r.include_all else plural(len(r.operators), "operator")
        keys = "" if r.form == OPERATOR_LIST else ", with kernel keys"
        parts.append(f"{r.source} ({r.form}: {what}{keys})")
    if check.backends is not None:
        parts.append("backends " + (", ".join(check.backends) or "none"))
    return "; ".join(parts)


def ops_text(needs: RuntimeNeeds, check: LoadCheck | None) -> list[str]:
    """`pte-adapter ops`: the line, the CPU kernels with keys and calls, the backends, and the
    runtime's verdict."""
    several = len(needs.programs) > 1
    names = ", ".join(needs.programs) or "program"
    lines = [f"{names} {needs_line(needs)}"]
    if needs.operators:
        lines += ["", "CPU kernels (kernel key: ScalarType;dim order of each tensor argument):"]
        for op in needs.operators:
            lines += operator_lines(op, several)
    if needs.backends:
        lines += ["", "backends:"]
        for b in needs.backends:
            lines += backend_lines(b, several)
    lines += [f"problem: {p}" for p in needs.problems]
    if check is not None:
        lines += ["", f"against the runtime: {runtime_text(check)}"]
        if not check.runtime:
            lines.append("  kernels not checked (give --runtime-ops LIST)")
        if check.backends is None:
            lines.append("  backends not checked (give --runtime-backends A,B)")
        lines += [f"  {line}" for line in check_lines(check)]
        lines += [f"  note: {op.name}: {custom_text(op)}" for op in check.unproven]
        if check.ok:
            lines.append("OK: the runtime has every kernel and backend checked")
    return lines


def _missing_json(m: MissingOperator, runtime_name: str) -> dict[str, Any]:
    return {
        "name": m.operator.name,
        "reason": m.reason,
        "text": missing_text(m, runtime_name),
        "custom": m.operator.custom,
        "missing_kernel_keys": m.missing_keys if m.reason == OTHER_KERNEL_KEYS else [],
        "runtime_kernel_keys": list(m.runtime_keys),
        "missing_dtypes": [dtype_name(d) for d in m.missing_dtypes],
        "calls": [call_json(c) for c in m.operator.calls],
    }


def ops_json(needs: RuntimeNeeds, check: LoadCheck | None) -> dict[str, Any]:
    """`pte-adapter ops --json` (docs/json.md, `ops` keys)."""
    out: dict[str, Any] = {
        "files": list(needs.programs),
        "operators": [operator_json(op) for op in needs.operators],
        "kernel_metadata": needs.kernel_metadata(),
        "delegates": [
            {
                "backend": b.backend,
                "files": list(b.programs),
                "delegates": b.delegates,
                "calls": [call_json(c) for c in b.calls],
            }
            for b in needs.backends
        ],
        "runtime": None,
        "missing_operators": None,
        "missing_backends": None,
        "problems": list(needs.problems),
    }
    if check is None:
        return out
    name = check.runtime.source if check.runtime is not None else "the runtime"
    out["runtime"] = {
        "source": check.runtime.source if check.runtime is not None else None,
        "form": check.runtime.form if check.runtime is not None else None,
        "include_all_operators": check.runtime.include_all if check.runtime else None,
        "operators": len(check.runtime.operators) if check.runtime is not None else None,
        "backends": check.backends,
        "loads": check.ok,
    }
    if check.runtime is not None:
        out["missing_operators"] = [_missing_json(m, name) for m in check.missing_operators]
    if check.backends is not None:
        out["missing_backends"] = [
            {"backend": b.backend, "calls": [call_json(c) for c in b.calls]}
            for b in check.missing_backends
        ]
    return out
