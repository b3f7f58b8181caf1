"""`pte-adapter ops PROGRAM... [--json | --yaml | --select-ops-list] [--runtime-ops LIST]
[--runtime-backends A,B]`: the CPU kernels (with their kernel keys) and the backends the programs
need; ExecuTorch's `selected_operators.yaml` for a selective build; with a runtime's operator list
or backend ids, a check (exit 1 naming what is missing, 0 when the runtime has it all, 2 on a
usage error)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from pte_adapter.cli.usage import ETRECORD_HELP, EXIT_CHECK_FAILED, EXIT_OK, UsageError

RUNTIME_OPS_HELP = (
    "the runtime's operators: its selected_operators.yaml, or a list of names one a line (as "
    "ExecuTorch's Python runtime gives them: _get_operator_names())"
)
RUNTIME_BACKENDS_HELP = (
    "the runtime's backend ids, comma-separated (ExecuTorch's Python runtime: "
    "_get_registered_backend_names()); an empty string for none"
)
_BACKEND_ID = re.compile(r"[\w.+-]+")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "ops",
        help="will it load: the kernels and backends a program needs, the selective-build list, "
        "a check against a runtime",
    )
    p.add_argument("model", nargs="+", help="the .pte (or .bpte); several merge into one list")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="everything as JSON")
    out.add_argument(
        "--yaml",
        action="store_true",
        help="ExecuTorch's selected_operators.yaml (what gen_oplist writes) for a selective build",
    )
    out.add_argument(
        "--select-ops-list",
        action="store_true",
        help="the kernels comma-separated, for EXECUTORCH_SELECT_OPS_LIST",
    )
    p.add_argument("--runtime-ops", metavar="LIST", help=RUNTIME_OPS_HELP)
    p.add_argument("--runtime-backends", metavar="A,B", help=RUNTIME_BACKENDS_HELP)
    p.add_argument("--etrecord", help=ETRECORD_HELP + " (one program only)")
    p.set_defaults(func=run)


def runtime_backends(text: str | None) -> list[str] | None:
    """The backend ids of `--runtime-backends` (None when not given); `UsageError` for one
    that cannot be a backend id."""
    if text is None:
        return None
    ids = [b.strip() for b in text.split(",") if b.strip()]
    bad = [b for b in ids if not _BACKEND_ID.fullmatch(b)]
    if bad:
        raise UsageError(
            f"--runtime-backends: {len(bad)} item(s) are not backend ids (letters, digits, "
            "_ . + -); give them comma-separated, e.g. XnnpackBackend,EthosUBackend"
        )
    return ids


def read_runtime(args: argparse.Namespace) -> tuple[Any, list[str] | None]:
    """The runtime list and backend ids the command line names (each None when not given)."""
    from pte_adapter.container.runtime_list import read_runtime_list

    backends = runtime_backends(args.runtime_backends)
    runtime = read_runtime_list(Path(args.runtime_ops)) if args.runtime_ops else None
    return runtime, backends


def run(args: argparse.Namespace) -> int:
    from pte_adapter.analysis.load_check import check_load
    from pte_adapter.analysis.needs import merge_needs
    from pte_adapter.api import open_analysis
    from pte_adapter.render.load_report import check_lines, ops_json, ops_text
    from pte_adapter.render.oplist_yaml import select_ops_list, selected_operators_yaml
    from pte_adapter.render.ops_report import custom_text

    if args.etrecord and len(args.model) > 1:
        raise UsageError("--etrecord names one program's ETRecord: give one program with it")
    runtime, backends = read_runtime(args)  # before the programs: the command line may be wrong
    results = [open_analysis(m, etrecord=args.etrecord, profile=False) for m in args.model]
    needs = results[0].needs if len(results) == 1 else merge_needs([r.needs for r in results])
    check = (
        check_load(needs, runtime, backends)
        if runtime is not None or backends is not None
        else None
    )
    if args.json:
        print(json.dumps(ops_json(needs, check), indent=1, ensure_ascii=False))
    elif args.yaml or args.select_ops_list:
        if args.yaml:
            print(selected_operators_yaml(needs), end="")
        else:
            print(select_ops_list(needs))
        if not needs.called:
            print(
                "note: no CPU kernel is called: the list is empty; the runtime still needs "
                + (", ".join(b.backend for b in needs.backends) or "no backend"),
                file=sys.stderr,
            )
        for op in needs.called:
            if op.custom:
                print(f"note: {op.name} is {custom_text(op)}", file=sys.stderr)
    else:
        print("\n".join(ops_text(needs, check)))
    if check is None:
        return EXIT_OK
    if args.json or args.yaml or args.select_ops_list:  # the text says it on stdout
        for line in check_lines(check):
            print(line, file=sys.stderr)
    return EXIT_OK if check.ok else EXIT_CHECK_FAILED
