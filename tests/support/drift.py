"""Runs over time recomputed from ExecuTorch's own reading of an ETDump, for the drift tests.

`oracle(latencies)` is the method docs/profiling.md#runs-over-time states, written again with
numpy (never with the adapter's code); `latencies(etdp, method)` is a method's per-run latency by
ExecuTorch's Inspector (or its ETDump deserializer, in file order, when the runs fall in several
of the Inspector's blocks); `deserialized_runs(etdp)` is every run's events by the deserializer.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from pte_adapter.analysis.profile.report_types import MethodTimes
from tests.support.profiles import inspector

# -- the method, written again with numpy ---------------------------------------------------


def oracle(x: list[float]) -> dict[str, Any]:
    """docs/profiling.md#runs-over-time, in numpy."""
    a = np.asarray(x, dtype=float)
    n = a.size
    if n < 2 or a.max() == a.min() or n < 10:
        return {
            "state": "one_run" if n == 1 else "identical" if n and a.max() == a.min() else "few"
        }
    window = int(np.clip(n // 6, 3, 25))
    window += 1 - window % 2
    warm = 0
    while warm < n // 4:
        after = np.sort(a[warm + 1 : warm + 1 + window])
        if after.size < 2 or not (a[warm] > after[-2] and a[warm] > 1.25 * np.median(after)):
            break
        warm += 1
    y = a[warm:]
    w = min(window, y.size)
    first, last = float(np.median(y[:w])), float(np.median(y[-w:]))
    noise = 1.4826 * float(np.median(np.abs(np.diff(y)))) / np.sqrt(2)
    threshold = max(0.05 * abs(first), 3 * 1.2533 * noise * np.sqrt(2 / w))
    half = y.size // 2
    slope = float(np.median((y[half : 2 * half] - y[:half]) / half)) * 100
    change = last - first
    onset = None
    if abs(change) > threshold:
        h = w // 2
        rolled = np.array([np.median(y[max(0, i - h) : i + h + 1]) for i in range(y.size)])
        beyond = rolled > first + threshold if change > 0 else rolled < first - threshold
        inside = np.flatnonzero(~beyond)
        at = int(inside[-1]) + 1 if inside.size else 0
        if w <= at < y.size:
            onset = warm + at
    state = (
        ("rose" if change > 0 else "fell")
        if abs(change) > threshold
        else "noisy"
        if abs(change) > 0.05 * abs(first)
        else "steady"
    )
    return {
        "state": state,
        "warmup_runs": warm,
        "window": w,
        "first": first,
        "last": last,
        "change_pct": 100 * change / first,
        "onset_run": onset,
        "slope": slope,
        "noise": noise,
    }


# -- ExecuTorch's reading of the runs -------------------------------------------------------


@cache
def deserialized_runs(etdp: Path) -> list[dict[str, float]]:
    """Each "Execute" block of the file in order, by ExecuTorch's deserializer: event name ->
    its duration (ms) summed over the block (delegate events by their debug name), and
    "<name> calls" -> how many there were."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    data = etdp.read_bytes()
    try:
        dump = deserialize_from_etdump_flatcc(data)
    except Exception:  # the runtime's files start with a 4-byte size prefix
        dump = deserialize_from_etdump_flatcc(data[4:])
    out = []
    for run in dump.run_data:
        if run.name != "Execute":
            continue
        events: dict[str, float] = {}
        for e in run.events or []:
            p = e.profile_event
            if p is None:
                continue
            label = getattr(p.name, "string", p.name)  # a string, or a schema String
            name = label or p.delegate_debug_id_str or str(p.delegate_debug_id_int)
            events[name] = events.get(name, 0.0) + (p.end_time - p.start_time) / 1e6
            events[f"{name} calls"] = events.get(f"{name} calls", 0) + 1
        out.append(events)
    return out


def latencies(etdp: Path, method: MethodTimes) -> list[float]:
    """The method's per-run latency (ms) by ExecuTorch: the Inspector's block whose runs it is,
    or, for a program of one method, every run in file order."""
    ours = method["latency_runs"]
    for block in inspector(etdp).event_blocks:
        for e in block.events:
            if e.name == "Method::execute" and e.perf_data is not None:
                raw = [float(v) for v in e.perf_data.raw]
                if len(raw) == len(ours) and np.allclose(raw, ours, atol=1e-3):
                    return raw
    runs = [r["Method::execute"] for r in deserialized_runs(etdp) if "Method::execute" in r]
    assert np.allclose(runs, ours, atol=1e-3), "no reading of ExecuTorch's has these runs"
    return runs
