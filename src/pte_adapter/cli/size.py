"""`pte-adapter size PROGRAM [--json]`: where the bytes of the file go, adding up to its size."""

from __future__ import annotations

import argparse
from typing import Any

from pte_adapter.cli.usage import EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser("size", help="where the bytes of the file go (adds up to the file size)")
    p.add_argument("model")
    p.add_argument("--json", action="store_true", help="every part as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import open_analysis
    from pte_adapter.render.size_report import json_size_report, text_size_report

    report = open_analysis(args.model, profile=False).size()
    print(json_size_report(report) if args.json else text_size_report(report))
    return EXIT_OK
