"""Regenerate the Ethos-U performance data (system configs, memory modes, accelerator tables).

Two sources, both from the pinned ethos-u-vela 5.2.0:

- the installed package's default configuration file `ethosu/config_files/Arm/vela.ini`: every
  `[System_Config.*]` (core clock, which memory sits on AXI0/AXI1, and per memory its clock scale,
  ports used, burst length, read/write latency, outstanding reads/writes) and every
  `[Memory_Mode.*]` (which AXI port holds the constants, the arena and the staging cache), and
  Vela's default system config and memory mode per product (`ethosu/vela/architecture_features.py`);
- the accelerator tables of Vela's C++ core (regor), which only the source distribution has:
  MACs, cores, output micro-block shapes, output/activation cycles per element, the U85 read
  buffers per memory channel, the AXI port width and the defaults regor gives a memory parameter
  the .ini leaves out. `python scripts/regen.py` downloads the pinned sdist into a cache and runs
  this script on it; by hand, get the sources as scripts/gen_ethosu_registers.py explains and run

      python scripts/gen_ethosu_perf_data.py <unpacked ethos-u-vela source> [--check]

It rewrites `src/pte_adapter/delegates/ethosu/_generated/perf_data.py`. `--check` without the
source checks only what comes from the installed package (the blocks of the .ini, the defaults and
the version must appear in the committed file as this script writes them).
"""

from __future__ import annotations

import configparser
import pprint
import re
import sys
from pathlib import Path

from _codegen import REPO, Source, emit, header, installed_file, parser, sdist_version, source_file

OUT = REPO / "src/pte_adapter/delegates/ethosu/_generated/perf_data.py"
ARCH = "ethosu/regor/architecture"
SOURCES = {
    "u55": f"{ARCH}/ethosu55/ethos_u55.cpp",
    "u65": f"{ARCH}/ethosu65/ethos_u65.cpp",
    "u85": f"{ARCH}/ethosu85/ethos_u85.cpp",
}
REGOR_CPP = "ethosu/regor/regor.cpp"
MEMORY_KEYS = (
    "clock_scale",
    "ports_used",
    "burst_length",
    "read_latency",
    "write_latency",
    "max_reads",
    "max_writes",
)


def _num(text: str) -> float | int:
    v = float(text)
    return int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v


