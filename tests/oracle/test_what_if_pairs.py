"""The what-if's predictions, made from the fragmented `.pte` alone, against what the real
toolchain made when the fix was actually made (examples/build_whatif_pairs.py: the same network
re-exported with the fix; the fixed side's truth from ExecuTorch's deserializer and Vela,
tests/support/whatif_pairs.py):

- the fix names the change (or, where the .pte cannot tell it from another, both);
- NPU partitions and delegate calls exactly, boundary bytes exactly, glue kernels exactly;
- NPU cycles priced Vela's way within ±15 % of Vela's own estimate of the fixed program;
- for another accelerator (other_target) no NPU time is claimed.
"""

from __future__ import annotations

import pytest

import pte_adapter
from pte_adapter.analysis.what_if import WhatIf
from tests.support.whatif_pairs import Truth, WhatIfPair, truth, whatif_pairs

PAIRS = whatif_pairs()
IDS = [p.name for p in PAIRS]
TOLERANCE = 0.15
# The fix the pair made -> what the what-if may say: where the .pte cannot tell a check from a
# missing quantization (a float kernel between its own dequantize and quantize), both.
MAY_SAY = {
    "remove_check": {"remove_check", "quantize_or_remove_check"},
    "quantize": {"quantize", "quantize_or_remove_check"},
    "replace_operator": {"replace_operator"},
    "other_target": {"other_target"},
}


def _prediction(pair: WhatIfPair) -> WhatIf:
    ma = pte_adapter.open_analysis(pair.fragmented.pte, profile=False).method("forward")
    assert ma is not None and ma.what_if is not None and ma.what_if.all is not None
    return ma.what_if.all


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_the_fix_is_the_one_made(pair: WhatIfPair) -> None:
    ma = pte_adapter.open_analysis(pair.fragmented.pte, profile=False).method("forward")
    assert ma is not None and ma.what_if is not None
    for s in ma.what_if.islands:
        assert s.fix in MAY_SAY[pair.kind], (s.partition, s.fix, s.text)


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_partitioning_predicted_exactly(pair: WhatIfPair) -> None:
    predicted = _prediction(pair)
    before, after = truth(pair.fragmented), truth(pair.fixed)
    assert predicted.npu_partitions_after == after.facts.npu_partitions
    assert (
        predicted.delegate_calls_removed == before.facts.delegate_calls - after.facts.delegate_calls
    )
    assert predicted.boundary_bytes_removed == before.boundary_bytes - after.boundary_bytes
    assert predicted.glue_kernels_removed == before.glue_kernels - after.glue_kernels


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_npu_cycles_within_15_percent_of_vela_on_the_fixed_program(
    pair: WhatIfPair, whatif_truths: dict[str, Truth]
) -> None:
    predicted = _prediction(pair)
    vela = whatif_truths[pair.name].vela_cycles
    if pair.kind == "other_target":
        assert predicted.npu_cycles_after is None and predicted.npu_cycles_after_as_compiler is None
        assert any("not predicted" in n for n in predicted.notes)
        return
    assert predicted.npu_cycles_after_as_compiler is not None and not predicted.lower_bound
    error = predicted.npu_cycles_after_as_compiler / vela - 1
    assert abs(error) <= TOLERANCE, (
        f"{pair.name}: {predicted.npu_cycles_after_as_compiler} vs {vela}"
    )
