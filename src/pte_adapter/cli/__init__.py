"""`pte-adapter` commands: `main` parses the command line and runs the command's module.

Every command is a module here with `add_parser(sub)` (its options and help) and `run(args) -> int`
(parse nothing, call the API, print, return the exit code); `usage.py` holds what they share, the
exit codes among it.
"""

from __future__ import annotations

import argparse
import os
import sys

from pte_adapter.cli import (
    check,
    diff,
    export,
    fit,
    numerics,
    ops,
    profile,
    report,
    size,
    summary,
    vela,
)
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
COMMANDS = (export, summary, check, vela, profile, numerics, size, diff, report, fit, ops)


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
    try:
        with inert_output():
            code = _main(argv)
            sys.stdout.flush()  # a closed pipe is found here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (`pte-adapter summary --json x | head`): nothing is left to say
        # to it. Point stdout at /dev/null so the interpreter's own last flush cannot fail again.
        _stdout_to_devnull()
        return EXIT_OK


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # a stream without a descriptor (a caller's StringIO): nothing to flush at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


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
    except BrokenPipeError:
        raise  # not the command's fault: main() ends quietly
    except Exception as e:
        print(f"pte-adapter: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
