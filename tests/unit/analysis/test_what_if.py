"""The what-if of every CPU island (analysis/what_if.py) on the real examples: one per island that
holds a compute kernel, partition counts that follow the merged groups, boundary bytes that a
full recount of the merged partitioning gives too, the fix each example's reasons support, and a
reason that names both causes where the file cannot tell them apart.

Whether the predictions match what the toolchain makes when the fix is actually made is checked
on re-exported pairs in tests/oracle/test_what_if_pairs.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.partitions import Partition, crossings_of
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.analysis.what_if import FIXES, WhatIf
from pte_adapter.backends import CPU
from tests.support.examples import example


def _methods(path: Path) -> list[MethodAnalysis]:
    return [m for m in pte_adapter.open_analysis(path, profile=False).methods if not m.is_constant]


def _full_recount(ma: MethodAnalysis, s: WhatIf) -> tuple[int, int]:
    """(crossings, bytes) of the scenario's partitioning, every read of the method recounted:
    the merged groups one partition each, a dequantize whose float result leaves its group on
    the CPU, and a float that a CPU dequantize made crossing into a delegate as its integer
    input."""
    parts, method = ma.partitions, ma.method
    readers: dict[int, set[int]] = {}
    for edges in parts.dataflow.edges:
        for e in edges:
            if e.producer >= 0:
                readers.setdefault(e.producer, set()).add(e.consumer)
    for e in parts.dataflow.output_edges:
        if e.producer >= 0:
            readers.setdefault(e.producer, set()).add(-1)

    def op(i: int) -> str:
        o = method.instructions[i].op_index
        return method.operators[o].full_name if o is not None else ""

    group_of = {i: g for g in s.groups for i in g}
    new: list[Partition] = []
    partition_of = [0] * len(method.instructions)
    done: set[int] = set()
    for p in parts.partitions:
        if p.index in done:
            continue
        group = group_of.get(p.index, [p.index])
        done.update(group)
        inside = {i for k in group for i in parts.partitions[k].instructions}
        backend = next(
            (parts.partitions[k].backend for k in group if not parts.partitions[k].is_cpu), CPU
        )
        merged = Partition(len(new), backend, 100 + len(new))
        stay = Partition(len(new) + 1, CPU, 100 + len(new))
        for i in sorted(inside):
            leaves = "dequantize" in op(i) and not readers.get(i, set()) <= inside
            (stay if leaves and len(group) > 1 else merged).instructions.append(i)
        for part in (merged, stay):
            if part.instructions:
                part.index = len(new)
                new.append(part)
                for i in part.instructions:
                    partition_of[i] = part.index
    found = crossings_of(method, parts.dataflow, new, partition_of)
    writer = {v: i for i, io in enumerate(parts.dataflow.io) for v in io.output_tensors}
    seen: dict[tuple[int, str, str], int] = {}
    for c in found:
        value, nbytes = c.value, c.nbytes
        w = writer.get(c.value)
        if not c.target.startswith("CPU") and w is not None and "dequantize" in op(w):
            source = parts.dataflow.edges[w][0].value
            value, nbytes = source, method.tensor(source).nbytes  # type: ignore[union-attr]
        seen.setdefault((value, c.direction, c.target), nbytes)
    return len(seen), sum(seen.values())


def test_every_island_with_a_compute_kernel_has_a_what_if(example_pte: Path) -> None:
    for ma in _methods(example_pte):
        parts = ma.partitions
        expected = [p.index for p in parts.cpu_islands if p.compute_ops]
        if not parts.delegate_partitions or not expected:
            assert ma.what_if is None
            continue
        assert ma.what_if is not None
        assert [s.partition for s in ma.what_if.islands] == expected
        for s in ma.what_if.islands:
            assert s.fix in FIXES
            assert s.text


def test_partition_counts_follow_the_merged_groups(example_pte: Path) -> None:
    for ma in _methods(example_pte):
        if ma.what_if is None:
            continue
        parts = ma.partitions
        scenarios = [*ma.what_if.islands, *([ma.what_if.all] if ma.what_if.all else [])]
        for s in scenarios:
            delegates_in = [sum(not parts.partitions[i].is_cpu for i in g) for g in s.groups]
            assert all(n >= 1 for n in delegates_in)
            assert s.delegate_calls_removed == sum(n - 1 for n in delegates_in)
            assert (
                s.npu_partitions_after == len(parts.delegate_partitions) - s.delegate_calls_removed
            )
            for g in s.groups:  # one contiguous run of partitions, holding an island
                assert g == list(range(g[0], g[-1] + 1))
                assert any(parts.partitions[i].is_cpu for i in g)
            assert set(s.merges) >= {i for i in s.islands if any(i in g for g in s.groups)}


def test_removed_crossings_match_a_full_recount(example_pte: Path) -> None:
    """The analysis recounts only the reads around the merged groups; recounting every read of
    the method must give the same numbers."""
    for ma in _methods(example_pte):
        if ma.what_if is None:
            continue
        before = (len(ma.partitions.crossings), sum(c.nbytes for c in ma.partitions.crossings))
        scenarios = [*ma.what_if.islands, *([ma.what_if.all] if ma.what_if.all else [])]
        for s in scenarios:
            crossings, nbytes = _full_recount(ma, s)
            assert (s.crossings_removed, s.boundary_bytes_removed) == (
                before[0] - crossings,
                before[1] - nbytes,
            ), (example_pte.name, s.partition)


def test_residual_adds_fixed_leave_one_partition() -> None:
    """mv2_residual_cpu_ethosu85: ten adds kept off the NPU by an `additional_checks` entry; with
    all of them on the NPU one partition is left, and only the method's input and output cross."""
    (ma,) = _methods(example("mv2_residual_cpu_ethosu85"))
    assert ma.what_if is not None and ma.what_if.all is not None
    every = ma.what_if.all
    assert len(ma.what_if.islands) == 10
    assert every.npu_partitions_after == 1 and every.delegate_calls_removed == 10
    first, last = ma.partitions.partitions[0], ma.partitions.partitions[-1]
    assert first.is_cpu and last.is_cpu and not first.compute_ops and not last.compute_ops
    remaining = first.bytes_out + last.bytes_in  # the quantized input and output
    total = sum(c.nbytes for c in ma.partitions.crossings)
    assert every.boundary_bytes_removed == total - remaining
    glue = sum(sum(p.glue_ops.values()) for p in ma.partitions.cpu_islands[1:-1])
    assert every.glue_kernels_removed == glue
    assert every.fix == "quantize_or_remove_check"
    assert every.npu_cycles_after is not None and every.npu_cycles_before is not None
    assert every.island_cycles and every.boundary_cycles_removed
    assert every.npu_cycles_after == (
        every.npu_cycles_before + every.island_cycles - every.boundary_cycles_removed
    )
    assert all("ELEMENTWISE ADD" in p for p in every.priced_as) and not every.not_priced


