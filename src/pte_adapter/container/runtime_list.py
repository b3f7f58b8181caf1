"""What a runtime has: the operator list a user gives (`--runtime-ops LIST`), read as ExecuTorch's
selective build reads it.

Two forms, told apart by their content, not their name:

- a runtime build's `selected_operators.yaml` (what ExecuTorch's `gen_oplist` writes and its
  codegen reads): `operators` (each name with `is_root_operator` and `include_all_overloads`, which
  default to true, as torchgen's `SelectiveBuildOperator.from_yaml_dict` defaults them),
  `et_kernel_metadata` (each name with its kernel keys, `v1/<dtype>;<dim order>|...`, or
  `default`) and `include_all_operators`. Any top-level key torchgen's `SelectiveBuilder` does not
  know is refused, as it refuses it;
- a plain list of operator names, one a line (`aten::add.out`), as `_get_operator_names()` of
  ExecuTorch's Python runtime gives them, or that list printed by Python or as JSON (`[...]`).

The file comes from a stranger: it is opened as a regular file (no FIFO, no device) and refused
before reading when larger than `MAX_BYTES` (`container/files.py`); the YAML is read by this
project's own bounded reader (`yaml_lite.py`). Every refusal is a `PteFormatError` naming the file
and the line, and never quotes the file's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pte_adapter.container import files
from pte_adapter.container.yaml_lite import Line, YamlValue, lines_of, parse, split_key
from pte_adapter.errors import PteFormatError
from pte_adapter.operator_names import kernel_base

# Real lists are small: the pip runtime's 259 names are 6.5 KB, gen_oplist's list of a program with
# 17 kernels 3 KB; a build for many models with every kernel key stays well under this. At the cap
# a list is read in about a third of a second.
MAX_BYTES = 1024 * 1024
MAX_NAME = 1024  # characters in one operator name
# A kernel key as gen_oplist writes one (`v1/6;0,1|6;`, or `v1` for a call without tensors), or
# `default`: what torchgen's codegen compares.
KERNEL_KEY = re.compile(r"default|v\d+(?:/\d+;[\d,]*(?:\|\d+;[\d,]*)*)?")
SELECTED_OPERATORS = "selected_operators.yaml"
OPERATOR_LIST = "operator list"
# torchgen's SelectiveBuilder.from_yaml_dict: the top-level keys of a selected_operators.yaml.
TOP_LEVEL_KEYS = frozenset(
    {
        "include_all_non_op_selectives",
        "include_all_operators",
        "debug_info",
        "operators",
        "kernel_metadata",
        "et_kernel_metadata",
        "custom_classes",
        "build_features",
    }
)
# SelectiveBuildOperator.from_yaml_dict: the keys of one operator's entry.
OPERATOR_KEYS = frozenset(
    {"name", "is_root_operator", "is_used_for_training", "include_all_overloads", "debug_info"}
)
# `namespace::name.overload` (the namespace and overload optional), as operator tables write them.
OPERATOR_NAME = re.compile(r"[A-Za-z_]\w*(?:::\w+)?(?:\.\w+)?")
_NAME_RULE = "a name is namespace::name.overload, in letters, digits and _"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class ListedOperator:
    """One entry of the runtime's `operators` (a plain list's names are root, one overload)."""

    name: str
    root: bool = True  # is_root_operator: codegen registers only root operators
    all_overloads: bool = False  # include_all_overloads: the name without overload covers all


@dataclass
class RuntimeKernels:
    """The operators a runtime registers, as its list says."""

    source: str  # the file's name, as given
    form: str  # SELECTED_OPERATORS or OPERATOR_LIST
    operators: dict[str, ListedOperator] = field(default_factory=dict)
    # et_kernel_metadata: per operator, its kernel keys (`v1/6;0,1|6;0,1` or `default`); None
    # for a plain list, which carries none.
    kernel_keys: dict[str, list[str]] | None = None
    include_all: bool = False  # include_all_operators: every operator of the linked libraries

    def listed(self, name: str) -> ListedOperator | None:
        """The entry that selects operator `name`: its own, or its base name's when that one
        includes all overloads (torchgen's `is_operator_selected`)."""
        entry = self.operators.get(name)
        if entry is not None:
            return entry
        base = self.operators.get(kernel_base(name))
        return base if base is not None and base.all_overloads else None


def read_runtime_list(path: Path) -> RuntimeKernels:
    """Read the runtime list at `path` (module docstring); `PteFormatError` when it is not one."""
    part = f"runtime list {path.name}"
    data = files.read_regular(path, MAX_BYTES, part)
    return parse_runtime_list(data, path.name, part)


def parse_runtime_list(data: bytes, source: str, part: str = "runtime list") -> RuntimeKernels:
    text = _text(data, part)
    lines = lines_of(text, part)
    if not lines:
        raise PteFormatError(
            "empty: it names no operator (give the runtime's selected_operators.yaml, or its "
            "operator names one a line)",
            part=part,
        )
    first = lines[0].text
    if first.startswith("{"):
        raise PteFormatError(
            f"line {lines[0].number}: a flow mapping (JSON object) is not a runtime list; give a "
            "selected_operators.yaml or a list of names",
            part=part,
        )
    if not first.startswith("[") and not any(_structured(x) for x in lines):
        return _plain_list([(x.number, x.text) for x in lines], source, part)
    value = parse(lines, part)
    if isinstance(value, list):
        return _plain_list([(lines[0].number, v) for v in value], source, part)
    if isinstance(value, dict):
        return _selected_operators(value, source, part)
    raise PteFormatError(
        f"line {lines[0].number}: one value, not a list of operator names nor a "
        "selected_operators.yaml",
        part=part,
    )


def _text(data: bytes, part: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PteFormatError(
            f"not text: not UTF-8 at byte {e.start} (a runtime list is a text file)", part=part
        ) from None
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise PteFormatError(f"not text: a control character on line {line}", part=part)
    return text


def _structured(line: Line) -> bool:
    """A line only YAML writes: a mapping entry or a list item."""
    return split_key(line.text) is not None or line.text == "-" or line.text.startswith("- ")


def _plain_list(items: list[tuple[int, YamlValue]], source: str, part: str) -> RuntimeKernels:
    operators: dict[str, ListedOperator] = {}
    for number, name in items:
        if not isinstance(name, str) or len(name) > MAX_NAME or not OPERATOR_NAME.fullmatch(name):
            raise PteFormatError(
                f"line {number}: not an operator name ({_NAME_RULE})"
                if isinstance(name, str)
                else f"line {number}: a list item that is not an operator name",
                part=part,
            )
        operators[name] = ListedOperator(name)
    if not operators:
        raise PteFormatError("an empty list: it names no operator", part=part)
    return RuntimeKernels(source, OPERATOR_LIST, operators)


def _selected_operators(doc: dict[str, YamlValue], source: str, part: str) -> RuntimeKernels:
    unknown = set(doc) - TOP_LEVEL_KEYS
    if unknown:
        raise PteFormatError(
            f"not a selected_operators.yaml: {len(unknown)} top-level key(s) ExecuTorch's "
            f"selective build does not know (it knows {', '.join(sorted(TOP_LEVEL_KEYS))})",
            part=part,
        )
    if not {"operators", "et_kernel_metadata", "include_all_operators"} & set(doc):
        raise PteFormatError(
            "not a selected_operators.yaml: no operators, et_kernel_metadata or "
            "include_all_operators",
            part=part,
        )
    include_all = _flag(doc, "include_all_operators", False, part)
    entries = _mapping(doc.get("operators"), "operators", part)
    operators = {name: _operator(name, info, part) for name, info in entries.items()}
    keys: dict[str, list[str]] = {}
    for name, listed in _mapping(doc.get("et_kernel_metadata"), "et_kernel_metadata", part).items():
        if listed is None:
            listed = []
        if not isinstance(listed, list) or not all(
            isinstance(k, str) and KERNEL_KEY.fullmatch(k) for k in listed
        ):
            raise PteFormatError(
                f"et_kernel_metadata: entry {len(keys) + 1} is not a list of kernel keys "
                "(v1/<dtype>;<dim order>|... or default)",
                part=part,
            )
        keys[name] = [str(k) for k in listed]
    return RuntimeKernels(source, SELECTED_OPERATORS, operators, keys, include_all)


def _mapping(value: YamlValue, key: str, part: str) -> dict[str, YamlValue]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PteFormatError(
            f"{key}: a {'list' if isinstance(value, list) else 'value'}, not a mapping of "
            "operator names (selected_operators.yaml maps each name to its entry)",
            part=part,
        )
    return value


def _flag(info: dict[str, YamlValue], key: str, default: bool, part: str) -> bool:
    value = info.get(key, default)
    if not isinstance(value, bool):
        raise PteFormatError(f"{key}: not true or false", part=part)
    return value


def _operator(name: str, info: YamlValue, part: str) -> ListedOperator:
    """One `operators` entry, with torchgen's defaults (root, all overloads) for what it omits."""
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise PteFormatError("operators: an entry that is not a mapping of flags", part=part)
    if set(info) - OPERATOR_KEYS:
        raise PteFormatError(
            "operators: an entry with keys ExecuTorch's selective build does not know "
            f"(it knows {', '.join(sorted(OPERATOR_KEYS))})",
            part=part,
        )
    return ListedOperator(
        name,
        _flag(info, "is_root_operator", True, part),
        _flag(info, "include_all_overloads", True, part),
    )
