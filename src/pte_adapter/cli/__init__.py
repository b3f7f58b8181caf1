"""`pte-adapter` commands. Thin: parse arguments, call the API, print.

Exit codes: 0 ok; 1 a `check` limit was exceeded, `diff --fail-on-regression` found a regression,
or `fit` found that the program does not fit;
2 bad command line (including `check` with no limit or an unknown `--method`, and an `export -o`
that cannot be written); 3 the file is missing, unreadable or not a valid `.pte` (one line on
stderr says what and where); 4 internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pte_adapter.cli.fit import FitUsageError
from pte_adapter.cli.inert import inert_output
from pte_adapter.cli.report import ReportUsageError, write_output
from pte_adapter.errors import PteFormatError

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_BAD_FILE = 3
EXIT_INTERNAL = 4

ETRECORD_HELP = (
    "the program's ETRecord (default: the one beside it: <stem>.etrecord, <stem>_etrecord.bin "
    "or etrecord.bin); its layers are shown only if it belongs to the program"
)


class UsageError(Exception):
    """A mistake on the command line found after parsing (exit 2)."""


def _cmd_export(args: argparse.Namespace) -> int:
    from pte_adapter.api import analyse, load, open_analysis
    from pte_adapter.backends import for_file
    from pte_adapter.cli.profile import time_scale_of
    from pte_adapter.render.model_explorer import build_graphs, graphs_to_json
    from pte_adapter.render.payload_file import payload_file_graphs
    from pte_adapter.render.plan.program import program_plan

    out = Path(args.output)
    if out.is_dir():
        raise UsageError(f"-o {out}: is a directory; give a file name, e.g. {out / 'graph.json'}")
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: the folder {out.parent} does not exist")
    backend = for_file(Path(args.model).suffix)
    if backend is not None:  # a bare payload file (.tosa): its graphs, nothing to overlay
        graphs, result, plan = payload_file_graphs(Path(args.model), backend), None, None
    else:
        if getattr(args, "vela", False):
            from pte_adapter.delegates.ethosu.vela_oracle import compare_with_vela

            program = load(args.model)
            compare_with_vela(program, args.timeout)
            result = analyse(program)
        else:
            try:
                scale = time_scale_of(args)
            except ValueError as e:
                raise UsageError(str(e)) from e
            result = open_analysis(args.model, time_scale=scale)
        plan = program_plan(result)
        graphs = build_graphs(plan.graphs)
    data = graphs_to_json(graphs, Path(args.model).name)
    write_output(out, json.dumps(data, ensure_ascii=False), UsageError)
    n = len(data["graphs"])
    print(f"wrote {out} ({n} graph{'' if n == 1 else 's'})")
    if getattr(args, "npu_overlay", None):
        from model_explorer.node_data_builder import ModelNodeData

        from pte_adapter.render.npu_overlay import npu_overlay

        overlay = npu_overlay(result, plan) if result and plan else ModelNodeData(graphsData={})
        Path(args.npu_overlay).write_text(overlay.to_json_string(indent=1))
        print(f"wrote {args.npu_overlay} ({len(overlay.graphsData)} graphs with NPU estimates)")
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    from pte_adapter.api import open_analysis
    from pte_adapter.render.summary_json import summary_json
    from pte_adapter.render.summary_text import json_report, text_report

    result = open_analysis(args.model, etrecord=args.etrecord, profile=False)
    print(json_report(summary_json(result)) if args.json else text_report(result))
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.check import NO_LIMIT, CheckUsageError, Limits, run_check
    from pte_adapter.analysis.what_if import fixable_islands
    from pte_adapter.api import open_analysis
    from pte_adapter.render.check_report import failure_lines, notes, report_lines

    limits = Limits(
        args.max_partitions,
        args.min_partitions,
        args.max_cpu_ops,
        args.max_cpu_islands,
        args.backend,
        args.method,
        args.max_fixable_islands,
    )
    if not limits.any_limit():  # before reading the file: the command line alone is wrong
        raise UsageError(NO_LIMIT)
    result = open_analysis(args.model, etrecord=args.etrecord, profile=False)
    try:
        fixable = {
            m.name: fixable_islands(m.what_if, [p.name for p in m.partitions.partitions])
            for m in result.methods
        }
        checked = run_check([m.summary for m in result.methods], limits, fixable)
    except CheckUsageError as e:
        raise UsageError(str(e)) from e
    for line in notes(checked):
        print(f"note: {line}", file=sys.stderr)
    for line in failure_lines(checked):
        print(line, file=sys.stderr)
    if not checked.ok:
        return EXIT_CHECK_FAILED
    for line in report_lines(checked):
        print(line)
    print("OK")
    return EXIT_OK


def _cmd_vela(args: argparse.Namespace) -> int:
    from pte_adapter.api import load
    from pte_adapter.delegates.ethosu.vela_oracle import compare_with_vela
    from pte_adapter.render.summary_text import vela_text

    rows = compare_with_vela(load(args.model), args.timeout)
    print(json.dumps(rows, indent=2) if args.json else vela_text(rows))
    return EXIT_OK


def _version() -> str:
    from pte_adapter import __version__

    return __version__


def _cmd_size(args: argparse.Namespace) -> int:
    from pte_adapter.api import open_analysis
    from pte_adapter.render.size_report import json_size_report, text_size_report

    report = open_analysis(args.model, profile=False).size()
    print(json_size_report(report) if args.json else text_size_report(report))
    return EXIT_OK


def _cmd_diff(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.diff import diff_programs
    from pte_adapter.api import open_analysis
    from pte_adapter.render.diff_report import json_diff_report, regression_text, text_diff_report

    diff = diff_programs(
        open_analysis(args.before, profile=False), open_analysis(args.after, profile=False)
    )
    print(json_diff_report(diff) if args.json else text_diff_report(diff))
    if args.fail_on_regression and diff.regressions:
        for r in diff.regressions:
            print(f"REGRESSION {regression_text(r)}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _export_parser(sub: Any) -> None:
    from pte_adapter.cli.profile import add_time_scale_args

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
    p.set_defaults(func=_cmd_export)


def _check_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="exit 1 when the partitioning exceeds limits (a CI gate)")
    p.add_argument("model")
    p.add_argument("--max-partitions", type=int, help="most delegate partitions allowed")
    p.add_argument("--min-partitions", type=int, help="fewest delegate partitions required")
    p.add_argument("--backend", help="count only this backend's partitions, e.g. EthosUBackend")
    p.add_argument("--max-cpu-ops", type=int, help="most CPU compute kernel calls allowed")
    p.add_argument("--max-cpu-islands", type=int, help="most CPU islands allowed")
    p.add_argument(
        "--max-fixable-islands",
        type=int,
        help="most CPU islands allowed that an export setting alone would fix (quantize the "
        "layer, or drop the partitioner check that refused it)",
    )
    p.add_argument("--method", help="check only this method (default: all)")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.set_defaults(func=_cmd_check)


def _summary_parser(sub: Any) -> None:
    p = sub.add_parser("summary", help="per-method partition table")
    p.add_argument("model")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.set_defaults(func=_cmd_summary)


def _vela_parser(sub: Any) -> None:
    p = sub.add_parser(
        "vela",
        help="Vela's own estimate per Ethos-U partition next to ours "
        "(runs Vela on the matched sidecar .tosa)",
    )
    p.add_argument("model")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per Vela run")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=_cmd_vela)


def _report_parser(sub: Any) -> None:
    from pte_adapter.cli.report import add_parser

    add_parser(sub, ETRECORD_HELP)


def _size_parser(sub: Any) -> None:
    p = sub.add_parser("size", help="where the bytes of the file go (adds up to the file size)")
    p.add_argument("model")
    p.add_argument("--json", action="store_true", help="every part as JSON")
    p.set_defaults(func=_cmd_size)


def _diff_parser(sub: Any) -> None:
    p = sub.add_parser("diff", help="what changed between two exports, per method")
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when partitions, CPU islands, CPU compute calls or crossing bytes grew",
    )
    p.set_defaults(func=_cmd_diff)


def build_parser() -> argparse.ArgumentParser:
    from pte_adapter.cli.fit import add_parser as add_fit_parser
    from pte_adapter.cli.profile import add_parser as add_profile_parser

    parser = argparse.ArgumentParser(
        prog="pte-adapter",
        description="Inspect ExecuTorch .pte programs: partitions, delegates, Model Explorer graphs.",
    )
    parser.add_argument("--version", action="version", version=f"pte-adapter {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (  # the order of the commands in --help
        _export_parser,
        _summary_parser,
        _check_parser,
        _vela_parser,
        add_profile_parser,
        _size_parser,
        _diff_parser,
        _report_parser,
        add_fit_parser,
    ):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; everything it prints goes through `cli/inert.py` (no control character
    from a file reaches the terminal)."""
    with inert_output():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except (UsageError, ReportUsageError, FitUsageError) as e:
        print(f"pte-adapter {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except PteFormatError as e:
        print(f"pte-adapter: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    except Exception as e:
        print(f"pte-adapter: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
