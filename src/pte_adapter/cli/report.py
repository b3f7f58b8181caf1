"""`pte-adapter report PROGRAM [AFTER] [-o report.html]`: one self-contained HTML file to attach to
a pull request or keep as a CI artifact (the partition strip, the numbers, the reasons, the NPU
estimate, the size and the memory picture, and the measured time with an ETDump); with two
programs, the comparison.

Registered by cli/__init__.py."""

from __future__ import annotations

import argparse
import errno
import os
import stat
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


_WRITE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def write_output(out: Path, text: str, error: type[Exception]) -> None:
    """Write `text` to `out`, a new or a regular file: never through a symlink (the default
    `report.html` of a folder someone else made may point anywhere), never into a FIFO or a device
    (opened without blocking, then refused). Raises `error` with one line saying why not."""
    try:
        fd = os.open(out, _WRITE_FLAGS, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.EEXIST and out.is_symlink()):
            raise error(f"-o {out}: is a symlink; not written through it (remove it first)") from e
        raise error(f"-o {out}: cannot write: {e.strerror or e}") from e
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"-o {out}: not a regular file; not written")
        try:
            f.write(text)
        except OSError as e:
            raise error(f"-o {out}: cannot write: {e.strerror or e}") from e


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
    write_output(out, text, ReportUsageError)
    print(f"wrote {out} ({len(text.encode()) / 1024:.0f} KiB)")
    return EXIT_OK
