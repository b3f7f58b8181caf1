"""`pte-adapter check PROGRAM --max-partitions N ...`: a CI gate, exit 1 when the partitioning
exceeds a limit (each failure one line on stderr), else the checked numbers and "OK". With
`--max-drift PCT`, the ETDump's latency over the runs is checked too."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_CHECK_FAILED, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="exit 1 when the partitioning exceeds limits (a CI gate)")
    p.add_argument("model")
    p.add_argument("--max-partitions", type=int, help="most delegate partitions allowed")
    p.add_argument("--min-partitions", type=int, help="fewest delegate partitions required")
    p.add_argument("--backend", help="count only this backend's partitions, e.g. EthosUBackend")
    p.add_argument("--max-cpu-ops", type=int, help="most CPU compute kernel calls allowed")
    p.add_argument("--max-cpu-islands", type=int, help="most CPU islands allowed")
    p.add_argument(
        "--max-fixable-islands",
        type=int,
        help="most CPU islands allowed that an export setting alone would fix (quantize the "
        "layer, or drop the partitioner check that refused it)",
    )
    p.add_argument(
        "--max-drift",
        type=float,
        metavar="PCT",
        help="most the measured latency may change over the runs, in percent either way (from "
        "the ETDump: the typical latency of the last runs against the first, warm-up left out); "
        "fails when it cannot be measured",
    )
    p.add_argument(
        "--etdump",
        help="the ETDump for --max-drift (default: the one beside the program, e.g. <stem>.etdp)",
    )
    p.add_argument("--method", help="check only this method (default: all)")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.check import NO_LIMIT, CheckUsageError, Limits, run_check
    from pte_adapter.analysis.what_if import fixable_islands
    from pte_adapter.api import open_analysis
    from pte_adapter.api.sidefiles import no_etdump
    from pte_adapter.render.check_report import failure_lines, notes, report_lines

    limits = Limits(
        args.max_partitions,
        args.min_partitions,
        args.max_cpu_ops,
        args.max_cpu_islands,
        args.backend,
        args.method,
        args.max_fixable_islands,
        args.max_drift,
    )
    if not limits.any_limit():  # before reading the file: the command line alone is wrong
        raise UsageError(NO_LIMIT)
    if args.etdump is not None and args.max_drift is None:
        raise UsageError("--etdump is read for --max-drift only: give that limit too")
    if args.max_drift is not None and not args.max_drift >= 0:
        raise UsageError("--max-drift is a percentage: 0 or more")
    drifting = args.max_drift is not None
    result = open_analysis(args.model, etrecord=args.etrecord, etdump=args.etdump, profile=drifting)
    drift = {}
    if drifting:
        if result.profile_error is not None:
            raise result.profile_error
        if result.profile_summary is None:
            raise no_etdump(Path(args.model))
        drift = {m["name"]: m["drift"] for m in result.profile_summary["methods"]}
    try:
        fixable = {
            m.name: fixable_islands(m.what_if, [p.name for p in m.partitions.partitions])
            for m in result.methods
        }
        checked = run_check([m.summary for m in result.methods], limits, fixable, drift)
    except CheckUsageError as e:
        raise UsageError(str(e)) from e
    for line in notes(checked):
        print(f"note: {line}", file=sys.stderr)
    for line in failure_lines(checked):
        print(line, file=sys.stderr)
    if not checked.ok:
        return EXIT_CHECK_FAILED
    for line in report_lines(checked):
        print(line)
    print("OK")
    return EXIT_OK
