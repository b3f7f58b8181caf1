"""Group names (render/group_facts.py) say what each partition holds, on every example: unique, printable
ASCII without "/", starting with the partition's own name, and naming what the analysis found."""

from __future__ import annotations

from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.operator_names import kernel_base
from pte_adapter.render.group_facts import (
    MAX_DETAIL,
    ascii_name,
    block_and_run_names,
    drawn_group_names,
    partition_group_names,
    short_partition_name,
)
from pte_adapter.wording import us_text
from tests.support.examples import EXAMPLE_PTES, example


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_names_are_unique_drawable_and_start_with_the_partition(pte: Path) -> None:
    for ma in pte_adapter.open_analysis(pte, profile=False).methods:
        names = partition_group_names(ma)
        assert len(set(names)) == len(names)
        for part, name in zip(ma.partitions.partitions, names, strict=True):
            assert name.startswith(part.name)
            assert all(" " <= c <= "~" for c in name) and "/" not in name, name
            for op in part.compute_ops:
                # The most frequent compute operator is always named.
                top = max(part.compute_ops.values())
                if part.compute_ops[op] == top and len(part.compute_ops) == 1:
                    assert op.split(".")[0] in name, (op, name)
            if not part.is_cpu and part.inner_ops is not None:
                assert f" - {part.inner_ops} op" in name
            if ma.estimate is not None and part.index in ma.estimate.per_partition_us:
                assert name.endswith(us_text(ma.estimate.per_partition_us[part.index]))
        for b, label in zip(ma.blocks, block_and_run_names(ma)[0], strict=True):
            assert label.startswith(b.name + " | ") and "/" not in label


def test_the_lrn_island_names_its_operator_and_layer() -> None:
    ma = pte_adapter.open_analysis(example("mv2_lrn_ethosu85")).methods[0]
    names = partition_group_names(ma)
    assert names[2] == "CPU island 2 - aten::avg_pool3d (features.4 LocalResponseNorm)"
    assert names[0] == "CPU island 1 - glue (quantize_per_tensor)"
    assert names[1].startswith("NPU partition 1 (EthosUBackend) - 16 ops, ")


def test_without_an_etrecord_an_island_names_its_operator_only() -> None:
    program = pte_adapter.load(example("mv2_lrn_ethosu85"), sidecars=False)
    names = partition_group_names(pte_adapter.analyse(program).methods[0])
    assert names[2] == "CPU island 2 - aten::avg_pool3d"


def test_long_operator_lists_are_counted_not_spelled() -> None:
    ma = pte_adapter.open_analysis(example("undelegated")).methods[0]
    (name,) = partition_group_names(ma)
    detail = name.split(" - ", 1)[1]
    shown, more = detail.rsplit(" +", 1)
    # As many as fit (at least one), the rest counted.
    assert len(shown) <= MAX_DETAIL or ", " not in shown
    kinds = len({op.split(".")[0] for op in ma.partitions.partitions[0].compute_ops})
    assert int(more) + len(shown.split(", ")) == kinds


def test_ascii_and_times() -> None:
    assert ascii_name("features.0 … features.4/x") == "features.0 ... features.4_x"
    assert us_text(812.34) == "812 us" and us_text(1868.8) == "1.87 ms"


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def test_inside_a_block_names_are_short_and_unique(pte: Path) -> None:
    """Drawn by the thousand in a large program, a partition's group inside a block is "XNNPACK 7 -
    5 ops" or "CPU 8 - mul x2": its backend's short prefix and number, then what it holds; outside
    every block, the full name."""
    for ma in pte_adapter.open_analysis(pte, profile=False).methods:
        full, drawn = partition_group_names(ma), drawn_group_names(ma)
        assert len(set(drawn)) == len(drawn)
        in_block = {i for b in ma.blocks for i in b.partitions}
        for part in ma.partitions.partitions:
            name = drawn[part.index]
            if part.index not in in_block:
                assert name == full[part.index]
                continue
            short = short_partition_name(part)
            assert name == short or name.startswith(short + " - "), name
            assert len(name) < len(full[part.index]), (name, full[part.index])
            assert all(" " <= c <= "~" for c in name) and "/" not in name, name
            if part.is_cpu:
                ops = dict(part.compute_ops) or dict(part.glue_ops)
                if ops:
                    # the most frequent operator, without its namespace and overload
                    top = max(ops.values())
                    named = [kernel_base(op).split("::")[-1] for op, n in ops.items() if n == top]
                    assert any(op in name for op in named), name
                    assert "aten::" not in name
            elif part.inner_ops is not None:
                assert f" - {part.inner_ops} op" in name
