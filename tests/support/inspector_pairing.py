"""ExecuTorch's Inspector pairing runtime outputs with AOT outputs: the oracle of the sync mapping.

`Inspector.calculate_numeric_gap` pairs each runtime output (an instruction's event, those whose
debug handles overlap merged: `_get_runtime_intermediate_outputs_and_op_names`) with the reference
graph's operator nodes whose debug handles it holds (`get_aot_debug_handle_to_op_name_mapping` of
the graph `_resolve_reference_graph` picks, `find_op_names`). `pairing()` asks the Inspector for
exactly those: per merged runtime handle set, the instructions whose events it merged and the AOT
nodes; the reference graph it resolved; and, for a program run here (`run=True`: ExecuTorch's
Python runtime with an ETDump and a debug buffer), the rows of `calculate_numeric_gap` itself.

A program that cannot run here (Ethos-U, `cortex_m::` kernels) gets an ETDump written with
ExecuTorch's own schema, one event per instruction named as the runtime names them
(`inspector_join.write_instruction_etdump`): the grouping needs only the events' instructions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pte_adapter.program.model import Program
from tests.support.inspector_join import write_instruction_etdump

DEBUG_BUFFER_BYTES = 64 << 20


@dataclass
class Group:
    handles: frozenset[int]
    instructions: list[int]  # chain positions (= method-level indices in chain 0)
    aot_ops: list[str]


@dataclass
class Pairing:
    reference: str  # the graph the Inspector resolved ("exported_program", ...)
    groups: list[Group]
    rows: list[tuple[list[str], list[str]]] = field(default_factory=list)  # (aot_ops, runtime_ops)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)


def _inputs(method: Any) -> tuple[Any, ...]:
    import torch

    meta = method.metadata
    gen = torch.Generator().manual_seed(0)
    out = []
    for i in range(meta.num_inputs()):
        info = meta.input_tensor_meta(i)
        sizes = tuple(info.sizes())
        if int(info.dtype()) in (3, 4):  # Int, Long: token ids
            out.append(torch.randint(0, 8, sizes, generator=gen))
        else:
            out.append(torch.rand(sizes, generator=gen))
    return tuple(out)


def _run(pte: Path, workdir: Path) -> tuple[Path, Path, tuple[Any, ...]]:
    """Run `forward` once with an ETDump and a debug buffer (every instruction's output)."""
    import executorch.kernels.quantized  # noqa: F401  (registers the quantize kernels)
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(
        pte, enable_etdump=True, debug_buffer_size=DEBUG_BUFFER_BYTES
    )
    method = program.load_method("forward")
    inputs = _inputs(method)
    method.execute(list(inputs))
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        program.write_etdump_result_to_file("run.etdp", "run.bin")
    finally:
        os.chdir(cwd)
    return workdir / "run.etdp", workdir / "run.bin", inputs


def pairings(
    program: Program,
    pte: Path,
    etrecord: Path,
    workdir: Path,
    references: list[str | None],
    run: bool = False,
) -> dict[str | None, Pairing]:
    """The Inspector's pairing for `forward` (the only method it maps) against each reference
    graph (None: its own choice). With `run`, the program runs here and the numeric gap's rows
    come too (representative inputs: the ETRecord's, else the run's)."""
    from executorch.devtools import Inspector
    from executorch.devtools.etrecord import parse_etrecord
    from executorch.devtools.inspector._inspector_utils import (
        find_op_names,
        get_aot_debug_handle_to_op_name_mapping,
    )

    workdir.mkdir(parents=True, exist_ok=True)
    out: dict[str | None, Pairing] = {}
    with _quiet():
        record = parse_etrecord(str(etrecord))
        if run:
            etdump, buffer, inputs = _run(pte, workdir)
            if record._representative_inputs is None:
                record.update_representative_inputs([inputs])
            inspector = Inspector(
                etdump_path=str(etdump), etrecord=record, debug_buffer_path=str(buffer)
            )
        else:
            etdump = workdir / "instructions.etdp"
            write_instruction_etdump(program, etdump, kernel_events="native_call")
            inspector = Inspector(etdump_path=str(etdump), etrecord=record)
        runtime, _ = inspector._get_runtime_intermediate_outputs_and_op_names()
        events: dict[int, tuple[int, ...]] = {}
        for block in inspector.event_blocks:  # a run's blocks ("Execute"), or one per method
            if block.name not in ("forward", "Execute"):
                continue
            for e in block.events:
                if e.name == "OPERATOR_CALL" or not e.op_types or e._instruction_id is None:
                    continue
                h = e.debug_handles
                events[e._instruction_id] = (h,) if isinstance(h, int) else tuple(h)
        for reference in references:
            module, resolved = inspector._resolve_reference_graph(reference)
            aot = get_aot_debug_handle_to_op_name_mapping(module)
            groups = [
                Group(
                    frozenset(key),
                    sorted(i for i, h in events.items() if set(h) <= set(key)),
                    find_op_names(key, aot),
                )
                for key in runtime
            ]
            rows: list[tuple[list[str], list[str]]] = []
            if run:
                frame = inspector.calculate_numeric_gap("MSE", reference_graph=reference)
                rows = [(list(r["aot_ops"]), list(r["runtime_ops"])) for _, r in frame.iterrows()]
            out[reference] = Pairing(resolved, groups, rows)
    return out
