"""`pte-adapter vela PROGRAM [--json]`: Vela's own estimate per Ethos-U partition next to ours (Vela
run on the matched sidecar `.tosa`; needs the `vela` extra)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pte_adapter.cli.usage import EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "vela",
        help="Vela's own estimate per Ethos-U partition next to ours "
        "(runs Vela on the matched sidecar .tosa)",
    )
    p.add_argument("model")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per Vela run")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api import load
    from pte_adapter.delegates.registry import compiler_checks
    from pte_adapter.render.summary_text import vela_text

    rows = compiler_checks(load(args.model), args.timeout)
    print(json.dumps(rows, indent=2) if args.json else vela_text(rows))
    return EXIT_OK
