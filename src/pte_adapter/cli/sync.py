"""`pte-adapter sync PROGRAM [-o mapping.json] [--to exported|edge|GRAPH]`: Model Explorer's
sync-navigation mapping between the program's method graph and a graph of its ETRecord.

Load the `.pte` and its ETRecord side by side in Model Explorer, then Sync > "Upload mapping from
computer" with the file this writes (docs/model-explorer.md); `pte_adapter.visualize` does it all.
Without `-o` the JSON goes to stdout. Exit 3 (one line) when no mapping can be made: no ETRecord,
one of another program, a graph it does not record.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pte_adapter.cli.usage import EXIT_OK, UsageError, output_path, write_output


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sync",
        help="Model Explorer's sync-navigation mapping: the program's graph <-> its ETRecord's",
        description="Write the mapping Model Explorer's split view syncs by: each runtime step "
        "of the program (its instruction and delegate nodes, and the delegate operations that "
        "record their source) and the ETRecord graph's nodes it came from, paired as ExecuTorch's "
        "Inspector pairs them.",
    )
    p.add_argument("model", help="the .pte (or .bpte)")
    p.add_argument("-o", "--output", help="write the mapping here (default: stdout)")
    p.add_argument(
        "--etrecord",
        help="the program's ETRecord (default: the one beside it: <stem>.etrecord, "
        "<stem>_etrecord.bin or etrecord.bin)",
    )
    p.add_argument(
        "--to",
        default="auto",
        metavar="GRAPH",
        help="the ETRecord graph to map to: exported (the exported program), edge (the edge "
        "program), or a graph-map entry's name; default: the exported program when the "
        "ETRecord records it, else the edge program (as the Inspector chooses)",
    )
    p.add_argument("--method", default="forward", help="the method to map (default: forward)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pte_adapter.api.etrecord_view import MappingUsageError, sync_mapping

    out = output_path(args.output, "mapping.json") if args.output else None
    try:
        mapping = sync_mapping(args.model, etrecord=args.etrecord, to=args.to, method=args.method)
    except MappingUsageError as e:
        raise UsageError(e.what) from e
    text = json.dumps(mapping.document, indent=1) + "\n"
    said = (
        f"{mapping.entries} entries: {mapping.program.name} {mapping.left_graph} <-> "
        f"{mapping.etrecord.name} {mapping.right_graph}"
        + (f" ({mapping.note})" if mapping.note else "")
    )
    if out is None:
        sys.stdout.write(text)
        print(said, file=sys.stderr)
    else:
        write_output(out, text)
        print(f"wrote {out}: {said}")
    return EXIT_OK
