"""`pte-adapter summary PROGRAM [--json] [--etrecord FILE]`: the per-method partition table, or
the stable JSON of docs/json.md."""

from __future__ import annotations

import argparse
from typing import Any

from pte_adapter.cli.numerics import add_numerics_args, open_with_numerics, wants_numerics
from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser("summary", help="per-method partition table")
    p.add_argument("model")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    add_numerics_args(p)  # the numeric gap, one line per method (docs/numerics.md)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import open_analysis
    from pte_adapter.render.summary_json import summary_json
    from pte_adapter.render.summary_text import json_report, text_report

    if wants_numerics(args):
        result = open_with_numerics(args)
    else:
        result = open_analysis(args.model, etrecord=args.etrecord, profile=False)
    print(json_report(summary_json(result)) if args.json else text_report(result))
    return EXIT_OK
