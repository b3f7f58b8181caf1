"""Arm's Cortex-M CPU lowering: which edge operators its passes turned into a CPU kernel.

After lowering for an Ethos-U system, Arm's flow runs `ReplaceQuantNodesPass` or the whole
`CortexMPassManager` over what stayed on the CPU: `quantized_decomposed` (de)quantizations become
`cortex_m::` ones, a quantized `aten.linear` becomes `cortex_m::quantized_linear`, a quantized
`aten.relu` an `aten.clamp`. An ETRecord keeps the edge program from before those passes, so a
kernel and its recorded nodes may name different operators. The rewrites the pinned release makes
are read from its passes' source by `scripts/gen_cortex_m_rewrites.py`
(`_generated/cortex_m_rewrites.py`); this is the `cpu_rewrites` hook of the Arm records.
"""

from __future__ import annotations

from pte_adapter.delegates.arm._generated import cortex_m_rewrites as table
from pte_adapter.delegates.hooks import KernelRewrites
from pte_adapter.operator_names import target_base

# Who made the rewrites, for messages.
PASSES = f"Arm's Cortex-M passes (ExecuTorch {table.EXECUTORCH_VERSION})"


def rewritten_from(kernel: str) -> KernelRewrites:
    """The edge operators (`namespace.name`) that the pinned release's Cortex-M passes turn into
    this kernel, directly or through other passes of the same flow (none: empty)."""
    base = target_base(kernel)
    return KernelRewrites(
        table.REWRITTEN_FROM.get(base, frozenset()), table.REPLACED_FROM.get(base, frozenset())
    )
