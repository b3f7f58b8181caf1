"""The NPU-estimate sweep: Vela's numbers for a command stream next to ours, per partition and op.

Shared by the benchmark (`benchmarks/bench_npu_estimate.py`, on the whole corpus that
`benchmarks/build_sweep.py` writes to `bench_out/sweep`) and the test (`tests/oracle/
test_npu_sweep.py`, on the committed subset in `tests/support/npu_sweep_data/cases.json.gz`).

A *case* is one (network, accelerator, system config, memory mode); it has one record per
Ethos-U partition: the command stream Vela compiled for that configuration (`cmd_data` of its
`*_vela.npz`), Vela's totals, and its scheduled operations with their cycles, access cycles and
bytes per memory (`--verbose-performance` and `--enable-debug-db`). Our side decodes the same
command stream with the adapter's decoder and estimates it for the same configuration; nothing
here is in the runtime.

Operations are matched through Vela's own debug database: its `queue` table gives, for every
scheduled operation, the command-stream offset where its commands end, so each decoded NPU
operation (and each DMA) belongs to the first scheduled operation whose offset is at or after
its own. Vela's per-layer CSV has the same rows in the same order as the database's `perf`
table (checked when the record is read).
"""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pte_adapter.delegates.ethosu.commands import NpuOperation, decode_commands
from pte_adapter.delegates.ethosu.cop import parse_cop
from pte_adapter.delegates.ethosu.decode import estimate_stats, partition_estimate
from pte_adapter.delegates.ethosu.perf import OpEstimate, Target, estimate_operations, target_for

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "bench_out" / "sweep"
SUBSET = ROOT / "tests" / "support" / "npu_sweep_data"

# The thresholds.
PARTITION_LIMIT = 0.15  # every partition's total cycles
MEDIAN_LIMIT = 0.05  # median |deviation| per accelerator
OP_LIMIT = 0.25  # per operation
OP_SHARE = 0.90  # of operations within OP_LIMIT


# --- reading Vela's output -----------------------------------------------------------------


def _debug_tables(xml: str) -> dict[str, list[dict[str, str]]]:
    tables = {}
    for m in re.finditer(r'<table name="([^"]*)"[^>]*>\s*<!\[CDATA\[(.*?)\]\]>', xml, re.S):
        tables[m.group(1)] = list(csv.DictReader(io.StringIO(m.group(2).strip())))
    return tables


def _int(v: str | None) -> int:
    return int(float(v)) if v not in (None, "") else 0


def read_vela_output(out: Path) -> dict[str, Any]:
    """One Vela run's folder -> the compact record the benchmark and the test use."""
    import numpy as np  # Vela depends on numpy

    with np.load(next(out.glob("*_vela.npz")), allow_pickle=True) as data:
        cmd = data["cmd_data"].tobytes()
    with next(out.glob("*_summary_*.csv")).open() as f:
        summary = next(csv.DictReader(f))
    with next(out.glob("*_per-layer.csv")).open() as f:
        layers = list(csv.DictReader(f))
    tables = _debug_tables(next(out.glob("*_debug.xml")).read_text())
    perf = tables.get("perf", [])
    debug = {r["id"]: r for r in tables.get("perf_debug", [])}
    blocks = {r["id"]: r for r in tables.get("perf_debug_main", [])}
    if len(perf) != len(layers) or any(
        _int(p["op_cycles"]) != _int(row["Op Cycles"]) for p, row in zip(perf, layers, strict=False)
    ):
        raise ValueError(f"{out}: the per-layer CSV and the debug database disagree")
    rows = []
    for p in perf:
        d = debug.get(p["id"], {})
        b = blocks.get(p["id"], {})
        moved: dict[str, int] = {}
        for key, v in d.items():
            m = re.match(r"(\w+?)(FeatureMap|Weights|Scales|Lut)_(read|write)$", key)
            if m and m.group(1) != "shram" and _int(v):
                moved[m.group(1)] = moved.get(m.group(1), 0) + _int(v)
        rows.append(
            {
                "id": int(p["id"]),
                "operator": p["operator"],
                "name": p["name"],
                "op_cycles": _int(p["op_cycles"]),
                "npu_cycles": _int(p["npu_cycles"]),
                "macs": _int(p["mac_count"]),
                "access_cycles": {
                    k.removesuffix("_ac"): _int(v)
                    for k, v in p.items()
                    if k.endswith("_ac") and k != "shram_ac" and _int(v)
                },
                "bytes": moved,
                "mac_cycles": _int(b.get("mac_cycles")),
                "ao_cycles": _int(b.get("ao_cycles")),
                "cmd_cycles": _int(b.get("cmd_cycles")),
                "ofm_block": [_int(b.get(f"ofm_block_{a}")) for a in "hwc"],
                "transpose": d.get("transpose_type", ""),
            }
        )
    queue = [
        {"offset": int(q["offset"]), "id": int(q["scheduled_id"])} for q in tables.get("queue", [])
    ]
    return {
        "cmd_data": base64.b64encode(cmd).decode(),
        "cycles_total": _int(summary["cycles_total"]),
        "cycles_npu": _int(summary["cycles_npu"]),
        "nn_macs": _int(summary["nn_macs"]),
        "core_clock": float(summary["core_clock"]),
        "layers": rows,
        "queue": queue,
    }


