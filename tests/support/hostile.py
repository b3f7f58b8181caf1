"""The standing hostile corpus (issue 33): model folders from a stranger, built from real files.

Each case is a generator `build(folder, scale) -> program path` that lays out one folder an
attacker could ship beside (or instead of) a `.pte`: the side files the adapter finds by name
replaced by FIFOs, devices, directories, sparse giants, symlinks out of the folder, names the
system refuses; ETRecords, ETDumps and programs re-serialised by ExecuTorch's own serializers with
hostile structure (one handle repeated, JSON bloat, shared tables, zero latency, escape sequences
and links in names). `scale` multiplies the hostile part (the issue asks for each case at ten
times its size too).

`run_cases` (in a subprocess: `python -m tests.support.hostile SPEC.json`) runs every CLI command
and the Model Explorer conversion on each case's folder with a hard time limit, and reports per
case the outcomes, the seconds, the process's peak memory, and any control byte that reached the
terminal streams.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tests.support.examples import EXAMPLES

# The programs the cases are built around (small, with the side files the finders look for).
ARM = "lrn_cortex_m_qdq_ethosu85"  # .pte, .etrecord, <stem>_artifacts/ with .tosa and a report
PROFILED = "cond"  # .pte and the .etdp of its runs
PTD = "xnnpack_ptd"  # .pte whose weights are in xnnpack_weights.ptd
TOSA_SIDECAR = "output_tag0_TOSA-1.0+INT+int16+int4+cf.tosa"

Builder = Callable[[Path, int], Path]
CASES: dict[str, Builder] = {}


def case(fn: Builder) -> Builder:
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def _copy_arm(folder: Path, name: str = ARM, side_files: bool = True) -> Path:
    """The Arm example with its ETRecord and its artifacts folder, as `<name>.pte`."""
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{name}.pte"
    shutil.copyfile(EXAMPLES / f"{ARM}.pte", pte)
    if side_files:
        shutil.copyfile(EXAMPLES / f"{ARM}.etrecord", folder / f"{name}.etrecord")
        shutil.copytree(EXAMPLES / f"{ARM}_artifacts", folder / f"{name}_artifacts")
    return pte


def _copy_profiled(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{PROFILED}.pte"
    shutil.copyfile(EXAMPLES / f"{PROFILED}.pte", pte)
    return pte


def _copy_ptd(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{PTD}.pte"
    shutil.copyfile(EXAMPLES / f"{PTD}.pte", pte)
    shutil.copyfile(EXAMPLES / "xnnpack_weights.ptd", folder / "xnnpack_weights.ptd")
    return pte


# --- the folder itself: FIFOs, devices, directories, sparse giants, symlinks, names ---------------


@case
def case_fifos(folder: Path, scale: int) -> Path:
    """A FIFO under every side-file name (a read of one blocks forever)."""
    pte = _copy_arm(folder)
    stem = pte.stem
    art = folder / f"{stem}_artifacts"
    names = [f"{stem}.ns.etdp", "etdump.cycles.bin", "fifo.ptd", f"{stem}_etrecord.bin"]
    names += [f"etdump.{i}MHz.bin" for i in range(1, scale)]
    for name in names:
        os.mkfifo(folder / name)
    for name in ("output_tag7_TOSA-1.0+INT.tosa", "partition_report.txt", "debug.json"):
        (art / name).unlink(missing_ok=True)
        os.mkfifo(art / name)
    return pte


@case
def case_fifo_alone(folder: Path, scale: int) -> Path:
    """One FIFO under a scaled ETDump name and one as `.ptd` (the single-candidate path)."""
    pte = _copy_profiled(folder)
    os.mkfifo(folder / f"{pte.stem}.cycles.etdp")
    os.mkfifo(folder / "weights.ptd")
    return pte


@case
def case_devices(folder: Path, scale: int) -> Path:
    """Side files that are `/dev/zero` (a read never ends) by a symlink."""
    pte = _copy_profiled(folder)
    for name in ("etdump.150MHz.bin", f"{pte.stem}.etrecord", "zero.ptd"):
        os.symlink("/dev/zero", folder / name)
    return pte


@case
def case_sparse_giants(folder: Path, scale: int) -> Path:
    """A sparse `<stem>.etdp` (300 MB x scale) and a sparse `.tosa` sidecar (190 MB x scale),
    each starting with the real file's bytes."""
    pte = _copy_arm(folder)
    etdp = folder / f"{pte.stem}.etdp"
    shutil.copyfile(EXAMPLES / f"{PROFILED}.etdp", etdp)
    os.truncate(etdp, 300_000_000 * scale)
    os.truncate(folder / f"{pte.stem}_artifacts" / TOSA_SIDECAR, 190_000_000 * scale)
    return pte


@case
def case_directories(folder: Path, scale: int) -> Path:
    """Directories under side-file names."""
    pte = _copy_arm(folder)
    (folder / f"{pte.stem}.etrecord").unlink()
    for name in (f"{pte.stem}.etrecord", "etdump.bin", "dir.ptd", f"{pte.stem}.us.etdp"):
        (folder / name).mkdir()
    art = folder / f"{pte.stem}_artifacts"
    (art / "output_tag5_TOSA-1.0+INT.tosa").mkdir()
    (art / "debug.json").mkdir()
    return pte


