"""The files a program came with, as people read them: a BundledProgram's test cases (Model
Explorer graph attributes of each method, `summary` text lines and the `bundle` object of
`summary --json`, docs/json.md), and which ETRecord the view uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.wording import bytes_text

if TYPE_CHECKING:  # a bundle's analysis is imported when the program came in one
    from pte_adapter.analysis.bundle import BundleAnalysis, MethodTests, ValueFacts

CASES_SHOWN: Final = 8  # test cases listed one by one; the rest are counted


def tolerance_text() -> str:
    from pte_adapter.analysis.bundle import TOLERANCES

    runners = "; ".join(f"{name}: rtol {rtol:g}, atol {atol:g}" for name, rtol, atol in TOLERANCES)
    return (
        "not in the bundle; the runner sets it ("
        + runners
        + "). Float outputs must lie within atol + rtol x |expected|, other dtypes match bit for bit"
    )


def _values(values: list[ValueFacts]) -> str:
    return ", ".join(v.text for v in values) or "none"


def _case_text(inputs: list[ValueFacts], outputs: list[ValueFacts]) -> str:
    data = sum(v.data_bytes for v in inputs + outputs)
    return f"inputs {_values(inputs)} → expected {_values(outputs)}; {bytes_text(data)} of data"


def bundle_text(bundle: BundleAnalysis) -> str:
    end = bundle.program_offset + bundle.program_size
    return (
        f"BundledProgram version {bundle.version}, {bytes_text(bundle.size)}: its program is "
        f"bytes {bundle.program_offset}-{end}, {bytes_text(bundle.program_size)}"
    )


def side_file_facts(result: ProgramAnalysis) -> dict[str, str]:
    """The ETRecord whose layers the graph shows (by the name it was found under; the ETDump's is
    in `measured profile`)."""
    return {"etrecord": result.source.etrecord} if result.source is not None else {}


def bundle_method_facts(result: ProgramAnalysis, ma: MethodAnalysis) -> dict[str, str]:
    """Graph attributes of a method read from a bundle: its test cases (none outside a bundle)."""
    tests = ma.tests
    if result.bundle is None or tests is None:
        return {}
    out = {"bundle": bundle_text(result.bundle)}
    if not tests.cases:
        out["test cases"] = "none (the bundle has no test case for this method)"
        return out
    # Short keys: Model Explorer's side panel cuts a key after about 15 characters.
    out["test cases"] = str(len(tests.cases))
    for case in tests.cases[:CASES_SHOWN]:
        out[f"test case {case.index}"] = _case_text(case.inputs, case.expected_outputs)
    if len(tests.cases) > CASES_SHOWN:
        out["test cases not listed"] = str(len(tests.cases) - CASES_SHOWN)
    out["test tolerance"] = tolerance_text()
    if tests.problems:
        out["test problems"] = "\n".join(tests.problems)
    return out


def bundle_method_lines(ma: MethodAnalysis) -> list[str]:
    """`summary` text lines of one method's test cases (none outside a bundle)."""
    tests = ma.tests
    if tests is None:
        return []
    if not tests.cases:
        return ["  bundled tests        none"]
    lines = [f"  bundled tests        {len(tests.cases)} case(s)"]
    for case in tests.cases[:CASES_SHOWN]:
        lines.append(f"    case {case.index}: {_case_text(case.inputs, case.expected_outputs)}")
    if len(tests.cases) > CASES_SHOWN:
        lines.append(f"    ... and {len(tests.cases) - CASES_SHOWN} more (see --json)")
    lines.append(f"    tolerance: {tolerance_text()}")
    lines += [f"    problem: {p}" for p in tests.problems]
    return lines


def _value_json(v: ValueFacts) -> dict[str, Any]:
    """The same keys for every kind: a tensor has no `value`, a scalar no dtype, shape or data."""
    return {
        "kind": v.kind,
        "dtype": v.dtype or None,
        "shape": list(v.shape) if v.kind == "tensor" else None,
        "data_bytes": v.data_bytes,
        "value": v.value,
    }


def _suite_json(tests: MethodTests) -> dict[str, Any]:
    return {
        "method": tests.method,
        "test_cases": [
            {
                "index": c.index,
                "inputs": [_value_json(v) for v in c.inputs],
                "expected_outputs": [_value_json(v) for v in c.expected_outputs],
            }
            for c in tests.cases
        ],
        "compared_within_tolerance": tests.compared_within_tolerance,
        "problems": list(tests.problems),
    }


def bundle_json(bundle: BundleAnalysis | None) -> dict[str, Any] | None:
    """The `bundle` object of `summary --json`; None for a plain `.pte`."""
    if bundle is None:
        return None
    from pte_adapter.analysis.bundle import TOLERANCES

    return {
        "version": bundle.version,
        "program_offset": bundle.program_offset,
        "program_size": bundle.program_size,
        "test_suites": [_suite_json(t) for t in bundle.methods.values()],
        "tolerances": [{"runner": n, "rtol": r, "atol": a} for n, r, a in TOLERANCES],
        "problems": list(bundle.problems),
    }
