"""What a program needs from a runtime, in words (the summary's line, the Graph info, each kernel
node's key, the lines of `pte-adapter ops`) and as JSON (the summary's `needs`, the calls of
`ops --json`). The check against a runtime and the command's whole output are `load_report.py`'s
(imported only by `ops` and `check`); the YAML for a selective build is `oplist_yaml.py`'s.
"""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.needs import (
    BackendNeed,
    Call,
    OperatorNeed,
    RuntimeNeeds,
)
from pte_adapter.render.needs_facts import key_text
from pte_adapter.wording import plural

CALLS_SHOWN = 8  # per operator or backend in the text; --json lists every call
LAYERS_SHOWN = 3


def call_text(call: Call, several: bool) -> str:
    head = f"{call.program} " if several else ""
    layers = [m.text for m in call.layers]
    shown = ", ".join(layers[:LAYERS_SHOWN]) + (
        f", … (+{len(layers) - LAYERS_SHOWN} more)" if len(layers) > LAYERS_SHOWN else ""
    )
    return f"{head}{call.method} #{call.instruction} in {call.partition}" + (
        f": {shown}" if shown else ""
    )


def call_lines(calls: list[Call], several: bool, indent: str = "      ") -> list[str]:
    lines = [indent + call_text(c, several) for c in calls[:CALLS_SHOWN]]
    if len(calls) > CALLS_SHOWN:
        lines.append(f"{indent}… and {len(calls) - CALLS_SHOWN} more calls (--json lists all)")
    return lines


def custom_text(op: OperatorNeed) -> str:
    where = op.library or f"the library that registers namespace {op.namespace or '(none)'}"
    return f"a custom operator: the runtime has it only if it links {where}"


def operator_lines(op: OperatorNeed, several: bool) -> list[str]:
    calls = plural(len(op.calls), "call") if op.calls else "in the operator table, never called"
    lines = [f"  {op.name}  {calls}"]
    if op.custom:
        lines.append(f"      {custom_text(op)}")
    keys = {c.kernel_key.text: c.kernel_key for c in op.calls if c.kernel_key is not None}
    lines += [f"      key {key_text(keys[k])}" for k in sorted(keys)]
    return lines + call_lines(op.calls, several)


def backend_lines(b: BackendNeed, several: bool) -> list[str]:
    head = f"  {b.backend}  {plural(b.delegates, 'delegate')}, {plural(len(b.calls), 'call')}"
    return [head, *call_lines(b.calls, several)]


def call_json(c: Call) -> dict[str, Any]:
    return {
        "file": c.program,
        "method": c.method,
        "instruction": c.instruction,
        "partition": c.partition,
        "kernel_key": c.kernel_key.text if c.kernel_key is not None else None,
        "layers": [m.text for m in c.layers],
    }


def operator_json(op: OperatorNeed) -> dict[str, Any]:
    return {
        "name": op.name,
        "custom": op.custom,
        "library": op.library or None,
        "files": list(op.programs),
        "kernel_keys": op.kernel_keys,
        "calls": [call_json(c) for c in op.calls],
    }


def needs_json(needs: RuntimeNeeds) -> dict[str, Any]:
    """The `needs` key of `summary --json`: the counts and names."""
    return {
        "cpu_kernels": len(needs.called),
        "kernel_keys": needs.kernel_key_count,
        "operators": [op.name for op in needs.called],
        "backends": [b.backend for b in needs.backends],
    }
