"""`pte-adapter profile model.pte [model.etdp]`: measured time per partition and per run.

The time-scale options are shared with `export` (`add_time_scale_args`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pte_adapter.analysis.profile.time_scale import TimeScale

from pte_adapter.cli.usage import EXIT_OK, UsageError, output_path, write_output

TIME_SCALES = ("ns", "us", "ms", "cycles")


def add_time_scale_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--time-scale",
        choices=TIME_SCALES,
        help="what one ETDump tick is (default: what the ETDump's name says, e.g. "
        "model.cycles.etdp or etdump.150MHz.bin, else ns as the host runtime counts)",
    )
    p.add_argument(
        "--clock-mhz",
        type=float,
        help="the CPU clock of an ETDump in cycles: times are then also shown as time "
        "(implies --time-scale cycles)",
    )
    p.add_argument(
        "--tick-ns",
        type=float,
        help="nanoseconds per ETDump tick (older form of --time-scale ns)",
    )


def time_scale_of(args: argparse.Namespace) -> TimeScale | None:
    """The time scale the command line gives; None when it gives none. Raises ValueError with
    the message for the user when the options contradict each other."""
    from pte_adapter.analysis.profile.time_scale import TimeScale, from_tick_ns

    if args.tick_ns is not None:
        if not args.tick_ns > 0:
            raise ValueError("--tick-ns must be a positive number")
        if args.time_scale is not None or args.clock_mhz is not None:
            raise ValueError(
                "--tick-ns is the tick length in ns: give it or --time-scale, not both"
            )
        return from_tick_ns(args.tick_ns)
    unit = args.time_scale or ("cycles" if args.clock_mhz is not None else None)
    if unit is None:
        return None
    return TimeScale(unit, clock_mhz=args.clock_mhz)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="measured time from an ETDump: per partition, top CPU operators, latency per run",
    )
    p.add_argument("model")
    p.add_argument(
        "etdump",
        nargs="?",
        help="the ETDump (default: the one beside the model: <stem>.etdp, <stem>.etdump or "
        "etdump.bin)",
    )
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
    add_time_scale_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import open_analysis
    from pte_adapter.api.sidefiles import no_etdump
    from pte_adapter.render.profile_report import json_profile, text_profile

    try:
        scale = time_scale_of(args)
    except ValueError as e:
        raise UsageError(str(e)) from e
    node_data = (
        output_path(args.node_data, "node-data.json", "--node-data") if args.node_data else None
    )
    result = open_analysis(args.model, etdump=args.etdump, time_scale=scale)
    if result.profile_error is not None:
        raise result.profile_error
    summary = result.profile_summary
    if summary is None:
        raise no_etdump(Path(args.model))
    print(json_profile(summary) if args.json else text_profile(summary))
    if node_data is not None:
        from pte_adapter.render.node_data import node_data_json
        from pte_adapter.render.plan.program import program_plan

        write_output(node_data, node_data_json(result, program_plan(result)), "--node-data")
        if not args.json:
            print(f"wrote {node_data}")
    if args.plot:
        from pte_adapter.render.profile_plot import PlotUnavailableError, plot_latency

        try:
            plot_latency(summary, Path(args.plot))
        except PlotUnavailableError as e:
            raise UsageError(str(e)) from e
        if not args.json:
            print(f"wrote {args.plot}")
    return EXIT_OK
