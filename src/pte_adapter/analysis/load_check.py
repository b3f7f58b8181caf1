"""Will it load: what a program needs (`needs.py`) against what a runtime has (its operator list,
`container/runtime_list.py`, and its backend ids).

An operator is present when the list selects it as ExecuTorch's codegen does
(executorch/codegen/gen.py with torchgen's `SelectiveBuilder`): by its name, or by its base name
listed with `include_all_overloads`; as a root operator; and, in a `selected_operators.yaml`,
with an `et_kernel_metadata` entry (codegen registers no kernel for a selected operator without
one, unless `include_all_operators`). Its kernel keys must then be among the listed ones, unless
the list says `default` for it. A plain list of names carries no kernel keys: presence only.

When a listed operator's keys are not the program's, two builds fit the list and the file cannot
tell which: a library of kernels specialised per key registers none for the program's (the runtime
refuses the method at load, `Missing operator`), and ExecuTorch's portable kernels built with
dtype-selective build compile only the dtypes of the listed keys (the call fails when it runs, on a
dtype outside them). Both are said, and the check counts it as missing.

A backend is present when its id is among the runtime's (`--runtime-backends`; ExecuTorch's Python
runtime gives them with `_get_registered_backend_names()`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.analysis.needs import BackendNeed, OperatorNeed, RuntimeNeeds
from pte_adapter.container.runtime_list import RuntimeKernels

# Why a needed operator is missing.
NOT_LISTED = "not_listed"  # the list does not select it
NOT_ROOT = "not_root"  # listed with is_root_operator: false (codegen skips it)
NO_KERNEL_KEYS = "no_kernel_keys"  # listed without an et_kernel_metadata entry
OTHER_KERNEL_KEYS = "other_kernel_keys"  # listed for other kernel keys than the program's
DEFAULT_KEY = "default"


@dataclass
class MissingOperator:
    operator: OperatorNeed
    reason: str  # NOT_LISTED, NOT_ROOT, NO_KERNEL_KEYS or OTHER_KERNEL_KEYS
    missing_keys: list[str] = field(default_factory=list)  # the program's keys the list lacks
    runtime_keys: list[str] = field(default_factory=list)  # the list's keys for it
    # The dtypes (ScalarType values) of the missing keys that none of the listed keys has: what a
    # dtype-selective build of the portable kernel would not handle.
    missing_dtypes: list[int] = field(default_factory=list)


@dataclass
class LoadCheck:
    needs: RuntimeNeeds
    runtime: RuntimeKernels | None  # None: kernels not checked
    backends: list[str] | None  # the runtime's backend ids; None: backends not checked
    missing_operators: list[MissingOperator] = field(default_factory=list)
    missing_backends: list[BackendNeed] = field(default_factory=list)
    # Custom operators a list with include_all_operators covers only if their library is linked.
    unproven: list[OperatorNeed] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing_operators and not self.missing_backends


def key_body(key: str) -> str:
    """A kernel key without its version (`v1/6;0,1` -> `6;0,1`): what codegen compares."""
    return key.split("/", 1)[1] if "/" in key else ""


def key_dtypes(key: str) -> set[int]:
    """The ScalarType values a kernel key names (none for `default` or a key without tensors)."""
    out: set[int] = set()
    for meta in key_body(key).split("|"):
        dtype = meta.split(";", 1)[0]
        if dtype.isdigit():
            out.add(int(dtype))
    return out


def check_operator(op: OperatorNeed, runtime: RuntimeKernels) -> MissingOperator | None:
    """Why the runtime lacks `op` as the program calls it; None when it has it."""
    if runtime.include_all:
        return None
    entry = runtime.listed(op.name)
    if entry is None:
        return MissingOperator(op, NOT_LISTED)
    if not entry.root:
        return MissingOperator(op, NOT_ROOT)
    if runtime.kernel_keys is None:
        return None
    listed = runtime.kernel_keys.get(op.name)
    if not listed:
        return MissingOperator(op, NO_KERNEL_KEYS)
    if DEFAULT_KEY in listed:
        return None
    have = {key_body(k) for k in listed}
    missing = [k for k in op.kernel_keys if key_body(k) not in have]
    if not missing:
        return None
    dtypes = set().union(*(key_dtypes(k) for k in listed))
    lacking = set().union(*(key_dtypes(k) for k in missing)) - dtypes
    return MissingOperator(op, OTHER_KERNEL_KEYS, missing, sorted(listed), sorted(lacking))


def check_load(
    needs: RuntimeNeeds, runtime: RuntimeKernels | None, backends: list[str] | None
) -> LoadCheck:
    """The needs against the runtime's operator list and backend ids (either may be absent:
    that half is not checked)."""
    out = LoadCheck(needs, runtime, backends)
    if runtime is not None:
        for op in needs.called:
            missing = check_operator(op, runtime)
            if missing is not None:
                out.missing_operators.append(missing)
            elif runtime.include_all and op.custom:
                out.unproven.append(op)
    if backends is not None:
        have = set(backends)
        out.missing_backends = [b for b in needs.backends if b.backend not in have]
    return out