def _outside(folder: Path) -> Path:
    """A folder beside the case's folder, with real side files in it."""
    out = folder.parent / f"{folder.name}.outside"
    shutil.copytree(EXAMPLES / f"{ARM}_artifacts", out / "artifacts")
    shutil.copyfile(EXAMPLES / f"{ARM}.etrecord", out / "record.etrecord")
    shutil.copyfile(EXAMPLES / f"{PROFILED}.etdp", out / "dump.etdp")
    shutil.copyfile(EXAMPLES / "xnnpack_weights.ptd", out / "weights.ptd")
    (out / "secret.txt").write_text("SECRET-BYTES-OUTSIDE\n")
    return out


@case
def case_symlinks_out(folder: Path, scale: int) -> Path:
    """Side files and the artifacts folder as symlinks to files outside the program's folder,
    and a symlink loop."""
    pte = _copy_arm(folder)
    stem = pte.stem
    out = _outside(folder)
    shutil.rmtree(folder / f"{stem}_artifacts")
    (folder / f"{stem}.etrecord").unlink()
    os.symlink(out / "artifacts", folder / f"{stem}_artifacts")
    os.symlink(out / "record.etrecord", folder / f"{stem}.etrecord")
    os.symlink(out / "dump.etdp", folder / "etdump.bin")
    os.symlink(out / "secret.txt", folder / f"{stem}.cycles.etdp")
    os.symlink(out / "weights.ptd", folder / "weights.ptd")
    os.symlink(out / "secret.txt", folder / "secret.ptd")
    os.symlink(f"{stem}_etrecord.bin", folder / f"{stem}_etrecord.bin")  # ELOOP
    return pte


@case
def case_long_names(folder: Path, scale: int) -> Path:
    """A program named with 250 characters: every side-file name made from it is too long."""
    return _copy_arm(folder, "m" * 246, side_files=False)


# --- running them -----------------------------------------------------------------------------

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("summary", "{pte}"),
    ("summary", "--json", "{pte}"),
    ("check", "--max-partitions", "99", "{pte}"),
    ("size", "{pte}"),
    ("diff", "{pte}", "{pte}"),
    ("profile", "{pte}"),
    ("report", "{pte}", "-o", "{out}/report.html"),
    ("export", "{pte}", "-o", "{out}/graph.json"),
)
EXIT_INTERNAL = 4
HARD_LIMIT_S = 20.0


class HostileTimeout(BaseException):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise HostileTimeout


@dataclass
class Run:
    what: str
    status: str  # "ok" | "format" (exit 3, or a PteFormatError) | "usage" | "internal" | "timeout"
    seconds: float
    output: str = ""
    control_bytes: list[str] = field(default_factory=list)


# C0 except newline and tab, DEL, C1: what a terminal acts on.
TERMINAL_CONTROLS = frozenset(chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))) - {
    "\n",
    "\t",
}


def _limited(fn: Callable[[], str]) -> tuple[str, str, float]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HARD_LIMIT_S)
    t0 = time.perf_counter()
    try:
        status, text = "ok", fn()
    except HostileTimeout:
        status, text = "timeout", f"over {HARD_LIMIT_S} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return status, text, time.perf_counter() - t0


def _cli(argv: list[str]) -> str:
    from pte_adapter.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return f"exit {code}\n{out.getvalue()}{err.getvalue()}"


def _explorer(pte: Path) -> str:
    from pte_adapter.errors import PteFormatError
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    try:
        graphs = convert_path(pte)
        return f"exit 0\n{len(json.dumps(graphs_to_json(graphs)))} bytes of graphs"
    except PteFormatError as e:
        return f"exit 3\n{e}"


def _status(status: str, text: str) -> str:
    if status != "ok":
        return status
    code = int(text.split("\n", 1)[0].removeprefix("exit "))
    return {0: "ok", 1: "ok", 2: "usage", 3: "format"}.get(code, "internal")


def run_case(pte: Path, out: Path) -> list[Run]:
    """Every command and the Model Explorer conversion on one case's program."""
    runs = []
    for command in COMMANDS:
        argv = [a.format(pte=pte, out=out) for a in command]
        status, text, seconds = _limited(lambda argv=argv: _cli(argv))
        controls = sorted({f"U+{ord(c):04X}" for c in text if c in TERMINAL_CONTROLS})
        runs.append(Run(" ".join(command[:2]), _status(status, text), seconds, text, controls))
    status, text, seconds = _limited(lambda: _explorer(pte))
    runs.append(Run("model-explorer", _status(status, text), seconds, text))
    return runs


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def in_folder(folder: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def main(spec_path: str) -> int:
    """Run the cases of a spec (`{"cases": [[name, program path], ...], "out": folder}`) and
    print one JSON line per case: its runs and the peak memory after it."""
    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    import pte_adapter.cli
    import pte_adapter.explorer.convert  # noqa: F401 - imports are not the case's memory

    baseline = peak_rss_mb()
    for name, pte in spec["cases"]:
        out = Path(spec["out"]) / name
        out.mkdir(parents=True, exist_ok=True)
        with in_folder(out):
            runs = run_case(Path(pte), out)
        record = {"case": name, "runs": [asdict(r) for r in runs]}
        record["peak_mb_over_baseline"] = peak_rss_mb() - baseline
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
