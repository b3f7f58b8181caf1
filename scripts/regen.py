#!/usr/bin/env python3
"""Run every generator of generated code: the one entry point (tests/project/test_generated.py
calls it with --check, one generator at a time).

    python scripts/regen.py                  # rewrite every generated module
    python scripts/regen.py --check          # exit 1 when a committed one differs; write nothing
    python scripts/regen.py --only tosa      # one generator (repeatable); --list names them

Each generator also runs alone (`python scripts/gen_<name>.py [--check]`). regen.py also writes
(or checks) the `__init__.py` of every `_generated/` package.

The Ethos-U generators read C++ sources that only ethos-u-vela's source distribution has. regen.py
gets it itself: `pip download` of the installed (pinned) version's sdist into a cache outside the
repository (`$PTE_ADAPTER_CACHE`, else `$XDG_CACHE_HOME/pte_adapter`, else `~/.cache/pte_adapter`),
checked against the sha256 pinned below and unpacked there once (about 20 s and 2.5 MB, needs the
package index). `--vela-source DIR` names an unpacked source instead. When the sdist cannot be had
(offline, or an installed version with no pinned sha256), `ethosu_registers` is skipped and
`ethosu_perf_data` checks only what comes from the installed package; each says why.

Exit status: 0 when everything selected is current (or was written); 1 when a file is stale or a
generator failed; 3 when nothing is stale but a generator was skipped or only partly checked.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from _codegen import PACKAGE_INIT, REPO

SCRIPTS = Path(__file__).resolve().parent
SKIPPED = 3

VELA = "ethos-u-vela"
# sha256 of the sdist on the package index, per version: a download must match before it is used.
VELA_SDIST_SHA256 = {
    "5.2.0": "d1228738674913ed866a136a6002f93a4b7248b23402fa5b52caa8cfef138eaa",
}


@dataclass(frozen=True)
class Generator:
    name: str
    script: str
    outputs: tuple[str, ...]  # relative to src/pte_adapter
    needs_vela_source: bool = False
    # Without the source, `--check` still checks the part that comes from the installed package.
    partial_without_source: bool = False


GENERATORS = (
    Generator(
        "program_schema",
        "gen_program_schema.py",
        ("container/_generated/program_schema.py", "container/_generated/flat_tensor_schema.py"),
    ),
    Generator(
        "bundled_program_schema",
        "gen_bundled_program_schema.py",
        ("container/_generated/bundled_program_schema.py",),
    ),
    Generator("etdump", "gen_etdump_tables.py", ("container/_generated/etdump_schema.py",)),
    Generator("export_schema", "gen_export_schema.py", ("container/_generated/export_schema.py",)),
    Generator(
        "xnnpack", "gen_xnnpack_tables.py", ("delegates/xnnpack/_generated/xnnpack_schema.py",)
    ),
    Generator(
        "vulkan_schema",
        "gen_vulkan_schema.py",
        ("delegates/vulkan/_generated/vulkan_schema.py",),
    ),
    Generator(
        "vulkan_rules",
        "gen_vulkan_rules.py",
        ("delegates/vulkan/_generated/partition_rules.py",),
    ),
    Generator(
        "coreml_proto",
        "gen_coreml_proto.py",
        ("delegates/coreml/_generated/coreml_proto.py",),
    ),
    Generator("tosa", "gen_tosa_tables.py", ("delegates/tosa/_generated/tosa_schema.py",)),
    Generator("spirv", "gen_spirv_tables.py", ("delegates/vgf/_generated/spirv_tables.py",)),
    Generator(
        "partition_rules",
        "gen_partition_rules.py",
        (
            "delegates/arm/_generated/partition_rules.py",
            "delegates/xnnpack/_generated/partition_configs.py",
        ),
    ),
    Generator(
        "cortex_m_rewrites",
        "gen_cortex_m_rewrites.py",
        ("delegates/arm/_generated/cortex_m_rewrites.py",),
    ),
    Generator(
        "ethosu_registers",
        "gen_ethosu_registers.py",
        (
            "delegates/ethosu/_generated/registers_u55.py",
            "delegates/ethosu/_generated/registers_u85.py",
        ),
        needs_vela_source=True,
    ),
    Generator(
        "ethosu_perf_data",
        "gen_ethosu_perf_data.py",
        ("delegates/ethosu/_generated/perf_data.py",),
        needs_vela_source=True,
        partial_without_source=True,
    ),
)
PACKAGE = REPO / "src" / "pte_adapter"


def cache_dir() -> Path:
    if os.environ.get("PTE_ADAPTER_CACHE"):
        return Path(os.environ["PTE_ADAPTER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pte_adapter"


def vela_source() -> tuple[Path | None, str]:
    """The unpacked sdist of the installed ethos-u-vela (downloaded once), or None and why not."""
    try:
        version = metadata.version(VELA)
    except metadata.PackageNotFoundError:
        return None, f"{VELA} is not installed"
    digest = VELA_SDIST_SHA256.get(version)
    if digest is None:
        return None, f"no pinned sha256 for the {VELA} {version} sdist: add it to regen.py"
    root = cache_dir() / f"ethos_u_vela-{version}"
    if (root / "PKG-INFO").is_file():
        return root, ""
    try:
        return _download_vela(version, digest, root)
    except OSError as e:  # a cache that cannot be written, a full disk
        return None, f"cannot unpack the {VELA} sdist into {cache_dir()}: {e}"


def _download_vela(version: str, digest: str, root: Path) -> tuple[Path | None, str]:
    cache_dir().mkdir(parents=True, exist_ok=True)
    print(f"downloading the {VELA} {version} source distribution into {cache_dir()} (once)")
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", f"{VELA}=={version}"]
        cmd += ["--no-binary", VELA, "--no-deps", "-d", tmp]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return None, f"pip download {VELA}=={version} timed out"
        sdists = sorted(Path(tmp).glob("*.tar.gz"))
        if run.returncode != 0 or len(sdists) != 1:
            why = (run.stderr.strip().splitlines() or ["no sdist"])[-1]
            return None, f"pip download {VELA}=={version} failed: {why}"
        got = hashlib.sha256(sdists[0].read_bytes()).hexdigest()
        if got != digest:
            return None, f"{sdists[0].name} has sha256 {got}, not the pinned {digest}"
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(sdists[0]) as tar:
            _extract(tar, unpacked)
        top = unpacked / f"ethos_u_vela-{version}"
        if not (top / "PKG-INFO").is_file():
            return None, f"{sdists[0].name} does not hold ethos_u_vela-{version}/PKG-INFO"
        try:
            top.rename(root)
        except OSError:  # another run unpacked it meanwhile
            if not (root / "PKG-INFO").is_file():
                raise
    return root, ""


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    for member in tar.getmembers():  # Python without extraction filters: refuse escapes
        if member.name.startswith("/") or ".." in Path(member.name).parts or member.issym():
            raise SystemExit(f"unsafe member {member.name!r} in the sdist")
    tar.extractall(dest)


def check_packages(gen: Generator, check: bool) -> int:
    """Every `_generated/` package of the generator's outputs has the standard `__init__.py`."""
    stale = 0
    for folder in sorted({(PACKAGE / out).parent for out in gen.outputs}):
        init = folder / "__init__.py"
        if init.is_file() and init.read_text(encoding="utf-8") == PACKAGE_INIT:
            continue
        if check:
            print(
                f"{init.relative_to(REPO)} is stale: run python scripts/regen.py", file=sys.stderr
            )
            stale = 1
        else:
            folder.mkdir(parents=True, exist_ok=True)
            init.write_text(PACKAGE_INIT, encoding="utf-8")
            print(f"wrote {init.relative_to(REPO)}")
    return stale


