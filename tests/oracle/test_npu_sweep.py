"""The NPU estimate against Vela's on the committed subset of the sweep (issue 23).

The subset (`tests/support/npu_sweep_data/cases.json.gz`, cut from the corpus that
`benchmarks/build_sweep.py` generates through the real Arm flow) holds, per (network,
accelerator, system config, memory mode) and Ethos-U partition, the command stream Vela compiled
and Vela's own estimate of it: totals, and per scheduled operation its cycles and the
command-stream offset where its commands end (Vela's debug database). The test decodes each
stream with the adapter's decoder and estimates it for the same configuration; per operation the
match is Vela's own (offset -> scheduled operation).

Thresholds (the issue's): every partition within ±15 % of Vela's total cycles, or outside with a
reason the user sees on the partition (`estimate_notes`) that accounts for the gap (priced
Vela's way, `npu_est_cycles_as_vela`, it is within; no exception is allowed); median
|deviation| per accelerator at most 5 %; per-operation cycles within ±25 % for at least 90 % of
Vela's operations, or the operation carries a note whose Vela-way price is within. Where the
command stream does work Vela's estimate prices another way (`vela_prices.py`), the note holds
both numbers, so the medians are taken on our total with those operations priced Vela's way
(`npu_est_cycles_as_vela`).

`python -m benchmarks.bench_npu_estimate --subset` prints the same comparison as a table.
"""

from __future__ import annotations

import base64
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.support.npu_sweep import (
    MEDIAN_LIMIT,
    OP_LIMIT,
    OP_SHARE,
    SUBSET,
    PartitionComparison,
    compare_all,
    decode_vela_cmd_data,
    load_subset,
    op_explained,
    op_within,
    partition_explained,
    partition_within,
    per_target,
)

# The partition the model without Vela's weight-buffering slacks left outside ±15 % with no
# note: its last Conv2D writes its OFM transposed and reads weights a DMA copied from DRAM into
# the Dedicated_Sram staging SRAM, with its feature maps staged there too.
SPLIT2_DEDICATED = "split2/ethos-u85-2048/U85_SYS_DRAM_High/Dedicated_Sram_384KB#2"
HELD_OUT = "resnet_lrn2/ethos-u55-128/U55_High_End_Embedded/Shared_Sram"
HELD_OUT_PTE = SUBSET / "resnet_lrn2_ethosu55.pte"


@pytest.fixture(scope="module")
def cases() -> dict[str, dict[str, Any]]:
    return load_subset()


@pytest.fixture(scope="module")
def comparisons(cases: dict[str, dict[str, Any]]) -> list[PartitionComparison]:
    return compare_all(cases)


def test_subset_covers_the_sweep(cases: dict[str, dict[str, Any]]) -> None:
    """At least 40 cases over U55 (64, 128, 256 MACs) and U85 (128 to 2048 MACs), several system
    configs and memory modes, networks split by one and by two CPU operators."""
    assert len(cases) >= 40
    accelerators = {c["accelerator"] for c in cases.values()}
    assert {f"ethos-u55-{m}" for m in (64, 128, 256)} <= accelerators
    assert {f"ethos-u85-{m}" for m in (128, 256, 512, 1024, 2048)} <= accelerators
    assert len({c["system_config"] for c in cases.values()}) >= 6
    assert len({c["memory_mode"] for c in cases.values()}) >= 3
    partitions = {cid: len(c["partitions"]) for cid, c in cases.items()}
    assert any(n == 2 for n in partitions.values()) and any(n == 3 for n in partitions.values())


def test_records_are_vela_s_own(cases: dict[str, dict[str, Any]]) -> None:
    """Vela's total is the sum of its per-layer rows, and every command of the stream belongs to
    one of its scheduled operations (so the per-operation match loses nothing)."""
    for cid, case in cases.items():
        for part in case["partitions"]:
            assert part["cycles_total"] == sum(r["op_cycles"] for r in part["layers"]), cid
            ops, estimates, _t = decode_vela_cmd_data(
                base64.b64decode(part["cmd_data"]),
                case["accelerator"],
                case["system_config"],
                case["memory_mode"],
            )
            last = max(q["offset"] for q in part["queue"])
            assert all(op.offset <= last for op in ops if op.is_compute), cid
            assert estimates and all(e.covered for e in estimates), cid