def load_corpus(folder: Path = CORPUS) -> dict[str, dict[str, Any]]:
    """Every case of the generated corpus, with each partition's Vela record read in."""
    manifest = json.loads((folder / "manifest.json").read_text())
    cases: dict[str, dict[str, Any]] = {}
    for cid, case in sorted(manifest["cases"].items()):
        parts = []
        for p in case["partitions"]:
            if "error" in p:
                continue
            record = read_vela_output(folder / p["dir"])
            parts.append({**{k: v for k, v in p.items() if k != "dir"}, **record})
        cases[cid] = {**case, "partitions": parts}
    return cases


def load_subset(path: Path = SUBSET / "cases.json.gz") -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))
    return data


# --- our side ------------------------------------------------------------------------------


def decode_vela_cmd_data(
    cmd_data: bytes, accelerator: str, system_config: str, memory_mode: str
) -> tuple[list[NpuOperation], list[OpEstimate], Target]:
    """Vela's raw `cmd_data` (COP header + command words) -> our operations and estimates."""
    config, words = parse_cop(memoryview(cmd_data))
    if config.accelerator_config != accelerator:
        raise ValueError(f"stream is for {config.accelerator_config}, not {accelerator}")
    streams = config.num_weight_decoders or 1
    ops = decode_commands(words, config.product_code, weight_streams=streams).operations
    target = target_for(accelerator, system_config, memory_mode)
    return ops, estimate_operations(ops, target), target


# --- comparison ----------------------------------------------------------------------------


@dataclass
class OpMatch:
    """One of Vela's scheduled operations and our operations that carry it out."""

    vela_id: int
    operator: str
    name: str
    vela_cycles: int
    vela_npu: int
    vela_bytes: dict[str, int]
    ours: list[OpEstimate] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def ours_cycles(self) -> float:
        return sum(e.cycles for e in self.ours if e.covered)

    @property
    def ours_compute(self) -> float:
        return sum(e.compute_cycles for e in self.ours if e.covered)

    @property
    def ours_bytes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.ours:
            for t in e.transfers:
                out[t.memory] = out.get(t.memory, 0) + round(getattr(t, "moved", t.bytes))
        return out

    @property
    def deviation(self) -> float | None:
        if not self.vela_cycles:
            return None
        return (self.ours_cycles - self.vela_cycles) / self.vela_cycles

    @property
    def noted(self) -> list[str]:
        """The kinds of difference our operations carry (vela_prices.KINDS)."""
        return sorted({k for e in self.ours if (k := getattr(e, "vela_kind", ""))})

    @property
    def deviation_as_vela(self) -> float | None:
        if not self.vela_cycles:
            return None
        return (self.ours_as_vela - self.vela_cycles) / self.vela_cycles

    @property
    def ours_as_vela(self) -> float:
        return sum(getattr(e, "cycles_as_vela", e.cycles) for e in self.ours if e.covered)


@dataclass
class PartitionComparison:
    case: str
    network: str
    accelerator: str
    system_config: str
    memory_mode: str
    delegate: int | None
    held_out: bool
    ours: int
    vela: int
    ours_as_vela: int  # our total with the noted operations priced the way Vela prices them
    notes: str
    ops: list[OpMatch]
    stats: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.case}#{self.delegate if self.delegate is not None else '?'}"

    @property
    def deviation(self) -> float:
        return (self.ours - self.vela) / self.vela

    @property
    def deviation_as_vela(self) -> float:
        return (self.ours_as_vela - self.vela) / self.vela

    @property
    def target(self) -> str:
        return self.accelerator


