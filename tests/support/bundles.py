"""BundledPrograms written by ExecuTorch's own writer around an example `.pte`, for tests.

`write_bundle` uses `BundledProgram(None, suites, pte_file_path=...)` and
`serialize_from_bundled_program_to_flatbuffer`: the real serializer, which skips its validation when
the program comes from a file, so a test can also bundle cases that do not fit the method (as a
stale bundle would) and check that the adapter says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.examples import oracle

Case = tuple[list[Any], list[Any]]  # (inputs, expected outputs): torch tensors or int/bool/float


def fitting_cases(pte: Path, n: int = 1, seed: int = 0) -> dict[str, list[Case]]:
    """Per method, `n` cases of random tensors shaped and typed like its inputs and outputs (as
    ExecuTorch's deserializer reads the program)."""
    import torch
    from executorch.exir.tensor import get_scalar_type

    program: Any = oracle(pte).program  # type: ignore[attr-defined]
    g = torch.Generator().manual_seed(seed)

    def like(plan: Any, index: int) -> Any:
        t = plan.values[index].val
        dtype = get_scalar_type(t.scalar_type)
        if dtype.is_floating_point:
            return torch.randn(*t.sizes, generator=g).to(dtype)
        return torch.zeros(*t.sizes, dtype=dtype)

    return {
        plan.name: [
            ([like(plan, i) for i in plan.inputs], [like(plan, i) for i in plan.outputs])
            for _ in range(n)
        ]
        for plan in program.execution_plan
    }


def write_bundle(pte: Path, out: Path, cases: dict[str, list[Case]] | None = None) -> Path:
    """`out`: a bundle of `pte` with `cases` (default: one fitting case per method)."""
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    suites = [
        MethodTestSuite(
            method_name=name,
            test_cases=[MethodTestCase(inputs=i, expected_outputs=o) for i, o in method_cases],
        )
        for name, method_cases in (cases if cases is not None else fitting_cases(pte)).items()
    ]
    bundle = BundledProgram(None, suites, pte_file_path=str(pte))
    out.write_bytes(serialize_from_bundled_program_to_flatbuffer(bundle))
    return out
