#!/usr/bin/env python3
"""Generate the partitioner rules from the pinned ExecuTorch's partitioners, one module per backend
family:

- `src/pte_adapter/delegates/arm/_generated/partition_rules.py` (Ethos-U, TOSA and VGF share the
  Arm partitioner);
- `src/pte_adapter/delegates/xnnpack/_generated/partition_configs.py`.

Why generated: the reasons a partitioner refuses a node live in ExecuTorch's Python code
(`backends/arm/operator_support/`, `backends/xnnpack/partition/config/`) and change with every
release. The adapter must not import ExecuTorch, so the parts that can be evaluated from a `.pte`
alone are extracted here as plain data, stamped with the ExecuTorch version they came from:

- Arm: per TOSA version and profile, the operators the positive checks accept (the profile's
  support list plus the targets of every registered `SupportedTOSAOperatorCheck`, with the check's
  class name: those operators have further conditions); the operators `EthosU55NotSupported`
  rejects on the U55 subset; `MAX_RANK`; and the words the partitioner's report uses for those
  refusals (read from the sources of `tosa_support_factory`, `_wrapped_additional_checks` and
  `EthosU55NotSupported`).
- XNNPACK: the operator of every partitioner config in `ALL_PARTITIONER_CONFIGS`, with its class.

This generator imports ExecuTorch (and so torch): it takes about half a minute.

Usage: python scripts/gen_partition_rules.py [--check]
"""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from _codegen import REPO, Source, emit, header, installed_file, parser

ARM_OUT = REPO / "src/pte_adapter/delegates/arm/_generated/partition_rules.py"
XNNPACK_OUT = REPO / "src/pte_adapter/delegates/xnnpack/_generated/partition_configs.py"
SCRIPT = "gen_partition_rules.py"


def op_name(target: Any) -> str | None:
    """`exir_ops.edge.aten.avg_pool2d.default` -> "aten.avg_pool2d.default"; None for Python
    callables (operator.getitem) that never become kernels."""
    text = str(getattr(target, "_op", target))
    if " " in text or "." not in text or text.startswith("<"):
        return None
    return text


def arm_rules() -> dict[str, Any]:
    from executorch.backends.arm.constants import MAX_RANK
    from executorch.backends.arm.operator_support import (
        ethos_u55_support,
    )
    from executorch.backends.arm.operator_support import (
        tosa_profile_supported_op_lists as lists,
    )
    from executorch.backends.arm.operator_support import (
        tosa_supported_operators as tso,
    )
    from executorch.backends.arm.tosa.specification import TosaSpecification

    profile_lists = {"INT": lists.TOSA_PRO_INT_SupportList, "FP": lists.TOSA_PRO_FP_SupportList}
    supported: dict[str, dict[str, str]] = {}
    for spec in TosaSpecification.all_versions_and_profiles():
        key = str(spec)
        profile = "INT" if spec.support_integer() else "FP"
        ops: dict[str, str] = {}
        for t in profile_lists[profile]:
            if (name := op_name(t)) is not None:
                ops[name] = f"TOSA_PRO_{profile}_SupportList"
        for check in tso.get_registered_tosa_support_checks(spec):
            for t in check.targets:
                if (name := op_name(t)) is not None:
                    ops[name] = check.__name__  # a further check decides, not only the list
        supported[key] = dict(sorted(ops.items()))
    u55 = sorted(
        {
            n
            for t in ethos_u55_support.EthosU55NotSupported.unsupported_ops
            if (n := op_name(t)) is not None
        }
    )
    return {
        "supported": supported,
        "u55_unsupported": u55,
        "max_rank": int(MAX_RANK),
        "messages": arm_messages(tso.__file__, ethos_u55_support.__file__),
    }


def _calls(tree: ast.AST, scope: str, method: str) -> list[ast.Call]:
    """The calls `<x>.<method>(...)` inside the function or class named `scope`."""
    found = [n for n in ast.walk(tree) if getattr(n, "name", None) == scope]
    if len(found) != 1:
        raise SystemExit(f"no single {scope} in the Arm operator support sources")
    return [
        n
        for n in ast.walk(found[0])
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == method and len(n.args) == 2
    ]


