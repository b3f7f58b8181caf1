#!/usr/bin/env python3
"""Generate the BundledProgram schema module from the FlatBuffers schema of the pinned ExecuTorch
wheel: `src/pte_adapter/container/_generated/bundled_program_schema.py` from
`executorch/devtools/bundled_program/serialize/bundled_program_schema.fbs` (+ its
`scalar_type.fbs`), the files ExecuTorch's bundled-program serializer compiles
(`devtools/bundled_program/serialize/__init__.py`).

A bundle (`.bpte`, written by `serialize_from_bundled_program_to_flatbuffer`) wraps a whole `.pte`
with test cases per method; `container/bundle.py` reads it by these slots. The parser and the
rendering are `gen_program_schema.py`'s (same subset of the FlatBuffers grammar, same output
shape), so one change of the grammar is one change.

Usage: python scripts/gen_bundled_program_schema.py [--check]
"""

from __future__ import annotations

import sys

from _codegen import emit, parser
from gen_program_schema import OUT_DIR, Target, render

TARGET = Target(
    OUT_DIR / "bundled_program_schema.py",
    "executorch/devtools/bundled_program/serialize/bundled_program_schema.fbs",
    "ExecuTorch BundledProgram schema (`.bpte`): identifier, union tags, table slots",
)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    return emit({TARGET.out: render(TARGET, "gen_bundled_program_schema.py")}, args.check)


if __name__ == "__main__":
    sys.exit(main())
