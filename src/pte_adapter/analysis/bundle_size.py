"""Where the bytes of a BundledProgram go: the bundle's own parts around the program inside.

Every byte of the bundle file is in exactly one leaf: the 8-byte header (root offset, `BP08`), the
program (the `.pte` inside, broken down by `size.py` exactly as a `.pte` of its own, its offsets
moved to the bundle's), each test case's tensor data, and the rest of the bundle's FlatBuffer
(tables, vector lengths, alignment padding).
"""

from __future__ import annotations

from dataclasses import replace

from pte_adapter.analysis.size import SizePart, SizeReport, cover, size_report
from pte_adapter.container.bundle import ROOT_HEADER_BYTES, BundledTensor, BundleFile
from pte_adapter.program.model import Program, dtype_name
from pte_adapter.wording import shape_text


def file_size_report(program: Program) -> SizeReport:
    """The byte breakdown of the file the program was read from: a `.pte`, or a bundle."""
    if program.bundle is None:
        return size_report(program)
    return bundle_size_report(program, program.bundle)


def _moved(part: SizePart, by: int) -> SizePart:
    return replace(part, offset=part.offset + by, children=[_moved(c, by) for c in part.children])


def _test_data_parts(bundle: BundleFile) -> list[SizePart]:
    parts: list[SizePart] = []
    for suite in bundle.suites:
        for case in suite.test_cases:
            for what, values in (
                ("input", case.inputs),
                ("expected output", case.expected_outputs),
            ):
                for i, v in enumerate(values):
                    if not isinstance(v, BundledTensor) or v.data is None or not v.data.size:
                        continue
                    shape = shape_text(v.sizes)
                    parts.append(
                        SizePart(
                            "bundled_test_data",
                            f"{suite.method_name} test case {case.index} {what} {i}: "
                            f"{shape} {dtype_name(v.scalar_type)}",
                            v.data.offset,
                            v.data.size,
                            detail={"method": suite.method_name, "test_case": case.index},
                        )
                    )
    return parts


def bundle_size_report(program: Program, bundle: BundleFile) -> SizeReport:
    inner = size_report(program)
    base = bundle.program.offset
    program_part = _moved(inner.root, base)
    program_part.kind = "bundled_program"
    program_part.name = "bundled program (the .pte inside, 'ET12')"
    problems = list(inner.problems)
    root = SizePart("file", bundle.name, 0, bundle.size)
    root.children = [
        SizePart("bundle_header", "header (root offset, 'BP08')", 0, ROOT_HEADER_BYTES),
        program_part,
        *_test_data_parts(bundle),
    ]
    cover(root, "bundle_flatbuffer", "bundle FlatBuffer (tables, vectors, alignment)", problems)
    constants = [
        replace(c, offset=c.offset + base) if c.offset is not None else c for c in inner.constants
    ]
    return SizeReport(
        file=bundle.name,
        file_size=bundle.size,
        root=root,
        constants=constants,
        named_data=inner.named_data,
        external=inner.external,
        problems=problems,
    )
