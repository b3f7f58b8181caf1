"""`pte-adapter diff BEFORE AFTER [--json] [--fail-on-regression]`: what changed between two
exports, per method; with `--fail-on-regression`, exit 1 and one stderr line per regression. With
an ETDump beside each program (or `--before-etdump`/`--after-etdump`), also what the change
saved, measured, next to what the what-if predicted (analysis/measured_diff.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pte_adapter.cli.usage import EXIT_CHECK_FAILED, EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser("diff", help="what changed between two exports, per method")
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument(
        "--before-etdump",
        help="the first program's ETDump (default: the one beside it, e.g. <stem>.etdp): with "
        "an ETDump for each program, what the change saved, measured",
    )
    p.add_argument("--after-etdump", help="the second program's ETDump (default: beside it)")
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when partitions, CPU islands, CPU compute calls or crossing bytes grew",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.diff import diff_programs
    from pte_adapter.api import open_analysis
    from pte_adapter.render.diff_report import json_diff_report, regression_text, text_diff_report

    diff = diff_programs(
        open_analysis(args.before, etdump=args.before_etdump),
        open_analysis(args.after, etdump=args.after_etdump),
    )
    print(json_diff_report(diff) if args.json else text_diff_report(diff))
    if args.fail_on_regression and diff.regressions:
        for r in diff.regressions:
            print(f"REGRESSION {regression_text(r)}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK
