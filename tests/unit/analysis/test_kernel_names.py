"""The per-method lists the analysis makes once instead of asking per instruction say what the
per-instruction questions say, on every example: `kernel_names` is `Method.kernel_operator` of
each instruction, and `Dataflow.readers` is `instruction_readers`."""

from __future__ import annotations

from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.analysis.dataflow import instruction_readers
from pte_adapter.analysis.partitions import kernel_names, partition_method
from tests.support.examples import EXAMPLE_PTES


@pytest.mark.parametrize("pte", EXAMPLE_PTES, ids=lambda p: p.stem)
def test_made_once_is_asked_each_time(pte: Path) -> None:
    program = pte_adapter.load(pte)
    for method in program.methods:
        names = kernel_names(method)
        assert names == [method.kernel_operator(i) for i in range(len(method.instructions))]
        flow = partition_method(method).dataflow
        assert flow.readers == instruction_readers(flow)
        assert flow.readers is flow.readers  # made once
