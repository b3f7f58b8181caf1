"""`pte-adapter fit PROGRAM [--board NAME] [--sram SIZE] [--dram SIZE] [--flash SIZE] [--json]`:
the deployment memory map and the runner's pool sizes; with a board or sizes, a gate (exit 1
naming what overflows which memory and by how much, 0 when it fits, 2 on a usage error)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pte_adapter.cli.usage import EXIT_CHECK_FAILED, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    from pte_adapter.analysis.boards import BOARDS

    p = sub.add_parser(
        "fit",
        help="will it fit on the board: the memory map, the runner's pool sizes, a gate",
    )
    p.add_argument("model", help="the .pte (or .bpte)")
    p.add_argument("--board", help=f"a board preset: {', '.join(sorted(BOARDS))}")
    for region in ("sram", "dram", "flash"):
        p.add_argument(
            f"--{region}",
            metavar="SIZE",
            help=f"{region.upper() if region != 'flash' else 'flash'} size (64KiB, 2MiB, 1.5MB, "
            "bytes); overrides the board's",
        )
    p.add_argument("--json", action="store_true", help="every size an integer number of bytes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.boards import BOARD_REGION_NAMES, board_for, fit, parse_size
    from pte_adapter.api import open_analysis
    from pte_adapter.render.fit_report import fit_json, fit_skipped_json, fit_text

    try:  # before reading the file: the command line alone is wrong
        sizes = {
            r: parse_size(v) if v is not None else None
            for r, v in (("sram", args.sram), ("dram", args.dram), ("flash", args.flash))
        }
        board = board_for(args.board, sizes)
    except ValueError as e:
        raise UsageError(str(e)) from e
    result = open_analysis(args.model, profile=False)
    # A phone or desktop program has no map of its own: one is made only for a board or sizes.
    dmap = result.deployment or (result.deployment_under(board.runner) if board else None)
    if dmap is None:
        why = result.deployment_skipped
        print(json.dumps(fit_skipped_json(why), indent=1) if args.json else why)
        return EXIT_OK
    checked = fit(dmap, board) if board is not None else None
    if args.json:
        print(json.dumps(fit_json(dmap, checked), indent=1))
    else:
        print("\n".join(fit_text(dmap, checked)))
    if checked is None:
        return EXIT_OK
    for line in checked.overflows():
        print(f"does not fit: {line}", file=sys.stderr)
    if not checked.ok:
        return EXIT_CHECK_FAILED
    near = [r for r in checked.regions if r.used + r.estimated > r.capacity]
    for r in near:
        print(
            f"note: {BOARD_REGION_NAMES[r.region]} fits only without the estimated "
            f"{r.estimated} bytes of runtime "
            "bookkeeping",
            file=sys.stderr,
        )
    if not args.json:
        print("OK: fits")
    return EXIT_OK
