"""`pte-adapter` commands: `main` parses the command line and runs the command's module.

Every command is a module here with `add_parser(sub)` (its options and help) and `run(args) -> int`
(parse nothing, call the API, print, return the exit code); `usage.py` holds what they share, the
exit codes among it.
"""

from __future__ import annotations

import argparse
import sys

from pte_adapter.cli import check, diff, export, fit, profile, report, size, summary, sync, vela
from pte_adapter.cli.inert import inert_output
from pte_adapter.cli.usage import (
    EXIT_BAD_FILE,
    EXIT_CHECK_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
)
from pte_adapter.errors import PteFormatError

__all__ = ["EXIT_BAD_FILE", "EXIT_CHECK_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "main"]

# The commands, in the order of --help.
COMMANDS = (export, summary, check, vela, profile, size, diff, report, fit, sync)


def _version() -> str:
    from pte_adapter import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pte-adapter",
        description="Inspect ExecuTorch .pte programs: partitions, delegates, Model Explorer graphs.",
    )
    parser.add_argument("--version", action="version", version=f"pte-adapter {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
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
    except UsageError as e:
        print(f"pte-adapter {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except PteFormatError as e:
        print(f"pte-adapter: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    except Exception as e:
        print(f"pte-adapter: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
