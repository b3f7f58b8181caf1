"""A server that stays small (issue 44): one adapter instance, as Model Explorer's server keeps it,
opening real programs while their ETRecord or ETDump is replaced, file after file, by a mutated
copy (the fuzzer's mutators, seeded), and what its memory did.

Each conversion used to leave its program, analysis and plan in a reference cycle (a kept
ETDump error's traceback held the frames that held the analysis), which the cycle collector's
oldest generation kept for good (`explorer/convert.py` moves what a conversion leaves there): the
process grew by about half a megabyte per input. The run happens in a fresh interpreter with torch
hidden, as the adapter's own install has it (Model Explorer imports torch when it is installed,
and 250 MB of torch would hide what the adapter does):

    python -m tests.support.server_memory N SEED    # one JSON line: the figures below
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.examples import EXAMPLES, run_support_module

MAX_PROGRAM_BYTES = 1_000_000  # small programs: what is measured is the side files' work


def _status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def _pairs(root: Path) -> list[tuple[Path, Path, Any]]:
    """(program, side file, fuzz target) for every example with an ETRecord or an ETDump, each
    program's folder copied under `root` with its side files."""
    from tests.support.fuzz_targets import Target

    out = []
    sides = sorted([*EXAMPLES.glob("*.etrecord"), *EXAMPLES.glob("*.etdp")])
    for side in sides:
        stem = side.name.removesuffix(".etrecord").removesuffix(".etdp")
        pte = EXAMPLES / f"{stem}.pte"
        if not pte.exists() or pte.stat().st_size > MAX_PROGRAM_BYTES:
            continue
        folder = root / stem
        if not folder.exists():
            folder.mkdir()
            for f in EXAMPLES.glob(f"{stem}*"):
                if f.is_dir():
                    shutil.copytree(f, folder / f.name)
                elif f.suffix in (".pte", ".etrecord", ".etdp", ".ptd"):
                    shutil.copyfile(f, folder / f.name)
        size = side.stat().st_size
        kind = "etdump" if side.suffix == ".etdp" else "etrecord"
        target = Target(kind, pte.name, side.name, [(0, size), (max(0, size - 1024), size)])
        out.append((folder / pte.name, folder / side.name, target))
    return out


def run(n: int, seed: int) -> dict[str, Any]:
    """Open `n` mutated side files with one adapter instance; the process's memory before (after
    one clean pass over every program), at the end, its peak, and the objects the cycle collector
    then finds unreachable (what the conversions left in cycles)."""
    import gc

    from pte_adapter.errors import PteFormatError
    from pte_adapter.explorer.adapter import PteAdapter
    from tests.support.fuzz_recipes import apply_recipe, mutate

    root = Path(
        tempfile.mkdtemp(
            prefix="server-memory-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None
        )
    )
    try:
        pairs = _pairs(root)
        names = [(p.name, p.stat().st_size) for p in sorted(EXAMPLES.glob("*.pte"))[:8]]
        adapter = PteAdapter()
        clean = {side: side.read_bytes() for _, side, _ in pairs}
        for pte, _, _ in pairs:
            adapter.convert(str(pte), {})
        gc.collect()  # what importing left in cycles
        start = _status_mb("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # the peak from here
        t0 = time.perf_counter()
        for i in range(n):
            rng = random.Random(f"{seed}:{i}")
            pte, side, target = rng.choice(pairs)
            _, recipe = mutate(rng, target, clean[side], names)
            tmp = side.with_name(side.name + ".tmp")
            tmp.write_bytes(apply_recipe(clean[side], recipe, EXAMPLES))
            os.replace(tmp, side)  # a new inode: the adapter's cache sees a new file
            with contextlib.suppress(PteFormatError):  # a broken side file never is one
                adapter.convert(str(pte), {})
        seconds = time.perf_counter() - t0
        end, peak = _status_mb("VmRSS"), _status_mb("VmHWM")
        return {
            "inputs": n,
            "programs": len({p for p, _, _ in pairs}),
            "rss_start_mb": round(start, 1),
            "rss_end_mb": round(end, 1),
            "peak_mb": round(peak, 1),
            "unreachable": gc.collect(),
            "seconds": round(seconds, 1),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_in_subprocess(n: int, seed: int) -> dict[str, Any]:
    """`run` in a fresh interpreter with this checkout's sources first on its path."""
    out = run_support_module(
        "tests.support.server_memory", [str(n), str(seed)], 1800, "the server-memory run"
    )
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


if __name__ == "__main__":
    sys.modules["torch"] = None  # type: ignore[assignment]  # the adapter's install has no torch
    print(json.dumps(run(int(sys.argv[1]), int(sys.argv[2]))))
