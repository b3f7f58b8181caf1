"""The hostile corpus's cases of the debug buffer (issue 43): what `pte-adapter numerics` reads
beside an ETDump. Registered in `hostile.py`'s `CASES` (which imports this module) like its own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support.examples import EXAMPLES
from tests.support.hostile import case

NUMERICS = "numerics_portable"  # .pte, .etrecord, .etdp with debug events, .debug_buffer.bin


def _copy_numerics(folder: Path, buffer: bool = True) -> Path:
    """The numerics example with its ETRecord and ETDump (and its debug buffer)."""
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".pte", ".etrecord", ".etdp", *((".debug_buffer.bin",) if buffer else ())):
        shutil.copyfile(EXAMPLES / f"{NUMERICS}{suffix}", folder / f"{NUMERICS}{suffix}")
    return folder / f"{NUMERICS}.pte"


@case
def case_debug_buffer_fifos(folder: Path, scale: int) -> Path:
    """A FIFO under every name a debug buffer goes by (a read of one blocks forever)."""
    pte = _copy_numerics(folder, buffer=False)
    for name in (
        f"{NUMERICS}.debug_buffer.bin",
        f"{NUMERICS}_debug_output.bin",
        "debug_buffer.bin",
    ):
        os.mkfifo(folder / name)
    return pte


@case
def case_debug_buffer_giant(folder: Path, scale: int) -> Path:
    """A sparse debug buffer of 4.5 GB x scale starting with the real one's bytes (beyond the
    4 GiB a buffer may map)."""
    pte = _copy_numerics(folder)
    os.truncate(folder / f"{NUMERICS}.debug_buffer.bin", 4_500_000_000 * scale)
    return pte


@case
def case_debug_buffer_outside(folder: Path, scale: int) -> Path:
    """`debug_buffer.bin` a symlink to `/dev/zero`, and the stem's name a symlink to a real
    buffer outside the folder."""
    pte = _copy_numerics(folder, buffer=False)
    os.symlink("/dev/zero", folder / "debug_buffer.bin")
    out = folder.parent / f"{folder.name}.outside"
    out.mkdir()
    shutil.copyfile(EXAMPLES / f"{NUMERICS}.debug_buffer.bin", out / "buffer.bin")
    (out / "secret.txt").write_text("SECRET-BYTES-OUTSIDE\n")  # no output may quote it
    os.symlink(out / "buffer.bin", folder / f"{NUMERICS}.debug_buffer.bin")
    return pte


@case
def case_debug_events_far(folder: Path, scale: int) -> Path:
    """The example's ETDump with its run repeated 50 x scale times, every logged tensor at an offset
    of 2^62 (written by ExecuTorch's ETDump serializer): far outside any buffer."""
    import struct
    from copy import deepcopy

    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    pte = _copy_numerics(folder)
    etdump = deserialize_from_etdump_flatcc((EXAMPLES / f"{NUMERICS}.etdp").read_bytes())
    execute = [r for r in etdump.run_data if any(e.debug_event for e in r.events or [])]
    etdump.run_data += [deepcopy(execute[0]) for _ in range(50 * scale)]
    for run in etdump.run_data:
        for event in run.events or []:
            entry = event.debug_event.debug_entry if event.debug_event else None
            if entry is not None and entry.tensor is not None:
                entry.tensor.offset = 1 << 62
    data = serialize_to_etdump_flatcc(etdump)
    (folder / f"{NUMERICS}.etdp").write_bytes(struct.pack("<I", len(data)) + data)
    return pte
