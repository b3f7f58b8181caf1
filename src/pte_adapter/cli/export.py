"""`pte-adapter export PROGRAM -o graph.json [--vela] [--npu-overlay JSON]`: the Model Explorer
graphs as the adapter makes them (`explorer/convert.py`), as JSON for Model Explorer's built-in
loader; a bare payload file (`.tosa`) gives its graphs."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pte_adapter.cli.numerics import add_numerics_args, numerics_options, wants_numerics
from pte_adapter.cli.profile import add_time_scale_args, time_scale_of
from pte_adapter.cli.usage import EXIT_OK, UsageError, output_path, write_output

if TYPE_CHECKING:
    from pte_adapter.analysis.program_analysis import ProgramAnalysis


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="write the Model Explorer graph JSON")
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True, help="output .json path")
    p.add_argument(
        "--vela",
        action="store_true",
        help="run Vela on matched sidecar .tosa files; its per-layer estimate goes on "
        "the TOSA source graphs",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per Vela run")
    p.add_argument(
        "--npu-overlay",
        metavar="JSON",
        help="also write a node-data file colouring NPU operations by estimated cycles",
    )
    add_time_scale_args(p)  # for the ETDump beside the model, whose times go on the graph
    add_numerics_args(p)  # the numeric gap on the graph: nodes, partitions, the accuracy line
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.explorer.convert import convert
    from pte_adapter.explorer.served import served
    from pte_adapter.render.model_explorer import graphs_to_json

    out = output_path(args.output, "graph.json")
    overlay_out = (
        output_path(args.npu_overlay, "npu-overlay.json", "--npu-overlay")
        if args.npu_overlay
        else None
    )
    model = Path(args.model)
    made = convert(model, _with_vela(args.timeout) if args.vela else _with_etdump(args))
    # The same JSON, each shared object's dict made once (as the server's: explorer/served.py).
    data = graphs_to_json(served(made.graphs), model.name)
    write_output(out, json.dumps(data, ensure_ascii=False))
    n = len(data["graphs"])
    print(f"wrote {out} ({n} graph{'' if n == 1 else 's'})")
    if overlay_out is not None:
        from model_explorer.node_data_builder import ModelNodeData

        from pte_adapter.render.npu_overlay import npu_overlay

        overlay = (
            npu_overlay(made.analysis, made.plan)
            if made.analysis and made.plan
            else ModelNodeData(graphsData={})
        )
        write_output(overlay_out, overlay.to_json_string(indent=1), "--npu-overlay")
        print(f"wrote {overlay_out} ({len(overlay.graphsData)} graphs with NPU estimates)")
    return EXIT_OK


def _with_etdump(args: argparse.Namespace) -> Callable[[Path], ProgramAnalysis]:
    """How the adapter opens a program, in the time scale the command line gives."""

    def open_program(path: Path) -> ProgramAnalysis:
        from pte_adapter.api import AotUnavailable, open_analysis

        try:
            scale = time_scale_of(args)
        except ValueError as e:
            raise UsageError(str(e)) from e
        numerics = numerics_options(args) if wants_numerics(args) else None
        try:
            return open_analysis(path, etdump=args.etdump, time_scale=scale, numerics=numerics)
        except AotUnavailable as e:
            raise UsageError(str(e)) from e

    return open_program


def _with_vela(timeout: float) -> Callable[[Path], ProgramAnalysis]:
    """The program with Vela's own per-layer estimate on its TOSA source graphs (no ETDump)."""

    def open_program(path: Path) -> ProgramAnalysis:
        from pte_adapter.api import analyse, load
        from pte_adapter.delegates.registry import compiler_checks

        program = load(path)
        compiler_checks(program, timeout)
        return analyse(program)

    return open_program
