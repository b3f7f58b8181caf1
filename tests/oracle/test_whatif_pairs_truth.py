"""The what-if pairs are what they claim, and the truth of each fixed side from the real toolchain.

Each pair (examples/whatif_pairs.json, built by examples/build_whatif_pairs.py) is one network
exported fragmented and fixed. Checked here, from the files only, with ExecuTorch's deserializer,
tosa-tools and Vela (tests/support/whatif_pairs.py):
- the fragmented side has CPU islands holding the compute operators the pair is about;
- the fixed side has fewer NPU partitions and no CPU compute kernel left;
- both sides come from the same network: the input's quantization and (where the network is the
  same) the output's are equal to the last bit, and every convolution weight the fragmented side
  lowered is in the fixed side's TOSA byte for byte, plus only what the fix moved there;
- the pairs cover every kind of fix, two accelerators and two memory modes;
- the truth of each fixed side (partitions, calls, boundary bytes, glue, Vela's cycles per
  partition) is complete and agrees with itself where two readings exist.

The table of truths is printed (pytest -s shows it); benchmarks/bench_whatif.py prints it alone.
"""

from __future__ import annotations

import pytest

import pte_adapter
from tests.support.whatif_pairs import (
    KINDS,
    Truth,
    WhatIfPair,
    program_facts,
    tosa_operators,
    tosa_weights,
    truth,
    whatif_pairs,
)

PAIRS = whatif_pairs()
IDS = [p.name for p in PAIRS]


def _base(operator: str) -> str:
    """`aten::add.out` -> `aten.add` (how whatif_pairs.json names the islands' operators)."""
    return ".".join(operator.replace("::", ".").split(".")[:2])


@pytest.fixture
def truths(whatif_truths: dict[str, Truth]) -> dict[str, Truth]:
    return whatif_truths


def test_the_pairs_cover_every_fix_two_accelerators_and_two_memory_modes() -> None:
    assert sorted({p.kind for p in PAIRS}) == sorted(KINDS)
    sides = [s for p in PAIRS for s in (p.fragmented, p.fixed)]
    assert {s.accelerator.split("-")[1] for s in sides} >= {"u55", "u85"}
    assert len({s.memory_mode for s in sides}) >= 2
    for p in PAIRS:
        # Only the accelerator changes in an other_target pair; everything else keeps the target.
        same = (p.fragmented.accelerator == p.fixed.accelerator) != (p.kind == "other_target")
        assert same, p.name
        if p.kind != "other_target":
            assert p.fragmented.memory_mode == p.fixed.memory_mode, p.name
            assert p.fragmented.system_config == p.fixed.system_config, p.name
        if p.same_network:
            assert p.fragmented.network_sha256 == p.fixed.network_sha256, p.name


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_the_fragmented_side_has_cpu_islands_with_the_operators_the_pair_is_about(
    pair: WhatIfPair,
) -> None:
    facts = program_facts(pair.fragmented.pte)
    assert facts.npu_partitions >= 2
    assert facts.delegate_calls == facts.npu_partitions
    assert facts.compute_kernels, f"{pair.name}: no CPU compute kernel on the fragmented side"
    assert {_base(k) for k in facts.compute_kernels} == set(pair.island_operators)
    # Islands between partitions: one before the first and after the last, one between each two.
    assert facts.cpu_islands == facts.npu_partitions + 1


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_the_fixed_side_has_fewer_partitions_and_no_cpu_compute(pair: WhatIfPair) -> None:
    before, after = program_facts(pair.fragmented.pte), program_facts(pair.fixed.pte)
    assert after.npu_partitions < before.npu_partitions
    assert after.npu_partitions == after.delegate_calls == 1
    assert not after.compute_kernels, after.compute_kernels
    # What stays on the CPU is the input's quantize and the output's dequantize.
    assert sum(after.glue_kernels.values()) == 2
    assert sum(after.glue_kernels.values()) < sum(before.glue_kernels.values())


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_both_sides_are_the_same_network(pair: WhatIfPair) -> None:
    before, after = program_facts(pair.fragmented.pte), program_facts(pair.fixed.pte)
    # Same input, same calibration: the input's quantization is the same to the last bit.
    assert before.input_qparams is not None and before.input_qparams == after.input_qparams
    assert before.output_qparams is not None and after.output_qparams is not None
    if pair.same_network and pair.fragmented.built_by == pair.fixed.built_by:
        # Quantization is calibrated before partitioning, on the float network: the output's
        # range, which every weight shapes, is the same too.
        assert before.output_qparams == after.output_qparams
    elif pair.same_network:
        # Built by another script at another time: float32 calibration on another machine
        # differs in the last bit (examples/README.md).
        assert before.output_qparams[1] == after.output_qparams[1]
        assert before.output_qparams[0] == pytest.approx(after.output_qparams[0], rel=1e-6)
    else:  # the replacement computes the same up to float rounding
        assert before.output_qparams[1] == after.output_qparams[1]
        assert before.output_qparams[0] == pytest.approx(after.output_qparams[0], rel=1e-3)
    if pair.fragmented.artifacts is None:  # the existing example keeps no TOSA
        assert pair.kind == "remove_check", pair.name
        return
    assert pair.fixed.artifacts is not None
    weights_before = tosa_weights(pair.fragmented.artifacts)
    weights_after = tosa_weights(pair.fixed.artifacts)
    assert weights_before, pair.name
    assert not weights_before - weights_after, f"{pair.name}: a weight changed"
    # The fix brings on the NPU: nothing with weights (a check removed, another target), the
    # replacement's window convolution, or the float block's convolutions.
    moved = {
        "remove_check": 0,
        "other_target": 0,
        "replace_operator": 1,
        "quantize": before.compute_kernels["aten::convolution.out"],
    }[pair.kind]
    assert sum((weights_after - weights_before).values()) == moved


