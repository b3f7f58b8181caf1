"""A BundledProgram (`.bpte`): a whole `.pte` wrapped with test cases for its methods.

Format (ExecuTorch `devtools/bundled_program/serialize/bundled_program_schema.fbs`, generated into
`_generated/bundled_program_schema.py`; written by `serialize_from_bundled_program_to_flatbuffer`):
a FlatBuffer whose identifier `BP08` sits at bytes 4-7, like a `.pte`'s `ET12`. Its root holds

- `version`: the bundled-program schema version (ExecuTorch 1.5.1 writes 2);
- `method_test_suites`: per method name, test cases of input values and expected output values
  (tensors with their bytes, or an int, bool or double);
- `program`: the serialized `.pte`, byte for byte, as a `[ubyte]` vector aligned to 32 bytes.

The runtime (`bundled_program::get_program_data`) runs the inner program as it is; a test case
is loaded into the method's inputs and its outputs compared with the expected ones, within a
tolerance the runner chooses (it is not in the file).

A bundle whose root or program cannot be read raises `PteFormatError`; test cases that cannot be
read become `problems` of the bundle (the program inside still opens). Nothing is copied: tensor
data are spans of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pte_adapter.container._generated import bundled_program_schema as B
from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.container.pte import Span
from pte_adapter.errors import PteFormatError

BUNDLE_IDENTIFIER = B.FILE_IDENTIFIER
ROOT_HEADER_BYTES = 8  # u32 root offset + identifier
VECTOR_LENGTH_BYTES = 4  # the u32 before a vector's elements


@dataclass(frozen=True)
class BundledTensor:
    scalar_type: int  # ScalarType value
    sizes: list[int]
    dim_order: list[int]
    data: Span | None  # where its bytes are in the bundle file; None when it has none

    kind = "tensor"


@dataclass(frozen=True)
class BundledScalar:
    kind: str  # "int" | "bool" | "double"
    value: int | bool | float


@dataclass(frozen=True)
class BundledUnknown:
    """A value whose union tag this schema does not know (a newer writer), or with no value."""

    tag: int
    kind = "unknown"


BundledValue = BundledTensor | BundledScalar | BundledUnknown


@dataclass
class BundledTestCase:
    index: int
    inputs: list[BundledValue]
    expected_outputs: list[BundledValue]


@dataclass
class BundledTestSuite:
    method_name: str
    test_cases: list[BundledTestCase]


@dataclass
class BundleFile:
    """The bundle's own parts; the program inside is read by `PteFile(bundle.program_bytes)`."""

    name: str
    size: int
    version: int
    program: Span  # the inner `.pte` in the bundle
    program_bytes: memoryview
    suites: list[BundledTestSuite] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # test cases that could not be read

    @property
    def program_name(self) -> str:
        """The name the inner program's own messages use."""
        return f"{self.name} (bundled program)"

    def program_error(self, e: PteFormatError) -> PteFormatError:
        """An error of the inner program, said of the bundle file: the byte is the file's, and
        the message says where the program starts."""
        start, end = self.program.offset, self.program.end
        at = f", at its byte {e.offset}" if e.offset is not None else ""
        return PteFormatError(
            f"in the bundled program (bytes {start}-{end}{at}): {e.what}",
            part=self.name,
            offset=start + e.offset if e.offset is not None else start,
        )


@contextmanager
def reading_program_of(bundle: BundleFile | None) -> Iterator[None]:
    """Errors raised while the inner program is read are said of the bundle file (no-op without a
    bundle)."""
    try:
        yield
    except PteFormatError as e:
        if bundle is None:
            raise
        raise bundle.program_error(e) from e


def is_bundle(data: memoryview | bytes) -> bool:
    """The file identifier says BundledProgram, whatever the file is called."""
    return len(data) >= ROOT_HEADER_BYTES and bytes(data[4:8]) == BUNDLE_IDENTIFIER


def read_bundle(data: memoryview | bytes, name: str) -> BundleFile:
    """The bundle's version, test suites and the span of its program. Raises `PteFormatError`
    when the root or the program cannot be read."""
    view = memoryview(data)
    fb = FlatBuffer(view, f"{name} (bundle)")
    root = fb.root(BUNDLE_IDENTIFIER)
    found = root.bytes_span(B.BundledProgram.program, "program")
    if found is None or found[1] == 0:
        raise PteFormatError(
            "the bundle holds no program (BundledProgram.program is empty)",
            part=f"{name} (bundle)",
            offset=root.pos,
        )
    span = Span(*found)
    bundle = BundleFile(
        name=name,
        size=len(view),
        version=root.int(B.BundledProgram.version, "I"),
        program=span,
        program_bytes=view[span.offset : span.end],
    )
    try:
        for suite in root.iter_tables(B.BundledProgram.method_test_suites, "method_test_suites"):
            bundle.suites.append(_read_suite(suite))
    except PteFormatError as e:
        bundle.problems.append(f"bundled test cases not read past this point: {e}")
    return bundle


def _read_suite(t: Table) -> BundledTestSuite:
    slots = B.BundledMethodTestSuite
    suite = BundledTestSuite(t.string(slots.method_name, "method_name") or "", [])
    for i, case in enumerate(t.iter_tables(slots.test_cases, "test_cases")):
        suite.test_cases.append(
            BundledTestCase(
                i,
                [
                    _read_value(v)
                    for v in case.iter_tables(B.BundledMethodTestCase.inputs, "inputs")
                ],
                [
                    _read_value(v)
                    for v in case.iter_tables(
                        B.BundledMethodTestCase.expected_outputs, "expected_outputs"
                    )
                ],
            )
        )
    return suite


def _read_value(t: Table) -> BundledValue:
    tag, val = t.union(B.Value.val, "val")
    if val is None:
        return BundledUnknown(tag)
    if tag == B.ValueUnion.Tensor:
        slots = B.Tensor
        data = val.bytes_span(slots.data, "data")
        return BundledTensor(
            scalar_type=val.int(slots.scalar_type, "b"),
            sizes=val.ints(slots.sizes, "i", "sizes"),
            dim_order=val.ints(slots.dim_order, "B", "dim_order"),
            data=Span(*data) if data is not None else None,
        )
    if tag == B.ValueUnion.Int:
        return BundledScalar("int", val.int(B.Int.int_val, "q"))
    if tag == B.ValueUnion.Bool:
        return BundledScalar("bool", val.bool(B.Bool.bool_val))
    if tag == B.ValueUnion.Double:
        return BundledScalar("double", val.float(B.Double.double_val, "d"))
    return BundledUnknown(tag)