def test_every_partition_within_or_explained(comparisons: list[PartitionComparison]) -> None:
    """No exception: every partition outside ±15 % says why on the partition, and priced Vela's
    way it is within."""
    outside = {
        c.name: f"{c.deviation:+.1%} (as Vela {c.deviation_as_vela:+.1%})"
        for c in comparisons
        if not partition_within(c) and not partition_explained(c)
    }
    assert not outside, outside
    for c in comparisons:
        if not partition_within(c) and partition_explained(c):
            # The reason is on the partition, with both numbers.
            assert c.stats["estimate_notes"] and "Vela" in c.stats["estimate_notes"], c.name
            assert c.stats["npu_est_cycles_as_vela"] == c.ours_as_vela


def test_median_deviation_per_accelerator(comparisons: list[PartitionComparison]) -> None:
    for s in per_target(comparisons):
        assert s.median_as_vela <= MEDIAN_LIMIT, (s.target, s.median_as_vela)
    # Without transposes (which only the Ethos-U55 lowers to pooling) our own total is the
    # number: on the Ethos-U85 the raw median holds too.
    for s in per_target(comparisons):
        if "u85" in s.target:
            assert s.median <= MEDIAN_LIMIT, (s.target, s.median)


def test_operations_within_or_explained(comparisons: list[PartitionComparison]) -> None:
    ops = [m for c in comparisons for m in c.ops]
    good = sum(op_within(m) or op_explained(m) for m in ops)
    assert good / len(ops) >= OP_SHARE, f"{good}/{len(ops)}"
    # And per accelerator, so one family cannot carry the other.
    for s in per_target(comparisons):
        assert s.op_share_explained >= OP_SHARE, (s.target, s.op_share_explained)


def test_noted_operations_carry_both_numbers(comparisons: list[PartitionComparison]) -> None:
    noted = 0
    for c in comparisons:
        for m in c.ops:
            for e in m.ours:
                if e.vela_kind:
                    noted += 1
                    assert e.vela_note and "Vela" in e.vela_note and "ours" in e.vela_note
    assert noted


def test_timeline_sums_kernels_and_unhidden_dma(comparisons: list[PartitionComparison]) -> None:
    """The partition's cycles are its kernels' plus what the stream waited for DMAs, and a DMA
    never costs more than its own transfer."""
    dmas = 0
    for c in comparisons:
        estimates = [e for m in c.ops for e in m.ours]
        for e in estimates:
            if e.duration:
                dmas += 1
                assert 0 <= e.cycles <= e.duration + 1e-6, c.name
    assert dmas


def test_u55_transposes_priced_both_ways(comparisons: list[PartitionComparison]) -> None:
    """Every Transpose Vela schedules on an Ethos-U55 is carried out by pooling commands that
    the estimate recognises; Vela's memory-traffic price is reproduced within 25 % for each."""
    transposes = [
        m for c in comparisons if "u55" in c.accelerator for m in c.ops if m.operator == "Transpose"
    ]
    assert len(transposes) >= 50
    for m in transposes:
        assert "transpose" in m.noted, (m.name, m.labels)
        assert m.ours_as_vela == pytest.approx(m.vela_cycles, rel=OP_LIMIT), m.name


def test_buffered_weights_priced_vela_s_way(comparisons: list[PartitionComparison]) -> None:
    """An operation whose weights a DMA copied to SRAM is noted ('buffering') where the slacks
    Vela's weight-buffering estimate recorded differ from the stream (a transposed OFM priced on
    another shape, feature maps in the arena rather than staged) and change its price. Each
    noted one is then Vela's own price of the operation with its copy, where ours alone is not;
    on the Ethos-U55, which neither transposes an OFM nor has a staging memory apart from the
    arena in its memory modes, nothing is noted."""
    noted = [(c, m) for c in comparisons for m in c.ops if "buffering" in m.noted]
    assert len(noted) >= 20
    for c, m in noted:
        assert "u85" in c.accelerator, c.name
        assert abs(m.deviation or 0.0) > 0.01, (c.name, m.name)
        assert m.ours_as_vela == pytest.approx(m.vela_cycles, rel=0.01), (c.name, m.name)
        kernels = [e for e in m.ours if e.vela_kind == "buffering" and e.vela_cycles]
        assert len(kernels) == 1, (c.name, m.labels)
        assert "transposed OFM" in kernels[0].vela_note or "arena" in kernels[0].vela_note
        # Its copies are priced inside it (a DMA the Vela operation also holds for another
        # operation's weights keeps its own price).
        copies = [e for e in m.ours if e.duration and e.vela_kind == "buffering"]
        assert copies and all(e.vela_cycles == 0 for e in copies), (c.name, m.labels)
        assert all(f"NPU operation {kernels[0].index}'s" in e.vela_note for e in copies)


