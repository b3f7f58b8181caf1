"""ETDumps re-serialised by ExecuTorch's own ETDump serializer (`executorch.devtools.etdump`), for
tests of other time scales: a real example's ETDump with every tick scaled, as a board that counts
cycles (or microseconds) would have recorded the same runs."""

from __future__ import annotations

import struct
from pathlib import Path


def rescaled_etdump(source: Path, out: Path, factor: float, *, prefixed: bool = True) -> Path:
    """`out`: `source` with every profile event's start and end tick multiplied by `factor`
    (rounded to whole ticks), written by `serialize_to_etdump_flatcc`. That writer leaves out the
    4-byte size prefix the runtime's ETDumpGen writes and the Inspector expects; `prefixed` adds it.
    """
    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    etdump = deserialize_from_etdump_flatcc(source.read_bytes())
    for run in etdump.run_data:
        for event in run.events or []:
            pe = event.profile_event
            if pe is not None:
                pe.start_time = round(pe.start_time * factor)
                pe.end_time = round(pe.end_time * factor)
    data = serialize_to_etdump_flatcc(etdump)
    out.write_bytes(struct.pack("<I", len(data)) + data if prefixed else data)
    return out


def debug_only_etdump(source: Path, out: Path, run_name: str) -> Path:
    """`out`: `source` without its profile events and its runs renamed `run_name`, written by
    `serialize_to_etdump_flatcc`: what an emulation that logs values only (its RunData named
    `emulated ...`, issue 43) writes for the same run."""
    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    etdump = deserialize_from_etdump_flatcc(source.read_bytes())
    kept = []
    for run in etdump.run_data:
        run.events = [e for e in run.events or [] if e.debug_event is not None]
        run.name = run_name
        if run.events:
            kept.append(run)
    etdump.run_data = kept
    data = serialize_to_etdump_flatcc(etdump)
    out.write_bytes(struct.pack("<I", len(data)) + data)
    return out


def edited_etdump(
    source: Path,
    out: Path,
    *,
    runs: int | None = None,
    same: bool = False,
    stretch: dict[int, float] | None = None,
) -> Path:
    """`out`: `source` re-serialised by ExecuTorch's writer with only its first `runs` "Execute"
    blocks (the load blocks kept), with `same` every run's events timed exactly as the first
    run's, and with `stretch` (run -> factor) the events of those runs made that much longer, as
    a run the scheduler preempted: the few-runs, one-run, all-identical and single-outlier cases
    from a real recording."""
    from executorch.devtools.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    etdump = deserialize_from_etdump_flatcc(source.read_bytes())
    kept, executed, first = [], 0, None
    for run in etdump.run_data:
        if run.name == "Execute":
            if runs is not None and executed >= runs:
                continue
            executed += 1
            events = [e.profile_event for e in run.events or [] if e.profile_event is not None]
            if same and first is None:
                first = [(p.end_time - p.start_time) for p in events]
            elif same and first is not None:
                for p, ticks in zip(events, first, strict=True):
                    p.end_time = p.start_time + ticks
            factor = (stretch or {}).get(executed - 1)
            if factor is not None:
                for p in events:
                    p.end_time = p.start_time + round((p.end_time - p.start_time) * factor)
        kept.append(run)
    etdump.run_data = kept
    data = serialize_to_etdump_flatcc(etdump)
    out.write_bytes(struct.pack("<I", len(data)) + data)
    return out
