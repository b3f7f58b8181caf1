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
    KernelKey,
    OperatorNeed,
    RuntimeNeeds,
)
from pte_adapter.program.model import dtype_name

CALLS_SHOWN = 8  # per operator or backend in the text; --json lists every call
LAYERS_SHOWN = 3


def plural(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def needs_line(needs: RuntimeNeeds) -> str:
    """`needs 3 CPU kernels (5 kernel keys), 1 backend (EthosUBackend)`."""
    called = needs.called
    kernels = (
        f"{plural(len(called), 'CPU kernel')} ({plural(needs.kernel_key_count, 'kernel key')})"
        if called
        else "no CPU kernel"
    )
    ids = [b.backend for b in needs.backends]
    backends = f"{plural(len(ids), 'backend')} ({', '.join(ids)})" if ids else "no backend"
    return f"needs {kernels}, {backends}"


def needs_facts(needs: RuntimeNeeds) -> dict[str, str]:
    """The Graph info line of a method: what it needs from a runtime."""
    return {"runtime_needs": f"{needs_line(needs).removeprefix('needs ')} (pte-adapter ops)"}


def key_text(key: KernelKey) -> str:
    """`v1/1;0,1|6;0,1|6;0,1 (int8, float32 ×2)`: the key, then its tensors' dtypes, each with
    its dim order when that is not contiguous."""
    words: list[str] = []
    for t in key.tensors:
        word = dtype_name(t.scalar_type)
        if list(t.dim_order) != list(range(len(t.dim_order))):
            word += f" dim order {','.join(map(str, t.dim_order))}"
        words.append(word)
    runs: list[list[Any]] = []
    for w in words:
        if runs and runs[-1][0] == w:
            runs[-1][1] += 1
        else:
            runs.append([w, 1])
    tensors = ", ".join(w if n == 1 else f"{w} ×{n}" for w, n in runs) or "no tensor"
    return f"{key.text} ({tensors})"


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