def test_split2_dedicated_sram_buffered_conv(comparisons: list[PartitionComparison]) -> None:
    """The last partition that was outside with no note (ours 7,019 cycles, Vela 9,190): its
    Conv2D is charged by Vela 'full copy - previous slack + own slack', the own slack 6,111
    cycles (its debug database's est_op_cycles_without_buffering) against 3,467 in the
    stream. The note gives Vela's price of that operation, 5,704, and the partition is within
    Vela's way."""
    c = next(c for c in comparisons if c.name == SPLIT2_DEDICATED)
    assert not partition_within(c) and partition_explained(c)
    assert "Vela counts each copy in its operation" in c.stats["estimate_notes"]
    conv = next(m for m in c.ops if m.operator == "Conv2D")
    assert conv.vela_cycles == 5704
    assert conv.ours_as_vela == pytest.approx(5704, abs=1)
    kernel = next(e for e in conv.ours if e.vela_kind == "buffering" and e.vela_cycles)
    assert "own slack 6,111" in kernel.vela_note and "transposed OFM" in kernel.vela_note
    assert "arena (Dram)" in kernel.vela_note


# --- the held-out ResNet-style U55 program, as a user sees it --------------------------------


def test_held_out_resnet_u55_reason_on_every_partition(
    cases: dict[str, dict[str, Any]], comparisons: list[PartitionComparison]
) -> None:
    """The issue's held-out shape: a ResNet-style network for ethos-u55-128 /
    Ethos_U55_High_End_Embedded / Shared_Sram, split into three Ethos-U partitions by two CPU
    operators. Its partitions are dominated by the boundary transposes; each partition, read
    from the .pte by the adapter, says so and gives Vela's way of pricing them, which is
    within 25 % of Vela's own total."""
    from pte_adapter.api import analyse, load, summarize

    assert HELD_OUT in cases
    vela = {c.delegate: c.vela for c in comparisons if c.case == HELD_OUT}
    assert len(vela) == 3
    result = analyse(load(Path(HELD_OUT_PTE)))
    summary = summarize(result)
    parts = [p for p in summary["methods"][0]["partitions"] if p["backend"] == "EthosUBackend"]
    assert len(parts) == 3
    for k, p in enumerate(parts):
        stats = p["delegate_stats"]
        assert "transpose" in stats["estimate_notes"], stats
        assert stats["npu_est_cycles_as_vela"] == pytest.approx(vela[k], rel=0.25)
        # Our own number stays the pooling model's: more than Vela's placeholder.
        assert stats["npu_est_cycles"] > stats["npu_est_cycles_as_vela"]
    # The method's boundary cost names the transposes the split adds, and the text shows the
    # notes under each partition.
    frag = summary["methods"][0]["npu_estimate"]["fragmentation"]
    layout = sum(p["delegate_stats"]["npu_est_transpose_cycles"] for p in parts)
    assert frag["transpose_cycles_in_partitions"] == layout > 0
    from pte_adapter.render.summary_text import text_report

    text = text_report(result, verbose=True)
    assert text.count("         estimate ") == 3 and "layout transposes" in text
    assert "         estimate " not in text_report(result)  # detail for --verbose only


def test_held_out_notes_on_the_operations() -> None:
    from pte_adapter.api import load

    program = load(Path(HELD_OUT_PTE))
    noted = [
        n
        for d in program.methods[0].delegates
        for g in d.decoded.graphs
        for n in g.nodes
        if "estimate_notes" in n.attrs
    ]
    assert noted
    assert all(n.kind == "NPU_OP_POOL" for n in noted if "transpose" in n.attrs["estimate_notes"])


def test_median_of_held_out(comparisons: list[PartitionComparison]) -> None:
    held = [c for c in comparisons if c.held_out]
    assert held
    assert statistics.median(abs(c.deviation_as_vela) for c in held) <= MEDIAN_LIMIT
