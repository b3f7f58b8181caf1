"""`--aot`: the runtime's outputs against the ETRecord's exported graph run on its representative
inputs, as ExecuTorch's Inspector pairs them: by calling the Inspector, never re-implementing it.

`Inspector.calculate_numeric_gap` runs the graph the ETRecord holds (its ATen graph when present,
else the edge graph) on the representative inputs the ETRecord records, and pairs each AOT output
with a runtime output by debug handle. That needs torch and executorch (`pip install -e
".[numerics]"`), and it runs code an ETRecord describes: opt-in only (docs/security.md). Without
them, `AotUnavailable` says what to install.

What is taken from the Inspector: its rows (which AOT output goes with which runtime output, and
their op names) and each row's AOT values. What is not: the runtime values, read here from the
debug buffer by this package's own reader (each row's runtime output is found among the values
this reader placed, and must equal the Inspector's bit for bit), and the metrics, computed by
`metrics.py`. Tests check those against the Inspector's own MSE, L1 and SNR.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pte_adapter.analysis.numerics.rows import (
    AOT,
    MethodNumerics,
    NumericRow,
    ProgramNumerics,
    Unjoined,
    summarise,
)
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Method, dtype_name

if TYPE_CHECKING:  # what `--aot` compares; this module is imported by the API, these when used
    from pte_adapter.analysis.numerics.logged import LoggedRun
    from pte_adapter.analysis.numerics.side import Side, SideOutput
    from pte_adapter.analysis.numerics.values import Array

INSTALL = (
    "--aot runs the ETRecord's graph with ExecuTorch's Inspector: pip install -e \".[numerics]\" "
    "(torch and executorch), or compare with another program's run: --reference OTHER.pte"
)
_QDQ_NAMES = ("quantize_per_", "dequantize_per_", "choose_qparams")


class AotUnavailable(Exception):
    """torch or executorch cannot be imported: `INSTALL` says what to do."""


def _inspector_class() -> Any:
    try:
        with _quiet():
            from executorch.devtools import Inspector  # type: ignore[import-untyped,unused-ignore]
    except Exception as e:  # ImportError, or a broken install raising anything on import
        raise AotUnavailable(INSTALL) from e
    return Inspector


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The Inspector's (and torch's) log lines, warnings and prints kept off the command's
    output: Python's streams redirected, and the process's own stderr (file descriptor 2, where
    native libraries print) pointed at /dev/null meanwhile."""
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    saved = _silence_fd(2)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
        _restore_fd(2, saved)


def _silence_fd(fd: int) -> int | None:
    try:
        saved = os.dup(fd)
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return None
    os.dup2(null, fd)
    os.close(null)
    return saved


def _restore_fd(fd: int, saved: int | None) -> None:
    if saved is not None:
        os.dup2(saved, fd)
        os.close(saved)


def _array(x: Any) -> Array | None:
    """A tensor (or a one-tensor list) as float64 numpy; None for anything else."""
    import numpy as np

    if isinstance(x, (list, tuple)):
        if len(x) != 1:
            return None
        x = x[0]
    try:
        return np.asarray(x.detach().cpu().double().numpy(), dtype=np.float64)
    except AttributeError:
        return None


def _layer_name(aot_ops: tuple[str, ...]) -> str:
    compute = [a for a in aot_ops if not any(q in a for q in _QDQ_NAMES)]
    return compute[-1] if compute else (aot_ops[-1] if aot_ops else "")


def inspector_rows(etdump: Path, etrecord: Path, debug_buffer: Path) -> Any:
    """The Inspector's rows (`calculate_numeric_gap`'s DataFrame: its pairing and AOT values)."""
    inspector_class = _inspector_class()
    try:
        with _quiet():
            inspector = inspector_class(
                etdump_path=str(etdump), etrecord=str(etrecord), debug_buffer_path=str(debug_buffer)
            )
            return inspector.calculate_numeric_gap("SNR")
    except Exception as e:  # the Inspector's errors are its own: one line, never a traceback
        raise PteFormatError(
            f"ExecuTorch's Inspector could not compare: {type(e).__name__}: {e}",
            part=etdump.name,
        ) from e


