"""`pte-adapter report PROGRAM [AFTER] [-o report.html]`: one self-contained HTML file to attach to
a pull request or keep as a CI artifact (the partition strip, the numbers, the reasons, the NPU
estimate, the size and the memory picture, and the measured time with an ETDump); with two
programs, the comparison.

Registered by cli/__init__.py."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_OK = 0
DEFAULT_OUTPUT = "report.html"


class ReportUsageError(Exception):
    """A mistake on the command line found after parsing (exit 2)."""


def add_parser(sub: Any, etrecord_help: str) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (no server, no network); two programs: a comparison",
    )
    p.add_argument("model", help="the .pte (the 'before' one with two)")
    p.add_argument("after", nargs="?", help="a second .pte: compare the two")
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT, help=f"default: {DEFAULT_OUTPUT}")
    p.add_argument("--etrecord", help=etrecord_help)
    p.add_argument("--etdump", help="the ETDump (default: <stem>.etdp beside the .pte)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import report

    out = Path(args.output)
    if out.is_dir():
        raise ReportUsageError(
            f"-o {out}: is a directory; give a file name, e.g. {out / DEFAULT_OUTPUT}"
        )
    if not out.parent.is_dir():
        raise ReportUsageError(f"-o {out}: the folder {out.parent} does not exist")
    rep = report(args.model, args.after, etrecord=args.etrecord, etdump=args.etdump)
    text = rep.html
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ReportUsageError(f"-o {out}: cannot write: {e.strerror or e}") from e
    print(f"wrote {out} ({len(text.encode()) / 1024:.0f} KiB)")
    return EXIT_OK
