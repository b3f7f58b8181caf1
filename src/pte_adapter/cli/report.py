"""`pte-adapter report PROGRAM [AFTER] [-o report.html]`: one self-contained HTML file to attach to
a pull request or keep as a CI artifact (the partition strip, the numbers, the reasons, the NPU
estimate, the size and the memory picture, and the measured time with an ETDump); with two
programs, the comparison."""

from __future__ import annotations

import argparse
from typing import Any

from pte_adapter.cli.numerics import add_numerics_args, numerics_options, wants_numerics
from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_OK, UsageError, output_path, write_output
from pte_adapter.wording import bytes_short

DEFAULT_OUTPUT = "report.html"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (no server, no network); two programs: a comparison",
    )
    p.add_argument("model", help="the .pte (the 'before' one with two)")
    p.add_argument("after", nargs="?", help="a second .pte: compare the two")
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT, help=f"default: {DEFAULT_OUTPUT}")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.add_argument("--etdump", help="the ETDump (default: <stem>.etdp beside the .pte)")
    add_numerics_args(p, etdump=False)  # the numeric gap: SNR above the strip, its table
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import AotUnavailable, report

    out = output_path(args.output, DEFAULT_OUTPUT)
    numerics = numerics_options(args) if wants_numerics(args) else None
    try:
        rep = report(
            args.model, args.after, etrecord=args.etrecord, etdump=args.etdump, numerics=numerics
        )
    except AotUnavailable as e:
        raise UsageError(str(e)) from e
    text = rep.html
    write_output(out, text)
    print(f"wrote {out} ({bytes_short(len(text.encode()))})")
    return EXIT_OK