def _match(
    side: Side, method: Method, run: LoggedRun, outputs: list[SideOutput], row: Any
) -> tuple[SideOutput | None, tuple[int, ...] | str]:
    """Our logged output the Inspector's row compares (its runtime values equal ours), with the
    instructions whose debug handles the row merges; else why none."""
    import numpy as np

    wanted = _array(row["runtime_intermediate_output"])
    handles = set(int(h) for h in row["runtime_debug_handle"])
    src = side.source.methods.get(method.name) if side.source else None
    candidates = [
        o
        for o in outputs
        if src is not None
        and o.instruction in src.instructions
        and set(src.instructions[o.instruction].handles) <= handles
    ]
    for o in sorted(candidates, key=lambda c: (-c.instruction, -c.logged.position)):
        raw = side.values(method, run, o.logged).raw
        if raw is None or wanted is None or raw.shape != wanted.shape:
            continue
        if np.array_equal(raw, wanted, equal_nan=True):
            return o, tuple(sorted({c.instruction for c in candidates}))
    return None, (
        "no value this reader placed equals the Inspector's runtime value of this row "
        f"(handles {sorted(handles)})"
    )


def _row(
    side: Side,
    method: Method,
    run: LoggedRun,
    o: SideOutput,
    row: Any,
    aot: Array,
    instructions: tuple[int, ...],
) -> NumericRow | str:
    from pte_adapter.analysis.numerics.metrics import compare, stats

    values = side.values(method, run, o.logged)
    if values.raw is None:
        return values.problem
    runtime, note, quant = values.raw, "", None
    if aot.shape != runtime.shape:
        return f"shapes differ: AOT {list(aot.shape)}, runtime {list(runtime.shape)}"
    t = o.logged.tensor
    aot_dtype = str(getattr(row["aot_intermediate_output"], "dtype", ""))
    aot_is_float = "float" in aot_dtype or "double" in aot_dtype or "half" in aot_dtype
    if values.quant is not None and values.real is not None and aot_is_float:
        runtime, quant = values.real, values.quant  # integers against floats: dequantized
    elif values.quant is not None or values.real is None:
        note = "compared as integers on both sides, as the Inspector does"
    aot_ops = tuple(str(a) for a in row["aot_ops"])
    assert runtime is not None
    return NumericRow(
        runtime_ops=tuple(str(r) for r in row["runtime_ops"]),
        aot_ops=aot_ops,
        layer=_layer_name(aot_ops),
        module=o.layer.module,
        source_line=o.layer.source_line,
        instructions=instructions,
        partition=o.partition,
        partition_name=o.partition_name,
        place=o.place,
        output=o.logged.position,
        shape=tuple(t.sizes),
        dtype=dtype_name(t.scalar_type),
        dequantized=quant,
        reference_dtype=aot_dtype.removeprefix("torch."),
        metrics=compare(aot, runtime),
        stats=stats(runtime),
        note=note,
    )


def aot_numerics(
    side: Side, etdump: Path, etrecord: Path, debug_buffer: Path, threshold_db: float
) -> ProgramNumerics:
    """The rows of `--aot` (module docstring). Raises `AotUnavailable` without torch and
    executorch, `PteFormatError` when the Inspector fails."""
    frame = inspector_rows(etdump, etrecord, debug_buffer)
    result = ProgramNumerics(
        etdump=side.run.dump.name,
        debug_buffer=side.run.buffer.name if side.run.buffer else "",
        reference=AOT,
        threshold_db=threshold_db,
        emulated=side.logs.emulated,
        logged_outputs=side.logs.logged_outputs,
        problems=list(side.logs.problems)
        + ([side.run.buffer_problem] if side.run.buffer_problem else []),
    )
    # The Inspector compares the method its ETRecord maps (`forward`), its first run.
    method = next((m for m in side.program.methods if side.runs(m.name)), None)
    if method is None:
        result.problems.append("no method's values were placed: nothing to compare")
        return result
    runs = side.runs(method.name)
    m = MethodNumerics(method.name, AOT, threshold_db, 0, len(runs), emulated=runs[0].emulated)
    outputs = side.outputs(method, runs[0])
    used: set[tuple[int, int]] = set()
    for i in range(len(frame)):
        row = frame.iloc[i]
        aot = _array(row["aot_intermediate_output"])
        o, found = _match(side, method, runs[0], outputs, row)
        made: NumericRow | str
        if o is None or isinstance(found, str):
            made = str(found)
        elif aot is None:
            made = "the AOT output is not one tensor"
        else:
            made = _row(side, method, runs[0], o, row, aot, found)
        if isinstance(made, NumericRow):
            m.rows.append(made)
            used.add((o.instruction, o.logged.position) if o else (-1, -1))
        else:
            m.problems.append(f"the Inspector's row {i} ({', '.join(row['runtime_ops'])}): {made}")
    for o in outputs:
        if (o.instruction, o.logged.position) not in used:
            m.unjoined.append(
                Unjoined(
                    o.runtime_ops,
                    (o.instruction,),
                    o.layer.layer,
                    o.partition,
                    o.logged.position,
                    "the Inspector pairs no AOT output with it (its debug handles are another "
                    "instruction's, or none)",
                )
            )
    summarise(m)
    result.methods[method.name] = m
    return result
