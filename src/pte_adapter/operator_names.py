"""The two ways an operator's name is spelled, and the one place each is taken apart.

- The program's operator table (what a `KernelCall` calls) writes `namespace::name` and the
  overload apart: `aten::add` + `out`, shown as `aten::add.out`. `kernel_base` drops the overload
  and keeps that spelling; the glue lists of `backends.py` are written in it.
- A graph's node targets write `namespace.name.overload`: `aten.add.default` (the ETRecord's
  graphs, where a node added by a decomposition at export time can also read
  `torch.ops.aten.add.default`), and the partitioner rules are keyed the same way. `target_base`
  turns either spelling into `aten.add`, the form in which a kernel and a node are compared.

Plain string functions: this module imports nothing, so every layer may use it, like `backends.py`.
"""

from __future__ import annotations

TORCH_OPS_PREFIX = "torch.ops."


def kernel_base(name: str) -> str:
    """`aten::add.out` -> `aten::add` (the overload dropped); a name without `::` stays as it is."""
    namespace, sep, rest = name.partition("::")
    if not sep:
        return name
    return f"{namespace}::{rest.split('.', 1)[0]}"


def target_base(name: str) -> str:
    """`aten::avg_pool3d.out`, `aten.avg_pool3d.default` and `torch.ops.aten.avg_pool3d.default`
    -> `aten.avg_pool3d` (namespace and name, as graph targets and partitioner rules write them)."""
    parts = name.replace("::", ".").removeprefix(TORCH_OPS_PREFIX).split(".")
    return ".".join(parts[:2])
