#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/vulkan/_generated/partition_rules.py` from the pinned
ExecuTorch's Vulkan partitioner: its operator registry (`backends/vulkan/op_registry.py`,
`vulkan_supported_ops`, evaluated) and the checks `VulkanSupportedOperators._is_node_supported`
applies (`backends/vulkan/partitioner/vulkan_partitioner.py`, read with `ast`).

Why generated: which operators the Vulkan delegate implements, with which dtypes, ranks and
argument checks, is Python code in ExecuTorch that changes with every release; the adapter must not
import ExecuTorch, so the facts a `.pte` can be checked against are extracted here as plain data,
stamped with the version they came from:

- per registered operator (`aten.mean.dim`): the dtype sets of its inputs and outputs, whether it
  takes tensors of more than 4 dimensions, whether it can resize (dynamic shapes), the name of its
  argument check (`are_node_inputs_supported_fn`) and of its storage choice (`pick_io_storage_fn`);
- the names of the schema arguments of those operators and of every `et_vk` operator (the delegate
  serialises one value per schema argument, then the output: the decoder labels a call's arguments
  with them);
- the dtypes the delegate can hold at all (`utils._VULKAN_DTYPES`);
- the words the partitioner logs for each refusal (its `log_skip` calls).

This generator imports ExecuTorch (and so torch): it takes about half a minute.

Usage: python scripts/gen_vulkan_rules.py [--check]
"""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from _codegen import REPO, Source, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/delegates/vulkan/_generated/partition_rules.py"
SCRIPT = "gen_vulkan_rules.py"
PARTITIONER = "executorch/backends/vulkan/partitioner/vulkan_partitioner.py"
REGISTRY = "executorch/backends/vulkan/op_registry.py"


def _dtype(d: Any) -> str:
    return str(d).removeprefix("torch.")


def _sets(dtype_sets: Any) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(sorted(_dtype(d) for d in s)) for s in dtype_sets.vals)


def _fn_name(fn: Any) -> str:
    name = getattr(fn, "__name__", "") if fn is not None else ""
    return "" if name in ("", "allow_node") else name


def operator_rules() -> dict[str, tuple[Any, ...]]:
    import executorch.backends.vulkan.op_registry as registry

    out: dict[str, tuple[Any, ...]] = {}
    for key, features in registry.vulkan_supported_ops.items():
        if isinstance(key, str):
            name = key.replace("::", ".")
        else:
            schema = getattr(key, "_schema", None)
            if schema is None:
                continue  # a Python callable (operator.getitem, operator.add) is never a kernel
            name = _call_name(schema)
        out[name] = (
            _sets(features.inputs_dtypes),
            _sets(features.outputs_dtypes),
            bool(features.supports_highdim),
            bool(features.supports_resize),
            _fn_name(features.are_node_inputs_supported_fn),
            _fn_name(features.pick_io_storage_fn),
        )
    return dict(sorted(out.items()))


def _call_name(schema: Any) -> str:
    """As the delegate names a call: namespace.name.overload ("aten.add.Tensor")."""
    return f"{schema.name.replace('::', '.')}.{schema.overload_name or 'default'}"


def argument_names() -> dict[str, tuple[str, ...]]:
    """Schema argument names of every registered operator and of every operator of the Vulkan
    backend's own `et_vk` library (its passes insert some that are not in the registry, e.g.
    `et_vk.prepack`)."""
    import executorch.backends.vulkan.custom_ops_lib  # noqa: F401  (defines the et_vk library)
    import executorch.backends.vulkan.op_registry as registry
    import torch

    schemas = [getattr(k, "_schema", None) for k in registry.vulkan_supported_ops]
    for op in torch._C._dispatch_get_all_op_names():
        ns, _, rest = op.partition("::")
        if ns == "et_vk":
            name, _, overload = rest.partition(".")
            packet = getattr(torch.ops.et_vk, name)
            schemas.append(getattr(packet, overload or "default")._schema)
    out = {_call_name(s): tuple(a.name for a in s.arguments) for s in schemas if s is not None}
    return dict(sorted(out.items()))


def partitioner_messages(path: str) -> dict[str, str]:
    """The literal reasons `_is_node_supported` and `op_node_is_compatible` log, by the check they
    follow (found by their words: a renamed message fails here, not silently in the adapter)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    literals = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 80
    ]
    wanted = {
        "no_implementation": "no operator implementation",
        "dtype": "dtype not supported",
        "args": "op args not supported",
        "high_dim": "op does not support high dim tensors",
        "dynamic": "no dynamic shape support",
        "permute": "permute node of non compatible linear node",
    }
    for kind, text in wanted.items():
        if text not in literals:
            raise SystemExit(
                f"the Vulkan partitioner no longer says {text!r} ({kind}): see {SCRIPT}"
            )
    return wanted


def render() -> str:
    import executorch.backends.vulkan.utils as utils

    version = metadata.version("executorch")
    part_source, _ = installed_file("executorch", PARTITIONER)
    messages = partitioner_messages(
        str(metadata.distribution("executorch").locate_file(PARTITIONER))
    )
    reg_source, _ = installed_file("executorch", REGISTRY)
    sources = [
        Source("executorch", version, f"{REGISTRY} (vulkan_supported_ops, evaluated)"),
        Source(reg_source.dist, reg_source.version, reg_source.path, reg_source.sha256),
        part_source,
    ]
    ops = operator_rules()
    held = sorted(_dtype(d) for d in utils._VULKAN_DTYPES)
    lines = [
        header("Vulkan partitioner operator registry and checks", SCRIPT, sources)
        + "from __future__ import annotations",
        "",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class OpRule(NamedTuple):",
        "    inputs_dtypes: tuple[tuple[str, ...], ...]  # per input position; one set = all",
        "    outputs_dtypes: tuple[tuple[str, ...], ...]",
        "    supports_highdim: bool  # tensors of more than 4 dimensions",
        "    supports_resize: bool  # dynamic shapes",
        "    args_check: str  # are_node_inputs_supported_fn, when it is not allow_node",
        "    storage_pick: str  # pick_io_storage_fn, when set",
        "",
        "",
        f"EXECUTORCH_VERSION: Final = {version!r}",
        "",
        "# Tensor dtypes the delegate can hold at all (utils._VULKAN_DTYPES).",
        f"VULKAN_DTYPES: Final = frozenset({held!r})",
        "",
        "# What the partitioner logs when a check refuses a node (VulkanSupportedOperators).",
        "MESSAGES: Final[dict[str, str]] = {",
        *[f"    {k!r}: {v!r}," for k, v in messages.items()],
        "}",
        "",
        "# Registered operator (namespace.name.overload) -> its features.",
        "OPERATORS: Final[dict[str, OpRule]] = {",
        *[f"    {k!r}: OpRule{v!r}," for k, v in ops.items()],
        "}",
        "",
        "# Operator -> its schema argument names, in the order a call stores them (its output",
        "# follows them).",
        "ARGUMENTS: Final[dict[str, tuple[str, ...]]] = {",
        *[f"    {k!r}: {v!r}," for k, v in argument_names().items()],
        "}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({OUT: render()}, args.check)


if __name__ == "__main__":
    sys.exit(main())
