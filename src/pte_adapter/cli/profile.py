"""`pte-adapter profile model.pte [model.etdp]`: measured time per partition and per run.

Registered by cli/__init__.py; kept apart so that the command's options and output live in one
place."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_USAGE = 2


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="measured time from an ETDump: per partition, top CPU operators, latency per run",
    )
    p.add_argument("model")
    p.add_argument("etdump", nargs="?", help="the .etdp (default: the model's name with .etdp)")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument(
        "--plot",
        metavar="IMAGE",
        help="draw latency per run and its distribution "
        "(.png/.svg; needs the 'plot' extra: matplotlib)",
    )
    p.add_argument(
        "--node-data",
        metavar="JSON",
        help="write Model Explorer node data (the colour "
        "overlay; load it with 'Add per-node data' or --node_data_paths)",
    )
    p.add_argument(
        "--tick-ns",
        type=float,
        default=1.0,
        help="nanoseconds per ETDump tick (default 1: the host runtime counts ns)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import analyse, etdump_beside, load, read_etdump_beside
    from pte_adapter.render.profile_report import json_profile, text_profile

    if not args.tick_ns > 0:
        print("pte-adapter: --tick-ns must be a positive number")
        return EXIT_USAGE
    program = load(args.model)
    dump = read_etdump_beside(args.model, args.etdump or etdump_beside(args.model))
    result = analyse(program, dump, tick_ns=args.tick_ns)
    if result.profile_error is not None:
        raise result.profile_error
    summary = result.profile_summary
    assert summary is not None  # an ETDump was given and placed
    print(json_profile(summary) if args.json else text_profile(summary))
    if args.node_data:
        from pte_adapter.render.node_data import node_data_json
        from pte_adapter.render.plan.program import program_plan

        Path(args.node_data).write_text(node_data_json(result, program_plan(result)))
        if not args.json:
            print(f"wrote {args.node_data}")
    if args.plot:
        from pte_adapter.render.profile_plot import PlotUnavailableError, plot_latency

        try:
            plot_latency(summary, Path(args.plot))
        except PlotUnavailableError as e:
            print(f"pte-adapter: {e}")
            return EXIT_USAGE
        if not args.json:
            print(f"wrote {args.plot}")
    return EXIT_OK
