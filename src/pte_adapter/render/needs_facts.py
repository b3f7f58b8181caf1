"""What a program needs from a runtime, in the words every view shares: the summary's line, the
Graph info of a method, each kernel node's key (`ops_report.py` writes the command's lines)."""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.needs import KernelKey, RuntimeNeeds
from pte_adapter.program.model import dtype_name
from pte_adapter.wording import plural


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
