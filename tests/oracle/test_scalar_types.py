"""The ScalarType table (`program.model.SCALAR_TYPES`) against torch and ExecuTorch's exporter.

Values and schema names are generated from `scalar_type.fbs`; the display names (torch's dtype
names) and bytes per element are typed by hand, so they are checked here against torch's own
dtypes and the exporter's dtype -> ScalarType table.
"""

from __future__ import annotations

import torch
from executorch.exir.tensor import scalar_type_table

from pte_adapter.container._generated.program_schema import ScalarType
from pte_adapter.program.model import SCALAR_TYPES


def test_every_schema_scalar_type_has_a_name_and_a_size() -> None:
    for t in ScalarType:
        name, size = SCALAR_TYPES[t.value]
        assert size > 0, f"ScalarType.{t.name} has no entry in program/model.py _ELEMENT_TYPES"
        assert isinstance(getattr(torch, name, None), torch.dtype), (t.name, name)


def test_names_and_sizes_are_torchs() -> None:
    for value, (name, size) in SCALAR_TYPES.items():
        dtype = getattr(torch, name)
        assert dtype.itemsize == size, name
        # Where the exporter maps the dtype, it writes this value.
        if dtype in scalar_type_table:
            assert int(scalar_type_table[dtype]) == value, name
    mapped = {int(v) for v in scalar_type_table.values()}
    assert mapped <= set(SCALAR_TYPES)