def compare_partition(
    case_id: str, case: dict[str, Any], part: dict[str, Any]
) -> PartitionComparison:
    cmd = base64.b64decode(part["cmd_data"])
    ops, estimates, target = decode_vela_cmd_data(
        cmd, case["accelerator"], case["system_config"], case["memory_mode"]
    )
    stats = estimate_stats(partition_estimate(estimates, target))
    queue = sorted(part["queue"], key=lambda q: q["offset"])
    rows = {r["id"]: r for r in part["layers"]}
    matches: dict[int, OpMatch] = {}
    for r in part["layers"]:
        matches[r["id"]] = OpMatch(
            r["id"], r["operator"], r["name"], r["op_cycles"], r["npu_cycles"], r["bytes"]
        )
    by_index = {op.index: op for op in ops}
    for est in estimates:
        offset = by_index[est.index].offset
        entry = next((q for q in queue if q["offset"] >= offset), None)
        if entry is None or entry["id"] not in rows:
            continue
        m = matches[entry["id"]]
        m.ours.append(est)
        m.labels.append(est.label)
    ours = int(stats["npu_est_cycles"])
    return PartitionComparison(
        case=case_id,
        network=case["network"],
        accelerator=case["accelerator"],
        system_config=case["system_config"],
        memory_mode=case["memory_mode"],
        delegate=part.get("delegate"),
        held_out=bool(case.get("held_out")),
        ours=ours,
        vela=int(part["cycles_total"]),
        ours_as_vela=int(stats.get("npu_est_cycles_as_vela", ours)),
        notes=str(stats.get("estimate_notes", "")),
        ops=list(matches.values()),
        stats=stats,
    )


def compare_all(cases: dict[str, dict[str, Any]]) -> list[PartitionComparison]:
    return [
        compare_partition(cid, case, part)
        for cid, case in sorted(cases.items())
        for part in case["partitions"]
    ]


def op_within(m: OpMatch, limit: float = OP_LIMIT) -> bool:
    """Our cycles for the operation within `limit` of Vela's."""
    dev = m.deviation
    if dev is None:  # Vela prices it at 0 cycles: within if ours is negligible too
        return m.ours_cycles <= 64
    return abs(dev) <= limit


def op_explained(m: OpMatch, limit: float = OP_LIMIT) -> bool:
    """Outside, but the operation carries a noted difference and, priced Vela's way, is within."""
    if op_within(m, limit) or not m.noted:
        return False
    dev = m.deviation_as_vela
    return m.ours_as_vela <= 64 if dev is None else abs(dev) <= limit


def partition_within(c: PartitionComparison, limit: float = PARTITION_LIMIT) -> bool:
    return abs(c.deviation) <= limit


def partition_explained(c: PartitionComparison, limit: float = PARTITION_LIMIT) -> bool:
    """Outside, with a reason the user sees (`estimate_notes`) that accounts for the gap: priced
    Vela's way the partition is within `limit`."""
    if partition_within(c, limit) or not c.notes:
        return False
    return abs(c.deviation_as_vela) <= limit


@dataclass
class TargetSummary:
    target: str
    partitions: int
    median: float  # of |deviation|
    median_as_vela: float  # of |deviation| with the noted operations priced Vela's way
    worst: PartitionComparison
    worst_as_vela: PartitionComparison
    ops: int
    ops_within: int
    ops_explained: int

    @property
    def op_share(self) -> float:
        return self.ops_within / self.ops if self.ops else 1.0

    @property
    def op_share_explained(self) -> float:
        return (self.ops_within + self.ops_explained) / self.ops if self.ops else 1.0


def per_target(comparisons: list[PartitionComparison]) -> list[TargetSummary]:
    out = []
    for target in sorted({c.target for c in comparisons}, key=_target_key):
        group = [c for c in comparisons if c.target == target]
        ops = [m for c in group for m in c.ops]
        out.append(
            TargetSummary(
                target=target,
                partitions=len(group),
                median=statistics.median(abs(c.deviation) for c in group),
                median_as_vela=statistics.median(abs(c.deviation_as_vela) for c in group),
                worst=max(group, key=lambda c: abs(c.deviation)),
                worst_as_vela=max(group, key=lambda c: abs(c.deviation_as_vela)),
                ops=len(ops),
                ops_within=sum(op_within(m) for m in ops),
                ops_explained=sum(op_explained(m) for m in ops),
            )
        )
    return out


