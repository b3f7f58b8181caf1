"""`pte-adapter numerics PROGRAM [--reference OTHER.pte | --aot] [--json]`: the numeric gap of a
recorded run, a row per runtime output (docs/numerics.md).

The options that say what to compare and which files to read are shared with `summary`, `check`,
`report` and `export` (`add_numerics_args`, `numerics_options`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_BAD_FILE, EXIT_OK, UsageError, write_output

if TYPE_CHECKING:
    from pte_adapter.analysis.program_analysis import ProgramAnalysis
    from pte_adapter.api.numerics import NumericsOptions

METRICS = ("snr", "mse", "l1", "mean_abs", "max_abs", "cosine")


def add_numerics_args(p: argparse.ArgumentParser, etdump: bool = True) -> None:
    """The options of what to compare (`--reference`, `--aot`) and of the files each side reads."""
    g = p.add_argument_group("numeric gap (a run's intermediate outputs: docs/numerics.md)")
    which = g.add_mutually_exclusive_group()
    which.add_argument(
        "--reference",
        metavar="OTHER.pte",
        help="compare with another program's run on the same input (its ETRecord, ETDump and "
        "debug buffer beside it, or given below), joined layer by layer",
    )
    which.add_argument(
        "--aot",
        action="store_true",
        help="compare with the ETRecord's graph run on its representative inputs by "
        "ExecuTorch's Inspector (runs code the ETRecord describes; needs the 'numerics' extra)",
    )
    if etdump:
        g.add_argument(
            "--etdump",
            metavar="PATH",
            help="this program's ETDump (default: beside it: <stem>.etdp, <stem>.etdump, "
            "etdump.bin)",
        )
    g.add_argument(
        "--debug-buffer",
        metavar="PATH",
        help="this program's debug buffer (default: beside its ETDump: <stem>.debug_buffer.bin, "
        "<stem>_debug_output.bin, debug_buffer.bin, debug_output.bin)",
    )
    g.add_argument("--reference-etdump", metavar="PATH", help="the reference program's ETDump")
    g.add_argument(
        "--reference-debug-buffer", metavar="PATH", help="the reference program's debug buffer"
    )
    g.add_argument("--reference-etrecord", metavar="PATH", help="the reference program's ETRecord")
    g.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="DB",
        help="SNR below which a layer is reported as the first to lose accuracy (default 30)",
    )
    g.add_argument(
        "--run",
        type=int,
        default=1,
        metavar="N",
        help="which recorded run of each method to compare (1-based; default the first; --aot "
        "compares what the Inspector pairs, its first run)",
    )


def wants_numerics(args: argparse.Namespace) -> bool:
    """Whether the command line asks for the numeric gap at all."""
    return bool(
        getattr(args, "reference", None)
        or getattr(args, "aot", False)
        or getattr(args, "debug_buffer", None)
    )


def numerics_options(args: argparse.Namespace, threshold: float | None = None) -> NumericsOptions:
    """The API's options from the command line (UsageError for what contradicts itself)."""
    from pte_adapter.analysis.numerics.rows import DEFAULT_THRESHOLD_DB
    from pte_adapter.api.numerics import NumericsOptions

    def path(name: str) -> Path | None:
        value = getattr(args, name, None)
        return Path(value) if value else None

    if not args.reference and (
        args.reference_etdump or args.reference_debug_buffer or args.reference_etrecord
    ):
        raise UsageError("--reference-etdump/-debug-buffer/-etrecord need --reference OTHER.pte")
    if args.run < 1:
        raise UsageError("--run counts from 1")
    limit = args.threshold if args.threshold is not None else threshold
    return NumericsOptions(
        debug_buffer=path("debug_buffer"),
        reference=path("reference"),
        reference_etdump=path("reference_etdump"),
        reference_debug_buffer=path("reference_debug_buffer"),
        reference_etrecord=path("reference_etrecord"),
        aot=bool(args.aot),
        threshold_db=limit if limit is not None else DEFAULT_THRESHOLD_DB,
        run=args.run - 1,
    )


def open_with_numerics(
    args: argparse.Namespace, etdump: str | None = None, threshold: float | None = None
) -> ProgramAnalysis:
    """The program analysed with the numeric gap the command line asks for; `--aot` without
    torch and executorch is a usage error (one line, exit 2)."""
    from pte_adapter.api import AotUnavailable, open_analysis

    options = numerics_options(args, threshold)
    try:
        return open_analysis(
            args.model,
            etrecord=getattr(args, "etrecord", None),
            etdump=etdump or getattr(args, "etdump", None),
            numerics=options,
        )
    except AotUnavailable as e:
        raise UsageError(str(e)) from e


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "numerics",
        help="the numeric gap of a run, per runtime output: vs another program (--reference) or "
        "the ETRecord's graph (--aot)",
    )
    p.add_argument("model")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    add_numerics_args(p)
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument(
        "--all", action="store_true", help="every row's details and every output not joined"
    )
    p.add_argument(
        "--node-data",
        metavar="JSON",
        help="write Model Explorer node data colouring each instruction and partition by "
        "--metric (open it with --node_data_paths)",
    )
    p.add_argument(
        "--metric",
        choices=METRICS,
        default="snr",
        help="what --node-data colours by (default snr, in dB)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from pte_adapter.render.numerics_json import numerics_json
    from pte_adapter.render.numerics_text import numerics_text

    result = open_with_numerics(args)
    if result.numerics is None:
        error = result.numerics_error
        raise error if error is not None else UsageError("no numerics")  # pragma: no cover
    if args.node_data:
        from pte_adapter.render.numerics_overlay import numerics_node_data
        from pte_adapter.render.plan.program import program_plan

        overlay = numerics_node_data(result, program_plan(result), args.metric)
        write_output(Path(args.node_data), json.dumps(overlay, indent=1))
    if args.json:
        print(json.dumps(numerics_json(result), indent=1, ensure_ascii=False))
    else:
        print(numerics_text(result, everything=args.all), end="")
    methods = [m.numerics for m in result.methods if m.numerics is not None]
    if not any(m.rows or m.unjoined for m in methods):
        return EXIT_BAD_FILE  # nothing read: the problems above say why
    return EXIT_OK