def test_a_float_kernel_between_dequantize_and_quantize_names_both_causes() -> None:
    """The residual adds were quantized and refused by a check; a float add between a dequantize
    and a quantize looks the same in the .pte as one never quantized, so the reason says both."""
    (ma,) = _methods(example("mv2_residual_cpu_ethosu85"))
    kinds = Counter(r.kind for r in ma.reasons)
    assert kinds == Counter({"not_quantized_or_check": 10})
    for r in ma.reasons:
        assert "either it was not quantized" in r.text and "cannot tell which" in r.text


def test_lrn_island_names_its_layer_and_prices_the_channel_window() -> None:
    (ma,) = _methods(example("mv2_lrn_ethosu85"))
    assert ma.what_if is not None
    (s,) = ma.what_if.islands
    assert s.fix == "replace_operator"
    assert "aten.avg_pool3d" in s.text and "features.4 LocalResponseNorm" in s.text
    assert s.npu_partitions_after == 1 and s.delegate_calls_removed == 1
    assert s.priced_as == ["aten.avg_pool3d as CONV 1x1 28->24"]
    assert s.island_cycles and not s.lower_bound


def test_xnnpack_what_if_has_partitioning_but_no_npu_time() -> None:
    (ma,) = _methods(example("tiny_gpt_xnnpack"))
    assert ma.what_if is not None and ma.what_if.all is not None
    for s in ma.what_if.islands:
        assert s.npu_cycles_after is None and s.island_cycles is None
        assert any("no cost model for XnnpackBackend" in n for n in s.notes)
        assert s.cpu_time_removed_us is None


@pytest.mark.parametrize("name", ["undelegated", "two_methods", "cond"])
def test_no_delegate_no_what_if(name: str) -> None:
    for ma in _methods(example(name)):
        assert ma.what_if is None


def test_past_the_island_limit_each_island_gets_its_fix_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A method of more islands than MAX_ISLAND_SCENARIOS (lowered here to keep the test quick)
    gets no scenario per island: each its fix, and the scenario of them all fixed at once,
    which is the same as below the limit (issue 44: a scenario each made the what-if quadratic)."""
    import pte_adapter.analysis.what_if as what_if
    from tests.support.hostile_programs import ethosu_with_islands

    pte = ethosu_with_islands(tmp_path, 30)
    (below,) = _methods(pte)
    assert below.what_if is not None and len(below.what_if.islands) == 30
    assert not below.what_if.summarised
    monkeypatch.setattr(what_if, "MAX_ISLAND_SCENARIOS", 20)
    (above,) = _methods(pte)
    assert above.what_if is not None and above.what_if.all is not None
    assert above.what_if.islands == []
    fixes = [(s.partition, s.fix, s.text) for s in below.what_if.islands]
    assert [(f.partition, f.fix, f.text) for f in above.what_if.summarised] == fixes
    assert above.what_if.all == below.what_if.all
    assert above.what_if.summarised_fixes == dict(Counter(f for _, f, _ in fixes))
