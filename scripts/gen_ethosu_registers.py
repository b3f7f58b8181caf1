"""Regenerate the Ethos-U register tables from the NPU hardware interface headers.

The command-stream opcodes, their bit-fields and the enumerations are facts of the hardware
interface. Arm publishes them as C++ headers inside the ethos-u-vela source distribution (the wheel
does not ship them):

    ethosu/regor/architecture/ethosu65/ethos_u65_interface.hpp   (Ethos-U55 and U65 share it)
    ethosu/regor/architecture/ethosu85/ethos_u85_interface.hpp

`python scripts/regen.py` downloads the pinned sdist into a cache and runs this script on it; by
hand, get the sources with

    pip download ethos-u-vela==5.2.0 --no-binary ethos-u-vela --no-deps -d DIR

unpack DIR/ethos_u_vela-5.2.0.tar.gz and run

    python scripts/gen_ethosu_registers.py <unpacked ethos-u-vela source> [--check]

It rewrites `src/pte_adapter/delegates/ethosu/_generated/registers_u55.py` and `registers_u85.py`.
The tests compare the U55/U65 table with ethos-u-vela's installed `ethosu.vela.ethos_u55_regs`
enumerations.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _codegen import REPO, Source, emit, header, parser, sdist_version, source_file

HEADERS = {
    "u55": ("ethosu/regor/architecture/ethosu65/ethos_u65_interface.hpp", "Ethos-U55/U65"),
    "u85": ("ethosu/regor/architecture/ethosu85/ethos_u85_interface.hpp", "Ethos-U85"),
}
OUT_DIR = REPO / "src/pte_adapter/delegates/ethosu/_generated"

_ENUM_RE = re.compile(r"^enum class (\w+) : \w+\s*\{(.*?)\};", re.S | re.M)
_ENUM_ITEM_RE = re.compile(r"^\s*(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*,?\s*$", re.M)
_STRUCT_RE = re.compile(r"^struct (npu_(?:op|set)_\w+)_t\s*\{(.*?)^public:", re.S | re.M)
_BITFIELD_RE = re.compile(r"^\s*uint32_t (\w+):(\d+);", re.M)
# Header bits every command has; the table keeps only the operand fields.
_SKIP_FIELDS = {"opcode", "control"}
_STRUCT_START_RE = re.compile(r"^struct (npu_(?:op|set)_\w+)_t\b", re.M)
_STRUCT_OPCODE_RE = re.compile(
    r"opcode\(static_cast<uint16_t>\(NPU_NAMESPACE::cmd[01]_opcode::(\w+)\)\)"
)


def parse_enums(text: str) -> dict[str, dict[int, str]]:
    enums: dict[str, dict[int, str]] = {}
    for m in _ENUM_RE.finditer(text):
        items = {int(v, 0): k for k, v in _ENUM_ITEM_RE.findall(m.group(2))}
        enums[m.group(1)] = dict(sorted(items.items()))
    return enums


def parse_fields(text: str) -> dict[str, tuple[tuple[str, int, int], ...]]:
    """Command name -> (field, lsb, width), lsb counted across both words of a cmd1 command."""
    fields: dict[str, tuple[tuple[str, int, int], ...]] = {}
    for m in _STRUCT_RE.finditer(text):
        lsb = 0
        out: list[tuple[str, int, int]] = []
        for name, width_s in _BITFIELD_RE.findall(m.group(2)):
            width = int(width_s)
            if name not in _SKIP_FIELDS and not name.startswith("reserved"):
                out.append((name, lsb, width))
            lsb += width
        if lsb not in (32, 64):
            raise SystemExit(f"{m.group(1)}: bit-fields add up to {lsb}, not 32 or 64")
        fields[m.group(1).upper()] = tuple(out)
    return fields


def command_names(text: str) -> dict[str, str]:
    """Opcode enumerator -> the command's name: its struct's, which is also what the header's own
    disassembler prints. The two differ where a struct is named for its register: the Ethos-U85's
    opcode NPU_SET_RESIZE_X is the command npu_set_resize_x_step_t, "NPU_SET_RESIZE_X_STEP"."""
    starts = list(_STRUCT_START_RE.finditer(text))
    names: dict[str, str] = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        op = _STRUCT_OPCODE_RE.search(text, m.end(), end)
        if op is not None:
            names[op.group(1)] = m.group(1).upper()
    return names


def render(source: Source, product: str, text: str) -> str:
    enums = parse_enums(text)
    fields = parse_fields(text)
    names = command_names(text)
    cmd0 = {k: names.get(v, v) for k, v in enums.pop("cmd0_opcode").items()}
    cmd1 = {k: names.get(v, v) for k, v in enums.pop("cmd1_opcode").items()}
    lines = [
        header(
            f"{product} NPU command-stream register table",
            "gen_ethosu_registers.py",
            [source],
            "Opcodes, bit-fields and enumerations are facts of the hardware interface.",
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f'PRODUCT: Final = "{product}"',
        "",
        "# One-word commands: opcode (bits 0-9) -> name. NPU_OP_* start work, NPU_SET_* set registers.",
        "CMD0_OPCODES: Final[dict[int, str]] = {",
        *(f'    0x{k:03X}: "{v}",' for k, v in cmd0.items()),
        "}",
        "",
        "# Two-word commands (control bits 14-15 = 1): opcode -> name.",
        "CMD1_OPCODES: Final[dict[int, str]] = {",
        *(f'    0x{k:03X}: "{v}",' for k, v in cmd1.items()),
        "}",
        "",
        "# Command name -> operand fields (name, lsb, width). Bits 32-63 are the second word.",
        "FIELDS: Final[dict[str, tuple[tuple[str, int, int], ...]]] = {",
    ]
    for name in sorted(fields):
        items = ", ".join(f'("{f}", {lsb}, {w})' for f, lsb, w in fields[name])
        trailing = "," if len(fields[name]) == 1 else ""
        lines.append(f'    "{name}": ({items}{trailing}),')
    lines += [
        "}",
        "",
        "# Enumerations of the interface: enum name -> value -> name.",
        "ENUMS: Final[dict[str, dict[int, str]]] = {",
    ]
    for name, members in enums.items():
        lines.append(f'    "{name}": {{')
        lines += [f'        {k}: "{v}",' for k, v in members.items()]
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("vela_source", type=Path, help="unpacked ethos-u-vela source distribution")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
    version = sdist_version(args.vela_source, "ethos-u-vela")
    outputs = {}
    for key, (rel, product) in HEADERS.items():
        source, text = source_file("ethos-u-vela", version, args.vela_source, rel)
        outputs[args.out / f"registers_{key}.py"] = render(source, product, text)
    return emit(outputs, args.check)


if __name__ == "__main__":
    sys.exit(main())
