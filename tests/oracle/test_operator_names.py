"""The two spellings of an operator's name (`pte_adapter/operator_names.py`) against torch's own:
each kernel a program calls, looked up in `torch.ops`, has the schema name `kernel_base` gives
(`aten::add`) and prints as a graph target (`aten.add.out`, as the ETRecord records it) whose
`namespace.name` is what `target_base` gives, from either spelling, `torch.ops.` before it or not."""

from __future__ import annotations

import pte_adapter
from pte_adapter.operator_names import kernel_base, target_base
from tests.support.examples import example

# ATen, quantized_decomposed and cortex_m kernels, from the three export flows that call them.
PROGRAMS = ("mv2_lrn_ethosu85", "xnnpack_lrn", "lrn_cortex_m_qdq_ethosu85")


def test_both_spellings_name_the_operator_torch_names() -> None:
    import executorch.backends.cortex_m.passes  # registers the cortex_m:: operators
    import executorch.kernels.quantized  # noqa: F401  (quantized_decomposed out variants)
    import torch

    namespaces: set[str] = set()
    for stem in PROGRAMS:
        for method in pte_adapter.load(example(stem)).methods:
            for op in method.operators:
                ns, _, name = op.name.partition("::")
                overload = getattr(getattr(getattr(torch.ops, ns), name), op.overload or "default")
                target = str(overload)  # "aten.add.out"
                assert kernel_base(op.full_name) == overload._schema.name, op.full_name
                expected = target.rsplit(".", 1)[0]
                assert target_base(op.full_name) == expected, op.full_name
                assert target_base(target) == target_base(f"torch.ops.{target}") == expected
                namespaces.add(ns)
    assert {"aten", "quantized_decomposed", "cortex_m"} <= namespaces