def run(gen: Generator, check: bool, source: Path | None, why_not: str) -> int:
    args = ["--check"] if check else []
    if gen.needs_vela_source and source is None:
        if not (check and gen.partial_without_source):
            print(f"skipped {gen.name}: needs the {VELA} source distribution ({why_not})")
            return SKIPPED
        print(
            f"partly checked {gen.name}: only what comes from the installed {VELA}; the regor "
            f"tables need its source ({why_not})"
        )
    elif gen.needs_vela_source:
        args.append(str(source))
    print(f"== {gen.name}: scripts/{gen.script} {' '.join(args)}".rstrip(), flush=True)
    status = subprocess.run([sys.executable, str(SCRIPTS / gen.script), *args]).returncode
    status = status or check_packages(gen, check)
    if status == 0 and gen.needs_vela_source and source is None:
        return SKIPPED
    return 0 if status == 0 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a committed file differs from what would be written; write nothing",
    )
    names = [g.name for g in GENERATORS]
    ap.add_argument("--only", action="append", choices=names, help="run this generator only")
    ap.add_argument("--vela-source", type=Path, help="an unpacked ethos-u-vela sdist to use")
    ap.add_argument("--list", action="store_true", help="name every generator and its outputs")
    args = ap.parse_args(argv)
    selected = [g for g in GENERATORS if not args.only or g.name in args.only]
    if args.list:
        for g in selected:
            extra = f"  (needs the {VELA} sdist)" if g.needs_vela_source else ""
            print(f"{g.name}: scripts/{g.script} -> {', '.join(g.outputs)}{extra}")
        return 0
    source, why_not = (args.vela_source, "") if args.vela_source else (None, "not needed")
    if args.vela_source is None and any(g.needs_vela_source for g in selected):
        source, why_not = vela_source()
    statuses = [run(g, args.check, source, why_not) for g in selected]
    if 1 in statuses:
        failed = [g.name for g, s in zip(selected, statuses, strict=True) if s == 1]
        print(f"stale or failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return SKIPPED if SKIPPED in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