def read_ini(text: str) -> tuple[dict[str, object], dict[str, object]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(text)

    def section(name: str) -> dict[str, str]:
        items = dict(parser[name])
        base = items.pop("inherit", None)
        return {**(section(base) if base else {}), **items}

    systems: dict[str, object] = {}
    modes: dict[str, object] = {}
    for name in parser.sections():
        kind, _, short = name.partition(".")
        items = section(name)
        if kind == "System_Config":
            memories: dict[str, dict[str, float | int]] = {}
            for key, value in items.items():
                mem, _, param = key.partition("_")
                if param in MEMORY_KEYS:
                    memories.setdefault(mem, {})[param] = _num(value)
            systems[short] = {
                "core_clock": float(items["core_clock"]),
                "axi0_port": items["axi0_port"],
                "axi1_port": items["axi1_port"],
                "memories": memories,
            }
        elif kind == "Memory_Mode":
            modes[short] = {
                "const_mem_area": items["const_mem_area"],
                "arena_mem_area": items["arena_mem_area"],
                "cache_mem_area": items["cache_mem_area"],
                "arena_cache_size": int(items["arena_cache_size"])
                if "arena_cache_size" in items
                else None,
            }
    return systems, modes


def _floats(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-\d.]+", text)]


def _shape(text: str) -> tuple[int, int, int]:
    h, w, c = (int(x) for x in re.findall(r"\d+", text))
    return h, w, c


def read_u55_family(text: str, product: str, names: list[str]) -> dict[str, object]:
    """`s_EthosU55PerfInfo` / `s_EthosU55Configs` (and the U65 ones) in declaration order."""
    perf_m = re.search(r"PerfInfo s_\w+PerfInfo\[\] = \{(.*?)\};", text, re.S)
    cfg_m = re.search(r"AcceleratorConfig s_\w+Configs\[\] = \{(.*?)\n\};", text, re.S)
    assert perf_m and cfg_m, f"{product}: tables not found"
    perfs = re.findall(r"\{\{([^}]*)\}, \{([^}]*)\}\}", perf_m.group(1))
    cfgs = re.findall(
        r"\{(\d+), (\d+), Shape\(([^)]*)\), Shape\(([^)]*)\), (\d+), \{[^}]*\}, (\d+), &",
        cfg_m.group(1),
    )
    assert len(perfs) == len(cfgs) == len(names), f"{product}: {len(perfs)} perf, {len(cfgs)} cfg"
    out: dict[str, object] = {}
    for name, (out_c, act_c), (macs, cores, ofm_ub, _ifm_ub, _banks, _elem) in zip(
        names, perfs, cfgs, strict=True
    ):
        out[name] = {
            "macs": int(macs),
            "cores": int(cores),
            "ofm_ublocks": [_shape(ofm_ub)],
            "output_cycles": _floats(out_c),
            "activation_cycles": _floats(act_c),
            "channel_read_buffers": None,
        }
    return out


def read_u85(text: str, names: list[str]) -> dict[str, object]:
    perf_m = re.search(r"EthosU85PerfInfo s_EthosU85PerfInfo\[\] = \{(.*?)\n\};", text, re.S)
    cfg_m = re.search(r"AcceleratorConfig s_EthosU85Configs\[\] = \{(.*?)\n\};", text, re.S)
    assert perf_m and cfg_m, "u85: tables not found"
    perfs = re.findall(r"\{\{([^}]*)\}, \{([^}]*)\}, \{([^}]*)\}, \{([^}]*)\}\}", perf_m.group(1))
    cfgs = re.findall(
        r"\{(\d+), (\d+), \{((?:Shape\([^)]*\),? ?)+)\}, Shape\([^)]*\),.*?\{([\d, ]+)\}, &",
        cfg_m.group(1),
        re.S,
    )
    assert len(perfs) == len(cfgs) == len(names), f"u85: {len(perfs)} perf, {len(cfgs)} cfg"
    out: dict[str, object] = {}
    for name, (out_c, act_c, rs_lo, rs_hi), (macs, cores, ublocks, rbs) in zip(
        names, perfs, cfgs, strict=True
    ):
        out[name] = {
            "macs": int(macs),
            "cores": int(cores),
            "ofm_ublocks": [_shape(s) for s in re.findall(r"Shape\(([^)]*)\)", ublocks)],
            "output_cycles": _floats(out_c),
            "activation_cycles": _floats(act_c),
            "resize_cycles_low": _floats(rs_lo),
            "resize_cycles_high": _floats(rs_hi),
            # Read buffers per channel: Mem2Mem, IFMStream, Weight, FastWeight, IFM, Scale.
            "channel_read_buffers": [int(x) for x in re.findall(r"\d+", rbs)],
        }
    return out


def read_regor_memory_rules(text: str) -> dict[str, object]:
    """Defaults of a memory parameter the .ini omits and the AXI port width (bytes/cycle)."""
    struct_m = re.search(r"struct Memory\s*\{(.*?)\};", text, re.S)
    assert struct_m, "regor.cpp: struct Memory not found"
    defaults = {k: _num(v) for k, v in re.findall(r"\w+ (\w+) = ([\d.]+);", struct_m.group(1))}
    width_m = re.search(r"axiWidthBytes = isU55 \? (\d+) : (\d+);", text)
    assert width_m, "regor.cpp: AXI width rule not found"
    return {
        "memory_defaults": defaults,
        "axi_bytes_per_cycle_u55_system": int(width_m.group(1)),
        "axi_bytes_per_cycle_other": int(width_m.group(2)),
    }


def read_defaults(text: str) -> dict[str, object]:
    """Vela's default --system-config / --memory-mode per product (architecture_features.py)."""
    sys_m = re.search(r"def _set_default_sys_config.*?def ", text, re.S)
    mode_m = re.search(r"def _set_default_mem_mode.*?def ", text, re.S)
    assert sys_m and mode_m, "architecture_features.py: default config functions not found"
    u85, u65, u55 = re.findall(r'self\.system_config = "(\w+)"', sys_m.group(0))
    u85_u65_mode, u55_mode = re.findall(r'self\.memory_mode = "(\w+)"', mode_m.group(0))
    return {
        "ethos-u55": {"system_config": u55, "memory_mode": u55_mode},
        "ethos-u65": {"system_config": u65, "memory_mode": u85_u65_mode},
        "ethos-u85": {"system_config": u85, "memory_mode": u85_u65_mode},
    }


def _block(name: str, type_: str, value: dict[str, object], why: str) -> str:
    """`# why` and `NAME: Final[type] = {...}` with one top-level key per entry."""
    lines = [f"# {why}", f"{name}: Final[{type_}] = {{"]
    for key in sorted(value):
        prefix = f"    {key!r}: "
        body = pprint.pformat(value[key], width=100 - len(prefix), sort_dicts=True)
        lines.append(prefix + body.replace("\n", "\n" + " " * len(prefix)) + ",")
    return "\n".join([*lines, "}", ""])


def installed_blocks() -> tuple[list[Source], list[str], str]:
    """What the installed ethos-u-vela gives: its sources, the generated blocks and the version."""
    ini_source, ini = installed_file("ethos-u-vela", "ethosu/config_files/Arm/vela.ini")
    arch_source, arch_py = installed_file("ethos-u-vela", "ethosu/vela/architecture_features.py")
    systems, modes = read_ini(ini)
    blocks = [
        f"VELA_VERSION: Final = {ini_source.version!r}\n",
        _block(
            "SYSTEM_CONFIGS",
            "dict[str, dict[str, Any]]",
            systems,
            "Vela --system-config name -> core clock (Hz), memory behind each AXI port, memory "
            "parameters.",
        ),
        _block(
            "MEMORY_MODES",
            "dict[str, dict[str, Any]]",
            modes,
            "Vela --memory-mode name -> AXI port of the constants, the arena and the staging cache.",
        ),
        _block(
            "DEFAULTS",
            "dict[str, dict[str, str]]",
            read_defaults(arch_py),
            "What Vela assumes when the command line names no system config / memory mode.",
        ),
    ]
    return [ini_source, arch_source], blocks, ini_source.version


def source_blocks(src: Path, version: str) -> tuple[list[Source], list[str]]:
    """What only the source distribution gives: regor's accelerator tables and memory rules."""
    loaded = {k: source_file("ethos-u-vela", version, src, rel) for k, rel in SOURCES.items()}
    regor_source, regor = source_file("ethos-u-vela", version, src, REGOR_CPP)
    accels: dict[str, object] = {}
    accels.update(
        read_u55_family(
            loaded["u55"][1],
            "u55",
            ["ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"],
        )
    )
    accels.update(read_u55_family(loaded["u65"][1], "u65", ["ethos-u65-256", "ethos-u65-512"]))
    accels.update(
        read_u85(
            loaded["u85"][1],
            [
                "ethos-u85-128",
                "ethos-u85-256",
                "ethos-u85-512",
                "ethos-u85-1024",
                "ethos-u85-2048",
            ],
        )
    )
    blocks = [
        _block(
            "ACCELERATORS",
            "dict[str, dict[str, Any]]",
            accels,
            "--accelerator-config -> MACs, cores, OFM micro-blocks (h, w, c) and cycles per element.",
        ),
        _block(
            "MEMORY_RULES",
            "dict[str, Any]",
            read_regor_memory_rules(regor),
            "How regor turns a system config into memories (bandwidth = clock scale x AXI width x "
            "ports).",
        ),
    ]
    return [*(s for s, _ in loaded.values()), regor_source], blocks


def render(sources: list[Source], blocks: list[str]) -> str:
    return "\n".join(
        [
            header(
                "Ethos-U system configurations, memory modes and accelerator tables",
                "gen_ethosu_perf_data.py",
                sources,
                "Numbers are Arm's; their use is in delegates/ethosu/perf.py.",
            )
            + "from __future__ import annotations\n\nfrom typing import Any, Final\n",
            *blocks,
        ]
    )


def check_installed_part(blocks: list[str]) -> int:
    """Without the source: the blocks from the installed package must be in the committed file."""
    committed = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
    stale = [re.findall(r"^(\w+): Final", b, re.M)[0] for b in blocks if b not in committed]
    for name in stale:
        print(f"{OUT.name}: {name} is stale: run python scripts/regen.py", file=sys.stderr)
    if not stale:
        print(f"current (installed ethos-u-vela part only, no source given): {OUT.name}")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument(
        "vela_source", type=Path, nargs="?", help="unpacked ethos-u-vela source distribution"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sources, blocks, version = installed_blocks()
    if args.vela_source is None:
        if not args.check:
            ap.error("the unpacked ethos-u-vela source is needed to write the file")
        return check_installed_part(blocks)
    if sdist_version(args.vela_source, "ethos-u-vela") != version:
        raise SystemExit(f"{args.vela_source} is not the installed ethos-u-vela {version}")
    more_sources, more_blocks = source_blocks(args.vela_source, version)
    # Order in the module: version, system configs, memory modes, accelerators, rules, defaults.
    text = render([*sources, *more_sources], [*blocks[:3], *more_blocks, blocks[3]])
    return emit({args.out: text}, args.check)


if __name__ == "__main__":
    sys.exit(main())
