"""Folder mutations (issue 33): the fuzzer's other half. Byte mutations (`fuzz.py`) corrupt what
a file says; these corrupt what a folder holds: each input is a real program's folder (the Arm
example with its ETRecord, its `<stem>_artifacts/` and an ETDump) with one to three seeded edits
of the names the side-file finders look for: a FIFO, a directory, a symlink out of the folder, a
symlink loop, a dangling symlink, `/dev/null`, an empty file, another side file's bytes (whole or
cut), a sparse giant, a sibling with a 250-character name. `tests/support/hostile.py` runs each
folder through the commands and the Model Explorer conversion.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support.examples import EXAMPLES
from tests.support.hostile import ARM, PROFILED, TOSA_SIDECAR

ART = f"{ARM}_artifacts"
# The names the finders look for, beside the program and in its artifacts folder.
TARGETS = (
    f"{ARM}.etrecord",
    f"{ARM}_etrecord.bin",
    "etrecord.bin",
    f"{ARM}.etdp",
    f"{ARM}.etdump",
    "etdump.bin",
    f"{ARM}.cycles.etdp",
    "etdump.150MHz.bin",
    "debug_buffer.bin",
    "weights.ptd",
    ART,
    f"{ART}/{TOSA_SIDECAR}",
    f"{ART}/output_tag9_TOSA-1.0+INT.tosa",
    f"{ART}/partition_report.txt",
    f"{ART}/debug.json",
    "report.html",
)
# Real files the edits take bytes from.
SOURCES = (
    EXAMPLES / f"{ARM}.etrecord",
    EXAMPLES / f"{PROFILED}.etdp",
    EXAMPLES / ART / TOSA_SIDECAR,
    EXAMPLES / ART / "partition_report.txt",
    EXAMPLES / "xnnpack_weights.ptd",
    EXAMPLES / f"{ARM}.pte",
)

Edit = Callable[[random.Random, Path, Path], None]  # (rng, path to replace, outside folder)


def _clear(path: Path) -> None:
    """Nothing by that name any more (a file, a FIFO, a symlink, a folder)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _fifo(rng: random.Random, path: Path, outside: Path) -> None:
    os.mkfifo(path)


def _directory(rng: random.Random, path: Path, outside: Path) -> None:
    path.mkdir()


def _symlink_out(rng: random.Random, path: Path, outside: Path) -> None:
    os.symlink(outside / rng.choice(sorted(os.listdir(outside))), path)


def _symlink_loop(rng: random.Random, path: Path, outside: Path) -> None:
    os.symlink(path.name, path)


def _dangling(rng: random.Random, path: Path, outside: Path) -> None:
    os.symlink(f"{path.name}.missing", path)


def _dev_null(rng: random.Random, path: Path, outside: Path) -> None:
    os.symlink(os.devnull, path)


def _empty(rng: random.Random, path: Path, outside: Path) -> None:
    path.write_bytes(b"")


def _other_bytes(rng: random.Random, path: Path, outside: Path) -> None:
    data = rng.choice(SOURCES).read_bytes()
    path.write_bytes(data[: rng.randrange(len(data) + 1)] if rng.random() < 0.5 else data)


def _sparse(rng: random.Random, path: Path, outside: Path) -> None:
    shutil.copyfile(rng.choice(SOURCES), path)
    os.truncate(path, rng.choice((300_000_000, 3_000_000_000)))


def _long_sibling(rng: random.Random, path: Path, outside: Path) -> None:
    shutil.copyfile(rng.choice(SOURCES), path.parent / ("x" * 250))


EDITS: dict[str, Edit] = {
    "fifo": _fifo,
    "directory": _directory,
    "symlink_out": _symlink_out,
    "symlink_loop": _symlink_loop,
    "dangling": _dangling,
    "dev_null": _dev_null,
    "empty": _empty,
    "other_bytes": _other_bytes,
    "sparse": _sparse,
    "long_sibling": _long_sibling,
}


def mutated_folder(seed: int, folder: Path) -> tuple[Path, list[str]]:
    """The Arm example's folder under `folder` with one to three seeded edits; returns the
    program's path and the edits made (`<edit> <name>`), which replay the input from its seed."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    pte = folder / f"{ARM}.pte"
    shutil.copyfile(EXAMPLES / f"{ARM}.pte", pte)
    shutil.copyfile(EXAMPLES / f"{ARM}.etrecord", folder / f"{ARM}.etrecord")
    shutil.copytree(EXAMPLES / ART, folder / ART)
    shutil.copyfile(EXAMPLES / f"{PROFILED}.etdp", folder / f"{ARM}.etdp")
    outside = folder.parent / f"{folder.name}.outside"
    outside.mkdir()
    for src in SOURCES:
        shutil.copyfile(src, outside / src.name)
    done = []
    for _ in range(rng.randint(1, 3)):
        name, edit = rng.choice(TARGETS), rng.choice(sorted(EDITS))
        path = folder / name
        if not path.parent.is_dir() or path.parent.is_symlink():
            continue  # the artifacts folder was replaced by an earlier edit
        _clear(path)
        EDITS[edit](rng, path, outside)
        done.append(f"{edit} {name}")
    return pte, done


# What each folder is run through (besides the Model Explorer conversion).
COMMANDS = (
    ("summary", "{pte}"),
    ("profile", "{pte}"),
    ("report", "{pte}", "-o", "{folder}/report.html"),
)
MAX_SECONDS = 2.0
MAX_MB = 300.0


def run_folders(inputs: int, seed: int, root: Path) -> tuple[list[tuple[object, ...]], set[str]]:
    """Make and run `inputs` mutated folders under `root` (seeds `seed`, `seed + 1`, ...); the
    failures (seed, edits, what went wrong) and the edit kinds made."""
    from tests.support.hostile import run_in_subprocess

    cases, edits = [], {}
    for i in range(inputs):
        pte, done = mutated_folder(seed + i, root / f"in{seed + i}")
        cases.append([str(seed + i), str(pte)])
        edits[str(seed + i)] = done
    bad: list[tuple[object, ...]] = []
    for r in run_in_subprocess(cases, root, COMMANDS):
        runs = r.get("runs", [])
        wrong = [
            x
            for x in runs
            if x["status"] not in ("ok", "format", "usage")
            or x["seconds"] >= MAX_SECONDS
            or x["control_bytes"]
        ]
        if "crash" in r or wrong or r["mb"] >= MAX_MB or r["outside"]:
            bad.append(
                (
                    r["case"],
                    edits[r["case"]],
                    r.get("crash"),
                    wrong[:1],
                    r.get("mb"),
                    r.get("outside"),
                )
            )
    return bad, {e.split()[0] for done in edits.values() for e in done}
