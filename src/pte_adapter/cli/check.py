"""`pte-adapter check PROGRAM --max-partitions N ...`: a CI gate, exit 1 when the partitioning
exceeds a limit (each failure one line on stderr), else the checked numbers and "OK". With
`--max-drift PCT`, the ETDump's latency over the runs is checked too; with `--min-snr DB`, the
numeric gap of a recorded run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pte_adapter.cli.numerics import add_numerics_args, open_with_numerics
from pte_adapter.cli.ops import RUNTIME_BACKENDS_HELP, RUNTIME_OPS_HELP, read_runtime
from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_CHECK_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from pte_adapter.analysis.load_check import LoadCheck
    from pte_adapter.analysis.profile.report_types import DriftJSON
    from pte_adapter.analysis.program_analysis import ProgramAnalysis


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
        "--runtime-ops", metavar="LIST", help=RUNTIME_OPS_HELP + "; fail when it lacks one"
    )
    p.add_argument(
        "--runtime-backends", metavar="A,B", help=RUNTIME_BACKENDS_HELP + "; fail when one lacks"
    )
    p.add_argument(
        "--max-drift",
        type=float,
        metavar="PCT",
        help="most the measured latency may change over the runs, in percent either way (from "
        "the ETDump: the typical latency of the last runs against the first, warm-up left out); "
        "fails when it cannot be measured",
    )
    p.add_argument("--method", help="check only this method (default: all)")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.add_argument(
        "--min-snr",
        type=float,
        metavar="DB",
        help="fail when any compared runtime output's SNR is below DB (the numeric gap: needs "
        "--reference OTHER.pte or --aot, and the run's debug buffer)",
    )
    add_numerics_args(p)
    p.set_defaults(func=run)


def _snr_gate(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(failure lines, report lines) of `--min-snr`: the numeric gap as `numerics` computes it."""
    from pte_adapter.render.numerics_text import snr_check_lines

    if not args.reference and not args.aot:
        raise UsageError("--min-snr compares a run with --reference OTHER.pte or --aot")
    result = open_with_numerics(args, threshold=args.min_snr)
    if result.numerics is None:
        error = result.numerics_error
        raise error if error is not None else UsageError("no numerics")  # pragma: no cover
    methods = [m.numerics for m in result.methods if m.numerics is not None]
    if args.method is not None:
        methods = [m for m in methods if m.method == args.method]
    return snr_check_lines(methods, args.min_snr)


def _drift(args: argparse.Namespace, result: ProgramAnalysis) -> dict[str, DriftJSON]:
    """Each method's drift, from the ETDump `--max-drift` reads (beside the program or given)."""
    from pte_adapter.api.sidefiles import no_etdump

    if result.profile_error is not None:
        raise result.profile_error
    if result.profile_summary is None:
        raise no_etdump(Path(args.model))
    return {m["name"]: m["drift"] for m in result.profile_summary["methods"]}


def _loads(
    args: argparse.Namespace, result: ProgramAnalysis, runtime: Any, backends: list[str] | None
) -> LoadCheck:
    """The program's needs (one method's with `--method`) against the runtime given."""
    from pte_adapter.analysis.load_check import check_load

    checked = result.method(args.method) if args.method else None
    return check_load(checked.needs if checked is not None else result.needs, runtime, backends)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.check import NO_LIMIT, CheckUsageError, Limits, run_check
    from pte_adapter.analysis.what_if import fixable_islands
    from pte_adapter.api import open_analysis
    from pte_adapter.render.check_report import failure_lines, notes, report_lines
    from pte_adapter.render.load_report import load_failure_lines, load_ok_line

    limits = Limits(
        args.max_partitions,
        args.min_partitions,
        args.max_cpu_ops,
        args.max_cpu_islands,
        args.backend,
        args.method,
        args.max_fixable_islands,
        runtime=args.runtime_ops is not None or args.runtime_backends is not None,
        max_drift=args.max_drift,
    )
    if not limits.any_limit() and args.min_snr is None:  # the command line alone is wrong
        raise UsageError(NO_LIMIT + " (or --min-snr DB)")
    if args.etdump is not None and args.max_drift is None and args.min_snr is None:
        raise UsageError("--etdump is read for --max-drift or --min-snr only: give one of them")
    if args.max_drift is not None and not args.max_drift >= 0:
        raise UsageError("--max-drift is a percentage: 0 or more")
    runtime, backends = read_runtime(args)
    snr_failed, snr_report = _snr_gate(args) if args.min_snr is not None else ([], [])
    if not limits.any_limit():
        for line in snr_failed:
            print(line, file=sys.stderr)
        if snr_failed:
            return EXIT_CHECK_FAILED
        print("\n".join([*snr_report, "OK"]))
        return EXIT_OK
    drifting = args.max_drift is not None
    result = open_analysis(args.model, etrecord=args.etrecord, etdump=args.etdump, profile=drifting)
    drift = _drift(args, result) if drifting else {}
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
    for line in [*failure_lines(checked), *snr_failed]:
        print(line, file=sys.stderr)
    loads = _loads(args, result, runtime, backends) if limits.runtime else None
    for line in load_failure_lines(loads) if loads is not None else []:
        print(line, file=sys.stderr)
    if not checked.ok or snr_failed or (loads is not None and not loads.ok):
        return EXIT_CHECK_FAILED
    for line in [*report_lines(checked), *snr_report]:
        print(line)
    if loads is not None:
        print(load_ok_line(loads))
    print("OK")
    return EXIT_OK
