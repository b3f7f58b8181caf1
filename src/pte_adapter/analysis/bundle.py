"""The test cases of a BundledProgram, per method, checked against the method they test.

What the runtime does with them (ExecuTorch `devtools/bundled_program/bundled_program.cpp`):
`load_bundled_input` copies a case's inputs into the method's inputs, and `verify_method_outputs`
compares each output with the expected one. A tensor must have the method's dtype and shape (the
runtime refuses a mismatch, and aborts when an input's data are shorter than the method's tensor);
float, double and half elements compare within `atol + rtol * |expected|`, every other dtype
bit for bit. The tolerances are the runner's, never in the bundle: `TOLERANCES` says whose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pte_adapter.container.bundle import (
    BundledScalar,
    BundledTensor,
    BundledTestCase,
    BundledValue,
    BundleFile,
)
from pte_adapter.program.model import SCALAR_TYPES, Method, Tensor, ValueKind, dtype_name
from pte_adapter.wording import shape_text

# (runner, rtol, atol): the runners' defaults, from their sources (ExecuTorch 1.5.1).
TOLERANCES: Final = (
    ("ExecuTorch verify_method_outputs (bundled_program.h default)", 1e-5, 1e-8),
    ("Arm arm_executor_runner (ET_RTOL / ET_ATOL, CMake default)", 0.01, 0.01),
)
TOLERANT_DTYPES: Final = ("float32", "float64", "float16")  # compared within a tolerance
_SCALAR_KINDS: Final = {"int": ValueKind.INT, "bool": ValueKind.BOOL, "double": ValueKind.DOUBLE}


@dataclass(frozen=True)
class ValueFacts:
    """One bundled value as a person reads it."""

    kind: str  # tensor | int | bool | double | unknown
    dtype: str = ""  # tensors: "float32"
    shape: tuple[int, ...] = ()
    data_bytes: int = 0  # tensors: bytes of data stored in the bundle
    value: int | float | bool | None = None  # scalars

    @property
    def text(self) -> str:
        if self.kind == "tensor":
            return f"{shape_text(self.shape)} {self.dtype}"
        if self.kind == "unknown":
            return "unknown value"
        return f"{self.kind} {self.value}"


@dataclass
class CaseFacts:
    index: int
    inputs: list[ValueFacts]
    expected_outputs: list[ValueFacts]


@dataclass
class MethodTests:
    """The bundled test cases of one method."""

    method: str
    cases: list[CaseFacts]
    problems: list[str] = field(default_factory=list)  # where a case does not fit the method

    @property
    def compared_within_tolerance(self) -> bool:
        """Some expected output is a float tensor, which the runner compares within a tolerance."""
        return any(
            v.kind == "tensor" and v.dtype in TOLERANT_DTYPES
            for c in self.cases
            for v in c.expected_outputs
        )


@dataclass
class BundleAnalysis:
    file: str
    size: int
    version: int
    program_offset: int
    program_size: int
    methods: dict[str, MethodTests]  # every method of the program, tested or not
    problems: list[str]


def value_facts(v: BundledValue) -> ValueFacts:
    if isinstance(v, BundledTensor):
        return ValueFacts(
            "tensor",
            dtype_name(v.scalar_type),
            tuple(v.sizes),
            v.data.size if v.data is not None else 0,
        )
    if isinstance(v, BundledScalar):
        return ValueFacts(v.kind, value=v.value)
    return ValueFacts("unknown")


def _fits(v: BundledValue, method: Method, value_index: int) -> str:
    """'' when the bundled value fits the method's value, else what differs."""
    target = method.values[value_index] if 0 <= value_index < len(method.values) else None
    if target is None:
        return f"the method's value {value_index} does not exist"
    if isinstance(v, BundledTensor):
        t = target.payload
        if not isinstance(t, Tensor):
            return f"a tensor, where the method has a {target.kind.value}"
        mine = value_facts(v)
        if (mine.dtype, list(mine.shape)) != (t.dtype, list(t.sizes)):
            return f"{mine.text}, where the method has {shape_text(t.sizes)} {t.dtype}"
        per = SCALAR_TYPES.get(v.scalar_type, ("", 0))[1]
        if v.data is not None and per and v.data.size < t.nbytes:
            return f"{mine.text} with {v.data.size} bytes of data, where it needs {t.nbytes}"
        return ""
    if isinstance(v, BundledScalar):
        if target.kind is not _SCALAR_KINDS[v.kind]:
            return f"a {v.kind}, where the method has a {target.kind.value}"
        return ""
    return f"a value of union tag {v.tag}, which ExecuTorch 1.5.1 does not know"


def _check_case(case: BundledTestCase, method: Method) -> list[str]:
    out: list[str] = []
    where = f"test case {case.index}"
    for what, values, slots in (
        ("inputs", case.inputs, method.inputs),
        ("expected outputs", case.expected_outputs, method.outputs),
    ):
        if what == "expected outputs" and not values:
            continue  # nothing to compare: the runner checks only that the method ran
        if len(values) != len(slots):
            out.append(f"{where} has {len(values)} {what}; the method has {len(slots)}")
            continue
        for i, (v, slot) in enumerate(zip(values, slots, strict=False)):
            why = _fits(v, method, slot)
            if why:
                out.append(f"{where}, {what[:-1]} {i}: {why}")
    return out


def analyse_bundle(bundle: BundleFile, methods: list[Method]) -> BundleAnalysis:
    """Each method's test cases and whether they fit it; a suite for a method the program does
    not have is a problem of the bundle."""
    by_name = {m.name: m for m in methods}
    result = BundleAnalysis(
        bundle.name,
        bundle.size,
        bundle.version,
        bundle.program.offset,
        bundle.program.size,
        {m.name: MethodTests(m.name, []) for m in methods},
        list(bundle.problems),
    )
    for suite in bundle.suites:
        method = by_name.get(suite.method_name)
        if method is None:
            result.problems.append(
                f"the bundle has {len(suite.test_cases)} test case(s) for method "
                f"{suite.method_name!r}, which the program does not have"
            )
            continue
        tests = result.methods[method.name]
        for case in suite.test_cases:
            tests.cases.append(
                CaseFacts(
                    case.index,
                    [value_facts(v) for v in case.inputs],
                    [value_facts(v) for v in case.expected_outputs],
                )
            )
            tests.problems.extend(_check_case(case, method))
    return result