def test_the_lrn_replacement_is_lowered_as_a_table_in_one_partition() -> None:
    (pair,) = [p for p in PAIRS if p.kind == "replace_operator"]
    assert pair.fixed.artifacts is not None
    ops = tosa_operators(pair.fixed.artifacts)
    assert len(list(pair.fixed.artifacts.glob("output_tag*.tosa"))) == 1
    assert ops["TABLE"] >= 1 and ops["MUL"] >= 2, ops


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_the_truth_of_the_fixed_side(pair: WhatIfPair, truths: dict[str, Truth]) -> None:
    t = truths[pair.name]
    assert len(t.partitions) == t.facts.npu_partitions == 1
    assert all(p.vela_cycles > 0 and 0 < p.vela_npu_cycles <= p.vela_cycles for p in t.partitions)
    # One partition: every tensor a DelegateCall touches crosses once, and nothing is handed off.
    assert t.handoff_bytes == 0
    assert t.boundary_bytes == t.facts.delegate_io_bytes
    # The same bytes the NPU estimate's boundary cost prices, and the same glue it counts.
    analysis = pte_adapter.analyse(pte_adapter.load(pair.fixed.pte))
    method = analysis.methods[0]
    assert method.estimate is not None and method.estimate.fragmentation is not None
    assert method.estimate.fragmentation.boundary_bytes == t.boundary_bytes
    assert method.summary.cpu_glue_calls == t.glue_kernels


def test_the_fix_removes_boundary_traffic_and_glue(truths: dict[str, Truth]) -> None:
    """Fewer partitions, fewer bytes across their boundaries and fewer glue kernels; the table of
    truths is printed (pytest -s)."""
    rows = [
        f"{'pair':<18} {'kind':<16} {'NPU parts':>9} {'calls -':>7} {'boundary B':>17} "
        f"{'glue':>7} {'Vela cycles after':>17}"
    ]
    for pair in PAIRS:
        after = truths[pair.name]
        before = truth(pair.fragmented)
        assert after.boundary_bytes < before.boundary_bytes, pair.name
        assert after.glue_kernels < before.glue_kernels, pair.name
        rows.append(
            f"{pair.name:<18} {pair.kind:<16} "
            f"{before.facts.npu_partitions:>4}->{after.facts.npu_partitions:<3} "
            f"{before.facts.delegate_calls - after.facts.delegate_calls:>7} "
            f"{before.boundary_bytes:>8}->{after.boundary_bytes:<7} "
            f"{before.glue_kernels:>3}->{after.glue_kernels:<2} {after.vela_cycles:>17}"
        )
    print("\n" + "\n".join(rows))
