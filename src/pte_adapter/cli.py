"""`pte-adapter` commands. Thin: parse arguments, call the API, print.

Exit codes: 0 ok; 1 a `check` limit was exceeded; 2 bad command line; 3 the file is missing,
unreadable or not a valid `.pte` (one line on stderr says what and where); 4 internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pte_adapter.errors import PteFormatError

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_BAD_FILE = 3
EXIT_INTERNAL = 4

ETRECORD_HELP = ("the program's ETRecord (default: <stem>.etrecord beside the .pte); "
                 "its layers are shown only if it belongs to the program")


def _cmd_export(args: argparse.Namespace) -> int:
    from pte_adapter.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    data = graphs_to_json(convert_path(args.model), Path(args.model).name)
    out = Path(args.output)
    out.write_text(json.dumps(data, ensure_ascii=False))
    print(f"wrote {out} ({len(data['graphs'])} graphs)")
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.summary import summarize
    from pte_adapter.api import load
    from pte_adapter.render.report import json_report, text_report

    summary = summarize(load(args.model, etrecord=args.etrecord))
    print(json_report(summary) if args.json else text_report(summary))
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.summary import summarize
    from pte_adapter.api import load

    summary = summarize(load(args.model, etrecord=args.etrecord))
    for m in summary["methods"]:
        if args.method and m["name"] != args.method:
            continue
        if args.backend:
            count = m["delegate_calls"].get(args.backend, 0)
            label = f"{args.backend} partitions"
        else:
            count = m["delegate_partitions"]
            label = "delegate partitions"
        if args.max_partitions is not None and count > args.max_partitions:
            print(f"FAIL {m['name']}: {count} {label} > {args.max_partitions}", file=sys.stderr)
            _print_why(m)  # the CPU ops that split the delegate's graph
            return EXIT_CHECK_FAILED
        if args.min_partitions is not None and count < args.min_partitions:
            print(f"FAIL {m['name']}: {count} {label} < {args.min_partitions}", file=sys.stderr)
            return EXIT_CHECK_FAILED
        if args.max_cpu_ops is not None and m["cpu_compute_calls"] > args.max_cpu_ops:
            ops = ", ".join(f"{k} ×{n}" for k, n in m["cpu_compute_ops"].items())
            print(f"FAIL {m['name']}: {m['cpu_compute_calls']} CPU compute ops > "
                  f"{args.max_cpu_ops} ({ops})", file=sys.stderr)
            _print_why(m)
            return EXIT_CHECK_FAILED
        if args.max_cpu_islands is not None and m["cpu_islands"] > args.max_cpu_islands:
            print(f"FAIL {m['name']}: {m['cpu_islands']} CPU islands > {args.max_cpu_islands}",
                  file=sys.stderr)
            _print_why(m)
            return EXIT_CHECK_FAILED
    print("OK")
    return EXIT_OK


def _print_why(m: dict[str, Any]) -> None:
    """After a CPU-op failure: where each op came from (ETRecord) and why it was not delegated."""
    modules = {s["instruction"]: s["modules"] for s in m.get("sources", [])}
    seen: set[str] = set()
    for r in m.get("why", []):
        where = ", ".join(modules.get(r["instruction"], []))
        line = f"  why {r['operator']}" + (f" in {where}" if where else "") + f": {r['reason']}"
        if line not in seen:
            seen.add(line)
            print(line, file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pte-adapter",
        description="Inspect ExecuTorch .pte programs: partitions, delegates, Model Explorer graphs.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("export", help="write the Model Explorer graph JSON")
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True, help="output .json path")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("summary", help="per-method partition table")
    p.add_argument("model")
    p.add_argument("--json", action="store_true", help="stable JSON instead of text")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser("check", help="exit 1 when the partitioning exceeds limits (a CI gate)")
    p.add_argument("model")
    p.add_argument("--max-partitions", type=int, help="most delegate partitions allowed")
    p.add_argument("--min-partitions", type=int, help="fewest delegate partitions required")
    p.add_argument("--backend", help="count only this backend's partitions, e.g. EthosUBackend")
    p.add_argument("--max-cpu-ops", type=int, help="most CPU compute kernel calls allowed")
    p.add_argument("--max-cpu-islands", type=int, help="most CPU islands allowed")
    p.add_argument("--method", help="check only this method (default: all)")
    p.add_argument("--etrecord", help=ETRECORD_HELP)
    p.set_defaults(func=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except PteFormatError as e:
        print(f"pte-adapter: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    except Exception as e:
        print(f"pte-adapter: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
