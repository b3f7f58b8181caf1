"""Why ExecuTorch's XNNPACK partitioner would refuse a CPU kernel: it has no config for the
operator, or a config whose constraints refused it on the pre-delegation graph (which the `.pte`
does not keep). Configs from the pinned ExecuTorch (`_generated/partition_configs.py`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from pte_adapter.delegates.hooks import KernelOrigin, Verdict
from pte_adapter.delegates.xnnpack._generated import partition_configs
from pte_adapter.operator_names import target_base
from pte_adapter.program.model import Delegate, Method

RULES = f"ExecuTorch {partition_configs.EXECUTORCH_VERSION} rules"


@lru_cache(maxsize=1024)  # a method calls the same few operators hundreds of times
def xnnpack_reason(op: str) -> tuple[str, str]:
    name, _, overload = op.split("::", 1)[-1].partition(".")
    # `mul.Scalar_out` is the out variant of `mul.Scalar`, which no config takes (MulConfig takes
    # `mul.Tensor`, whose out variant is plain `mul.out`): a `<overload>_out` names its overload.
    functional = overload.removesuffix("_out") if overload.endswith("_out") else None
    configs = sorted(
        {
            c
            for k, c in partition_configs.XNNPACK_CONFIGS.items()
            if k.split(".")[0] == name and functional in (None, k.partition(".")[2])
        }
    )
    if not configs:
        return "not_listed", f"{target_base(op)}: no XNNPACK partitioner config for it — {RULES}"
    return "check", (
        f"{target_base(op)}: XNNPACK has {', '.join(configs)}, whose constraints refused "
        f"it on the pre-delegation graph: the exact reason is not in the .pte — "
        f"{RULES}"
    )


def reasons(
    method: Method, delegates: list[Delegate]
) -> Callable[[int, str, KernelOrigin | None], list[Verdict]]:
    """The `partition_rules` hook: one verdict per CPU kernel (its origin is not needed: the
    XNNPACK flow runs no CPU passes after partitioning)."""

    def judge(index: int, op: str, origin: KernelOrigin | None = None) -> list[Verdict]:
        kind, text = xnnpack_reason(op)
        return [Verdict("XNNPACK", kind, text)]

    return judge
