"""`pte-adapter size` as text: totals by kind, the layout tree, constants, named and external data.

Sibling leaves of one kind are folded into one line when there are many of them (a TOSA payload
has hundreds of constants), so the tree stays readable; `--json` keeps every part.
"""

from __future__ import annotations

import json
from collections import defaultdict

from pte_adapter.analysis.size import SizePart, SizeReport
from pte_adapter.wording import bytes_text

# More same-kind leaves than this under one parent are shown as one line.
FOLD_SIBLINGS = 3
TOP_CONSTANTS = 10
MAX_READERS = 4


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:5.1f}%" if total else "     -"


def _tree(part: SizePart, total: int, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    lines.append(
        f"  {pad}{part.name:<{max(60 - 2 * depth, 20)}} {part.size:>10} B "
        f"{_pct(part.size, total)}  @ {part.offset}"
    )
    leaves_by_kind: dict[str, list[SizePart]] = defaultdict(list)
    for c in part.children:
        if not c.children:
            leaves_by_kind[c.kind].append(c)
    folded = {k for k, v in leaves_by_kind.items() if len(v) > FOLD_SIBLINGS}
    shown: set[str] = set()
    for c in part.children:
        if c.kind in folded and not c.children:
            if c.kind in shown:
                continue
            shown.add(c.kind)
            group = leaves_by_kind[c.kind]
            n = sum(p.size for p in group)
            label = f"{c.kind} x{len(group)}"
            lines.append(f"  {pad}  {label:<{max(58 - 2 * depth, 20)}} {n:>10} B {_pct(n, total)}")
        else:
            _tree(c, total, depth + 1, lines)


def text_size_report(report: SizeReport) -> str:
    total = report.file_size
    lines = [f"{report.file}: {bytes_text(total)}"]
    leaf_sum = sum(p.size for p in report.leaves())
    lines.append(
        f"  every byte in one part: {leaf_sum} B of {total} B"
        + ("" if leaf_sum == total else "  (MISMATCH)")
    )
    lines.append("")
    lines.append("by kind:")
    for kind, nbytes in report.totals().items():
        lines.append(f"  {kind:<28} {nbytes:>10} B {_pct(nbytes, total)}")
    per_delegate = report.delegate_totals()
    if per_delegate:
        lines.append("")
        lines.append("delegate payloads:")
        for label, kinds in per_delegate.items():
            body = ", ".join(
                f"{k} {bytes_text(v)}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])
            )
            lines.append(f"  {label}: {body}")
    lines.append("")
    lines.append("layout (offset order):")
    _tree(report.root, total, 0, lines)
    if report.constants:
        lines.append("")
        lines.append(f"constants (largest first, {len(report.constants)} in all):")
        for c in report.constants[:TOP_CONSTANTS]:
            readers = ", ".join(c.readers[:MAX_READERS])
            if len(c.readers) > MAX_READERS:
                readers += f", ... ({len(c.readers)} readers)"
            where = c.where if c.owner == "program" else f"{c.owner}, {c.where}"
            lines.append(
                f"  {c.nbytes:>10} B  {c.name}  [{where}]"
                + (f"  <- {readers}" if readers else "  (nothing reads it)")
            )
    lines += _named_and_external(report)
    for p in report.problems:
        lines.append(f"problem: {p}")
    return "\n".join(lines)


def _named_and_external(report: SizeReport) -> list[str]:
    lines: list[str] = []
    if report.named_data:
        lines.append("")
        lines.append(
            f"named data in the .pte ({len(report.named_data)} keys, "
            f"{bytes_text(sum(n.nbytes for n in report.named_data))}):"
        )
        for n in report.named_data[:TOP_CONSTANTS]:
            users = ", ".join(n.used_by[:MAX_READERS]) or "no delegate names it"
            lines.append(f"  {n.nbytes:>10} B  {n.key[:40]:<40}  <- {users}")
        if len(report.named_data) > TOP_CONSTANTS:
            lines.append(f"  ... {len(report.named_data) - TOP_CONSTANTS} more (see --json)")
    if report.external:
        lines.append("")
        lines.append("external data (.ptd beside the .pte; not part of the file size):")
        for e in report.external:
            lines.append(
                f"  {e.file}: {bytes_text(e.size)}, {len(e.entries)} entries this "
                f"program uses, {bytes_text(e.referenced_bytes)}"
            )
            for n in e.entries[:TOP_CONSTANTS]:
                users = ", ".join(n.used_by[:MAX_READERS])
                lines.append(f"    {n.nbytes:>10} B  {n.key[:40]:<40}  <- {users}")
    return lines


def json_size_report(report: SizeReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