def arm_messages(support_file: str, u55_file: str) -> dict[str, str]:
    """The reasons the partitioner writes for the rules above, read from their source: the
    operator lists' refusal, the prefix of an `additional_checks` entry's, EthosU55NotSupported's,
    and CheckArmQuantized's (a node the quantizer did not mark)."""
    support = ast.parse(Path(support_file).read_text(encoding="utf-8"))
    u55 = ast.parse(Path(u55_file).read_text(encoding="utf-8"))
    texts = {
        "not_listed": [c.args[1] for c in _calls(support, "tosa_support_factory", "wrap_check")],
        "additional_check": [
            c.args[1].values[0]
            for c in _calls(support, "_wrapped_additional_checks", "wrap_check")
            if isinstance(c.args[1], ast.JoinedStr) and c.args[1].values
        ],
        "u55": [c.args[1] for c in _calls(u55, "EthosU55NotSupported", "report_reject")],
        "not_quantized": [c.args[1] for c in _calls(support, "CheckArmQuantized", "report_reject")],
    }
    out: dict[str, str] = {}
    for kind, nodes in texts.items():
        values = [
            n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
        if len(values) != 1:
            raise SystemExit(f"cannot find the partitioner's {kind} reason: extend {SCRIPT}")
        out[kind] = values[0]
    return out


def xnnpack_rules() -> dict[str, str]:
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS

    out: dict[str, str] = {}
    for config in ALL_PARTITIONER_CONFIGS:
        target = getattr(config, "target_name", None)
        if isinstance(target, str) and target:
            # Config targets carry no namespace ("add.Tensor", "_clone_dim_order.default"):
            # they are matched by operator name and overload.
            out[target] = config.__name__
    return dict(sorted(out.items()))


def render_arm(version: str) -> str:
    arm = arm_rules()
    support = "executorch/backends/arm/operator_support/"
    sources = [
        Source("executorch", version, f"{support} (evaluated)"),
        Source("executorch", version, "executorch/backends/arm/constants.py (MAX_RANK)"),
        installed_file("executorch", f"{support}tosa_supported_operators.py")[0],
        installed_file("executorch", f"{support}ethos_u55_support.py")[0],
    ]
    lines = [
        header(
            "Arm partitioner rules: TOSA operator support, the Ethos-U55 subset, MAX_RANK",
            SCRIPT,
            sources,
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f"EXECUTORCH_VERSION: Final = {version!r}",
        "",
        "# TOSA base spec -> {edge operator: what accepts it}. An operator named by a check class has",
        "# further conditions (dtypes, shapes, arguments) that check evaluates.",
        "ARM_SUPPORTED: Final[dict[str, dict[str, str]]] = {",
    ]
    for spec, ops in arm["supported"].items():
        lines.append(f"    {spec!r}: {{")
        lines += [f"        {k!r}: {v!r}," for k, v in ops.items()]
        lines.append("    },")
    lines += [
        "}",
        "",
        "# Operators EthosU55NotSupported rejects on the Ethos-U55 subset (`u55` in the spec).",
        "ARM_U55_UNSUPPORTED: Final[frozenset[str]] = frozenset({",
        *[f"    {n!r}," for n in arm["u55_unsupported"]],
        "})",
        "",
        "# Tensors of more dimensions are not delegated (RankCheck).",
        f"ARM_MAX_RANK: Final = {arm['max_rank']}",
        "",
        "# The reasons the partitioner gives (its WhyNoPartitionReporter, partition_report.txt):",
        "# not on the operator lists; refused on the Ethos-U55; the start of an additional_checks",
        "# entry's refusal (followed by the check's class name); not marked as quantized.",
        f"ARM_NOT_LISTED_REASON: Final = {arm['messages']['not_listed']!r}",
        f"ARM_U55_REASON: Final = {arm['messages']['u55']!r}",
        f"ARM_ADDITIONAL_CHECK_PREFIX: Final = {arm['messages']['additional_check']!r}",
        f"ARM_NOT_QUANTIZED_REASON: Final = {arm['messages']['not_quantized']!r}",
        "",
    ]
    return "\n".join(lines)


def render_xnnpack(version: str) -> str:
    xnn = xnnpack_rules()
    sources = [
        Source(
            "executorch",
            version,
            "executorch/backends/xnnpack/partition/config/ (ALL_PARTITIONER_CONFIGS, evaluated)",
        )
    ]
    lines = [
        header("XNNPACK partitioner configs by operator", SCRIPT, sources)
        + "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f"EXECUTORCH_VERSION: Final = {version!r}",
        "",
        "# Operator name.overload (no namespace) -> the partitioner config that may take it.",
        "XNNPACK_CONFIGS: Final[dict[str, str]] = {",
        *[f"    {k!r}: {v!r}," for k, v in xnn.items()],
        "}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    version = metadata.version("executorch")
    return emit({ARM_OUT: render_arm(version), XNNPACK_OUT: render_xnnpack(version)}, args.check)


if __name__ == "__main__":
    sys.exit(main())
