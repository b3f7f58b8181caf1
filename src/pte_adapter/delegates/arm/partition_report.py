"""The Arm partitioner's own report of why it refused nodes (`partition_report.txt`).

`TOSAPartitioner.partition` (Ethos-U, TOSA and VGF share it) logs, for each TOSA spec it ran for,
every node it rejected and the first reason it gave, as a table. With the compile spec's
intermediates folder set (`dump_intermediate_artifacts_to(dir)`, `aot_arm_compiler.py
--intermediates`) and its logger at INFO (`--debug`), that log is also written to
`<dir>/partition_report.txt`, appended on every run:

    The following nodes were rejected for TOSA-1.0+INT+int16+int4+cf:
    ╒═════════════════════╤═════════════════════╤═══════════════╤═══════════════════════╕
    │ Node name           │ Target              │ Torch func    │ Reason                │
    ╞═════════════════════╪═════════════════════╪═══════════════╪═══════════════════════╡
    │ aten_linear_default │ aten.linear.default │ ('linear_1',  │ Rejected by NotLinear │
    ╘═════════════════════╧═════════════════════╧═══════════════╧═══════════════════════╛

Cells longer than 35 characters wrap onto the next lines of the row: node names and targets are
joined back without spaces, reasons with one. The folder is the delegate's `debug_artifact_path`
(as written, or copied beside the `.pte` under its last name), and only inside the `.pte`'s folder
(`delegates/arm/artifacts.py`). The report names edge-graph nodes: the analysis uses a row only
for an instruction whose ETRecord nodes carry that name and operator.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from pte_adapter.container import files
from pte_adapter.delegates.arm._generated import partition_rules as rules
from pte_adapter.delegates.arm.artifacts import is_folder_inside, spec_folders
from pte_adapter.program.delegate_graph import PartitionerRejection, PartitionerReport
from pte_adapter.program.model import Delegate

REPORT = "partition_report.txt"
MAX_REPORT_BYTES = 16 << 20  # a report of 50,000 rejected nodes is about 15 MB
_SECTION = re.compile(r"^The following nodes were rejected for (\S+?):\s*$")
_BORDER = ("╒", "╞", "├", "╘")


def parse_partition_report(text: str, file: str) -> PartitionerReport:
    """Every section's rejected nodes (a node reported twice for one spec keeps its first reason,
    as the partitioner's reporter does)."""
    report = PartitionerReport(file)
    spec: str | None = None
    header: list[str] | None = None
    row: list[list[str]] = []
    for line in text.splitlines():
        if m := _SECTION.match(line):
            spec, header, row = m.group(1), None, []
            report.rejections.setdefault(spec, [])
        elif spec is not None and line.startswith(_BORDER):
            if row and header is None:
                header = [" ".join(c).strip() for c in row]
            elif row and header is not None:
                _add(report.rejections[spec], header, row)
            row = []
        elif spec is not None and line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            row = row or [[] for _ in cells]
            for parts, cell in zip(row, cells, strict=False):
                if cell:
                    parts.append(cell)
    return report


def _add(into: list[PartitionerRejection], header: list[str], row: list[list[str]]) -> None:
    cols = {name: i for i, name in enumerate(header)}
    if not {"Node name", "Target", "Reason"} <= cols.keys() or len(row) != len(header):
        return
    node = "".join(row[cols["Node name"]])
    if node and all(r.node != node for r in into):
        into.append(
            PartitionerRejection(node, "".join(row[cols["Target"]]), " ".join(row[cols["Reason"]]))
        )


def read_partition_report(path: Path, name: str, inside: Path | None = None) -> PartitionerReport:
    """Read and parse one report (a regular file of at most MAX_REPORT_BYTES, inside the folder
    `inside` when given); raise PteFormatError when it cannot be read."""
    data = files.read_regular(path, MAX_REPORT_BYTES, name, inside)
    return parse_partition_report(data.decode("utf-8", errors="replace"), name)


def partition_report(pte_path: Path | None, delegate: Delegate) -> PartitionerReport | None:
    """The `partition_report` hook: the report in the delegate's intermediates folder, if any."""
    if pte_path is None:
        return None
    for folder in spec_folders(pte_path, delegate.spec("debug_artifact_path")):
        path = folder / REPORT
        name = os.path.relpath(path, pte_path.parent)
        if is_folder_inside(folder, pte_path.parent) and files.probe(path, name):
            return read_partition_report(path, name, pte_path.parent)
    return None


class Reported(NamedTuple):
    """One TOSA spec's part of the reports the delegates of a method came with."""

    file: str  # the report it is from
    by_node: dict[str, PartitionerRejection]


def reported_rejections(delegates: list[Delegate]) -> dict[str, Reported]:
    """TOSA spec -> the rejected nodes the delegates' reports list for it (the first report that
    names a spec is used: one export writes one report)."""
    out: dict[str, Reported] = {}
    for d in delegates:
        report = d.decoded.partitioner_report
        if report is None:
            continue
        for spec, rows in report.rejections.items():
            if spec not in out:
                out[spec] = Reported(report.file, {r.node: r for r in rows})
    return out


def partitioner_kind(reason: str) -> str:
    """The reason kind of a partitioner's words (`analysis/why.py`): on no operator list, refused
    on the Ethos-U55, refused by an `additional_checks` entry, not marked as quantized, or
    another check."""
    if reason == rules.ARM_NOT_LISTED_REASON:
        return "not_listed"
    if reason == rules.ARM_U55_REASON:
        return "u55"
    if reason.startswith(rules.ARM_ADDITIONAL_CHECK_PREFIX):
        return "additional_check"
    if reason == rules.ARM_NOT_QUANTIZED_REASON:
        return "not_quantized"
    return "check"
