"""The numeric-gap examples read by ExecuTorch's own tools: the oracle of `analysis/numerics/`.

`runtime_outputs` reads a run's intermediate outputs without the adapter: ExecuTorch's ETDump
deserializer (`deserialize_from_etdump_flatcc`) for the debug events, its program deserializer
(`deserialize_pte_binary`) for the chains, numpy for the bytes of the debug buffer, and the
ETRecord's own `instruction_id_to_num_outs_map` for how many of a delegate call's logged values
are its outputs (the last ones, as the runtime logs every argument, inputs first).
"""

from __future__ import annotations

import json
import warnings
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.examples import EXAMPLES

# The examples run by the pip runtime with a debug buffer (examples/builders/numerics.py).
NUMERICS_EXAMPLES = (
    "numerics_portable",
    "numerics_portable_int8",
    "numerics_xnnpack_fp32",
    "numerics_xnnpack_int8",
    "numerics_island_fp32",
    "numerics_island_int8",
)
# (program, reference): the same network and input, exported two ways.
NUMERICS_PAIRS = (
    ("numerics_xnnpack_int8", "numerics_xnnpack_fp32"),
    ("numerics_island_int8", "numerics_island_fp32"),
    ("numerics_xnnpack_int8", "numerics_portable"),
    ("numerics_portable_int8", "numerics_portable"),
)
_DTYPES = {0: "u1", 1: "i1", 2: "<i2", 3: "<i4", 4: "<i8", 5: "<f2", 6: "<f4", 7: "<f8"}


def files(stem: str) -> tuple[Path, Path, Path, Path]:
    """The program, its ETRecord, ETDump and debug buffer."""
    return (
        EXAMPLES / f"{stem}.pte",
        EXAMPLES / f"{stem}.etrecord",
        EXAMPLES / f"{stem}.etdp",
        EXAMPLES / f"{stem}.debug_buffer.bin",
    )


def _tensor(t: Any, buffer: bytes) -> np.ndarray:
    dtype = np.dtype(_DTYPES[t.scalar_type.value])
    n = int(np.prod(t.sizes)) if t.sizes else 1
    data = np.frombuffer(buffer, dtype=dtype, count=n, offset=t.offset)
    return data.astype(np.float64).reshape(t.sizes)


@cache
def runtime_outputs(stem: str) -> dict[tuple[int, int], np.ndarray]:
    """(instruction index, output position) -> the values the first run logged."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte, etrecord, etdump, debug = files(stem)
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    with zipfile.ZipFile(etrecord) as z:
        outs = json.loads(z.read("instruction_id_to_num_outs_map"))[plan.name]
    buffer = debug.read_bytes()
    dump = deserialize_from_etdump_flatcc(etdump.read_bytes())
    run = next(r for r in dump.run_data if any(e.debug_event for e in r.events or []))
    by_instruction: dict[int, list[np.ndarray]] = {}
    for e in run.events:
        d = e.debug_event
        if d is None or (d.debug_entry.output is not None and d.debug_entry.output.bool_val):
            continue
        base = sum(len(c.instructions) for c in plan.chains[: d.chain_index])
        tensors = [d.debug_entry.tensor] if d.debug_entry.tensor else []
        if d.debug_entry.tensor_list:
            tensors += d.debug_entry.tensor_list.tensors
        for t in tensors:
            by_instruction.setdefault(base + d.instruction_id, []).append(_tensor(t, buffer))
    out: dict[tuple[int, int], np.ndarray] = {}
    for index, values in by_instruction.items():
        n = int(outs.get(str(index), 1))
        for position, v in enumerate(values[-n:]):
            out[(index, position)] = v
    return out


@cache
def method_outputs(stem: str) -> list[np.ndarray]:
    """The values the first run logged as the method's outputs."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    _, _, etdump, debug = files(stem)
    buffer = debug.read_bytes()
    dump = deserialize_from_etdump_flatcc(etdump.read_bytes())
    run = next(r for r in dump.run_data if any(e.debug_event for e in r.events or []))
    return [
        _tensor(e.debug_event.debug_entry.tensor, buffer)
        for e in run.events
        if e.debug_event and e.debug_event.debug_entry.output
    ]


def snr_db(reference: np.ndarray, values: np.ndarray) -> float:
    """10 log10(mean(reference^2) / mean((reference - values)^2)), inf without noise."""
    noise = float(np.mean((reference - values) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(np.mean(reference**2) / noise)


@cache
def inspector_gaps(stem: str) -> dict[str, Any]:
    """`Inspector.calculate_numeric_gap` with "MSE", "L1" and "SNR" on an example: each a
    DataFrame."""
    from executorch.devtools import Inspector

    _, etrecord, etdump, debug = files(stem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=str(etdump), etrecord=str(etrecord), debug_buffer_path=str(debug)
        )
        return {m: inspector.calculate_numeric_gap(m) for m in ("MSE", "L1", "SNR")}
