"""`pte-adapter ops --yaml`: ExecuTorch's `selected_operators.yaml`, written without PyYAML.

The document `gen_oplist` writes for a program (codegen/tools/gen_oplist.py: `_dump_yaml` through
PyYAML's `safe_dump(default_flow_style=False)`): every operator of the operator tables, each a root
operator used for training, not including all overloads, with the programs that list it as its
`debug_info`; `et_kernel_metadata` with each called operator's kernel keys, sorted; and the other
top-level keys empty or false. Keys are sorted, lists written in block style at their key's
indentation, as PyYAML writes them, so the file is byte for byte what `gen_oplist` writes for the
same program under the same path (tests/oracle/test_needs.py). Several programs merge as torchgen's
`combine_selective_builders` merges their lists (`analysis/needs.py`: `merge_needs`).

A string PyYAML would write plain is written plain; any other is quoted (single quotes, or double
with escapes for what is not printable ASCII), which reads back the same.
"""

from __future__ import annotations

import re

from pte_adapter.analysis.needs import RuntimeNeeds

_PLAIN = re.compile(r"[A-Za-z_/.][A-Za-z0-9_./:;,|=+-]*")
# What YAML 1.1 (PyYAML) would read as something other than a string.
_SPECIAL_WORDS = frozenset(["y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"])


def yaml_scalar(text: str) -> str:
    if _PLAIN.fullmatch(text) and text.lower() not in _SPECIAL_WORDS and not text.endswith(":"):
        return text
    if all(" " <= c <= "~" for c in text):
        return "'" + text.replace("'", "''") + "'"
    return '"' + "".join(_escaped(c) for c in text) + '"'


def _escaped(c: str) -> str:
    if c in '\\"':
        return "\\" + c
    if " " <= c <= "~":
        return c
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _list(indent: str, items: list[str]) -> list[str]:
    return [f"{indent}- {yaml_scalar(i)}" for i in items]


def selected_operators_yaml(needs: RuntimeNeeds) -> str:
    """The `selected_operators.yaml` of the program(s), as text."""
    lines = ["build_features: []", "custom_classes: []"]
    metadata = needs.kernel_metadata()
    if metadata:
        lines.append("et_kernel_metadata:")
        for name in sorted(metadata):
            lines.append(f"  {yaml_scalar(name)}:")
            lines += _list("  ", metadata[name])
    else:
        lines.append("et_kernel_metadata: {}")
    lines += [
        "include_all_non_op_selectives: false",
        "include_all_operators: false",
        "kernel_metadata: {}",
    ]
    if needs.operators:
        lines.append("operators:")
        for op in sorted(needs.operators, key=lambda o: o.name):
            lines.append(f"  {yaml_scalar(op.name)}:")
            lines.append("    debug_info:")
            lines += _list("    ", sorted(op.programs))
            lines += [
                "    include_all_overloads: false",
                "    is_root_operator: true",
                "    is_used_for_training: true",
            ]
    else:
        lines.append("operators: {}")
    return "\n".join(lines) + "\n"


def select_ops_list(needs: RuntimeNeeds) -> str:
    """The called operators, comma-separated: what ExecuTorch's CMake option
    `EXECUTORCH_SELECT_OPS_LIST` (and `gen_oplist --root_ops`) takes."""
    return ",".join(op.name for op in needs.called)