def _target_key(name: str) -> tuple[str, int]:
    family, _, macs = name.rpartition("-")
    return family, int(macs) if macs.isdigit() else 0


def _short(c: PartitionComparison) -> str:
    return f"{c.accelerator} {c.system_config.removeprefix('Ethos_')} {c.memory_mode}"


def table(
    comparisons: list[PartitionComparison], *, ops: bool = False, only: str = "", limit: int = 60
) -> str:
    """The whole comparison as text: one row per partition, then per target, then worst ops."""
    lines = [
        f"{'network':<16} {'target':<48} {'part':>4} {'ours':>10} {'Vela':>10} {'dev':>8}"
        f" {'as Vela':>10} {'dev':>7}  noted"
    ]
    for c in comparisons:
        kinds = sorted({k for m in c.ops for k in m.noted})
        note = ("held out; " if c.held_out else "") + ", ".join(kinds)
        lines.append(
            f"{c.network:<16} {_short(c):<48} {c.delegate if c.delegate is not None else '?':>4} "
            f"{c.ours:>10,} {c.vela:>10,} {c.deviation:>+8.1%} {c.ours_as_vela:>10,} "
            f"{c.deviation_as_vela:>+7.1%}  {note}"
        )
    lines.append("")
    lines.append(
        f"{'target':<15} {'parts':>5} {'median':>7} {'worst':>8} {'as Vela: median':>16} "
        f"{'worst':>7}  {'ops ±25%':>14} {'+ explained':>12}"
    )
    for s in per_target(comparisons):
        lines.append(
            f"{s.target:<15} {s.partitions:>5} {s.median:>7.1%} {s.worst.deviation:>+8.1%} "
            f"{s.median_as_vela:>16.1%} {s.worst_as_vela.deviation_as_vela:>+7.1%}  "
            f"{s.op_share:>6.1%} ({s.ops_within}/{s.ops}) {s.op_share_explained:>11.1%}"
        )
    every = [m for c in comparisons for m in c.ops]
    within = sum(op_within(m) for m in every)
    explained = sum(op_explained(m) for m in every)
    inside = sum(partition_within(c) for c in comparisons)
    inside_as = sum(partition_within(c) or partition_explained(c) for c in comparisons)
    lines.append(
        f"all: {len(comparisons)} partitions, {inside} within ±{PARTITION_LIMIT:.0%}, "
        f"{inside_as} within or explained; {len(every)} operations, {within} "
        f"({within / max(len(every), 1):.1%}) within ±{OP_LIMIT:.0%}, "
        f"{within + explained} ({(within + explained) / max(len(every), 1):.1%}) within or "
        "explained"
    )
    lines.append("")
    lines.append(f"partitions outside ±{PARTITION_LIMIT:.0%} and not explained:")
    for c in comparisons:
        if not partition_within(c) and not partition_explained(c):
            lines.append(
                f"  {c.name}: ours {c.ours:,}, Vela {c.vela:,} ({c.deviation:+.1%}); as Vela "
                f"{c.ours_as_vela:,} ({c.deviation_as_vela:+.1%}); notes: {c.notes or '-'}"
            )
    if ops:
        lines.append("")
        lines.append(f"operations outside ±{OP_LIMIT:.0%} and not explained (worst first):")
        outside = [
            (c, m)
            for c in comparisons
            for m in c.ops
            if not op_within(m) and not op_explained(m) and only in c.name
        ]
        outside.sort(key=lambda cm: -abs(cm[1].deviation or 0))
        for c, m in outside[:limit]:
            kinds = ", ".join(sorted(set(m.labels)))[:40]
            dev = f"{m.deviation:+.0%}" if m.deviation is not None else "n/a"
            lines.append(
                f"  {c.name:<58} {m.operator:<14} {m.name[:22]:<22} ours {m.ours_cycles:>9,.0f} "
                f"as Vela {m.ours_as_vela:>9,.0f} Vela {m.vela_cycles:>9,} {dev:>6} "
                f"[{len(m.ours)} x {kinds}] {','.join(m.noted)}"
            )
    return "\n".join(lines)
