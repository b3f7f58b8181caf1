"""BundledPrograms: our reading against ExecuTorch's own bundled-program deserializer
(`deserialize_from_flatbuffer_to_bundled_program`: flatc + the schema), on the committed example
(built the way Arm's aot_arm_compiler.py --bundleio builds it) and on bundles ExecuTorch's writer
makes around other examples (tests/support/bundles.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.container.bundle import BundledScalar, BundledTensor, BundleFile, read_bundle
from pte_adapter.render.summary_json import summary_json
from tests.support.bundles import fitting_cases, write_bundle
from tests.support.examples import EXAMPLES, example

BPTE = EXAMPLES / "bundle_ethosu55.bpte"
AS_PTE = EXAMPLES / "bundle_ethosu55_as_pte.pte"


@cache
def theirs(data: bytes) -> Any:
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    return deserialize_from_flatbuffer_to_bundled_program(data)


def _assert_same_bundle(ours: BundleFile, data: bytes) -> None:
    t = theirs(data)
    assert ours.version == t.version
    assert bytes(ours.program_bytes) == bytes(t.program)
    assert ours.problems == []
    assert [s.method_name for s in ours.suites] == [s.method_name for s in t.method_test_suites]
    for suite, tsuite in zip(ours.suites, t.method_test_suites, strict=True):
        assert len(suite.test_cases) == len(tsuite.test_cases)
        for case, tcase in zip(suite.test_cases, tsuite.test_cases, strict=True):
            for mine, their in (
                (case.inputs, tcase.inputs),
                (case.expected_outputs, tcase.expected_outputs),
            ):
                assert len(mine) == len(their)
                for v, tv in zip(mine, their, strict=True):
                    _assert_same_value(v, tv.val, data)


def _assert_same_value(v: object, tv: Any, data: bytes) -> None:
    if isinstance(v, BundledTensor):
        assert type(tv).__name__ == "Tensor"
        assert v.scalar_type == int(tv.scalar_type.value)
        assert v.sizes == list(tv.sizes)
        assert v.dim_order == [int(d) for d in tv.dim_order]
        assert v.data is not None
        assert data[v.data.offset : v.data.end] == bytes(tv.data)
    else:
        assert isinstance(v, BundledScalar)
        field = {"int": "int_val", "bool": "bool_val", "double": "double_val"}[v.kind]
        assert v.value == getattr(tv, field)


def test_the_example_is_a_bundle_under_both_names() -> None:
    assert BPTE.read_bytes() == AS_PTE.read_bytes()
    assert BPTE.read_bytes()[4:8] == b"BP08"
    assert (EXAMPLES / "bundle_ethosu55_etrecord.bin").is_file()


@pytest.mark.parametrize("path", [BPTE, AS_PTE], ids=["bpte", "as_pte"])
def test_example_bundle_reads_as_executorch_reads_it(path: Path) -> None:
    data = path.read_bytes()
    _assert_same_bundle(read_bundle(data, path.name), data)
    program = pte_adapter.load(path)
    assert program.bundle is not None and program.file_size == len(data)
    t = theirs(data)
    (suite,) = t.method_test_suites  # Arm's script: one suite per method, one case each
    assert [m.name for m in program.methods] == [suite.method_name] == ["forward"]
    assert len(suite.test_cases) == 1


def test_the_program_inside_shows_as_the_pte_it_is(tmp_path: Path) -> None:
    """Everything a `.pte` shows: the summary of the bundle is the summary of its program written
    out as a `.pte` (but for the file keys and the bundle's own), with the same side files."""
    inner = tmp_path / "bundle_ethosu55.pte"
    inner.write_bytes(bytes(theirs(BPTE.read_bytes()).program))
    for side in BPTE.parent.glob("bundle_ethosu55_etrecord.bin"):
        (tmp_path / side.name).write_bytes(side.read_bytes())
    mine = summary_json(pte_adapter.analyse(pte_adapter.load(BPTE)))
    plain = summary_json(pte_adapter.analyse(pte_adapter.load(inner)))
    for key in ("file", "file_size", "bundle"):
        mine.pop(key), plain.pop(key)
    # The deployment map counts the file as it is flashed: the whole bundle, not its program.
    mine_fit, plain_fit = mine.pop("fit"), plain.pop("fit")
    assert mine == plain
    program_item = next(i for i in plain_fit["items"] if i["key"] == "program")
    bundle_item = next(i for i in mine_fit["items"] if i["key"] == "program")
    assert program_item["bytes"] == len(inner.read_bytes())
    assert bundle_item["bytes"] == len(BPTE.read_bytes())


def test_bundles_written_around_other_examples(tmp_path: Path) -> None:
    """Two methods, several cases, and scalar values: ExecuTorch's writer, our reader."""
    pte = example("two_methods")
    cases = fitting_cases(pte, n=3)
    name = next(iter(cases))
    inputs, outputs = cases[name][0]
    cases[name].append(([*inputs[:-1], 7], outputs))  # an int where a tensor goes
    cases[name].append(([True, *inputs[1:]], outputs))  # a bool
    cases[name].append(([2.5, *inputs[1:]], outputs))  # a double
    path = write_bundle(pte, tmp_path / "two.bpte", cases)
    data = path.read_bytes()
    _assert_same_bundle(read_bundle(data, path.name), data)
    result = pte_adapter.analyse(pte_adapter.load(path))
    assert result.bundle is not None
    assert {m: len(t.cases) for m, t in result.bundle.methods.items()} == {
        m: len(c) for m, c in cases.items()
    }
    problems = result.bundle.methods[name].problems
    assert any(
        "test case 3, input " in p and "a int, where the method has a tensor" in p for p in problems
    )
    assert any("test case 4, input 0: a bool, where the method has a tensor" in p for p in problems)
    assert any(
        "test case 5, input 0: a double, where the method has a tensor" in p for p in problems
    )
    others = [t.problems for m, t in result.bundle.methods.items() if m != name]
    assert others and all(p == [] for p in others)


def test_cases_that_do_not_fit_the_method_are_problems(tmp_path: Path) -> None:
    """A stale bundle: a shape, a dtype and a count the method does not have, and a method the
    program lacks. The runtime would refuse each of them; the view says which."""
    import torch

    pte = example("undelegated")
    cases = fitting_cases(pte)
    (name,) = cases
    inputs, outputs = cases[name][0]
    wrong_shape = torch.zeros(*[d + 1 for d in inputs[0].shape])
    cases[name] += [
        ([wrong_shape, *inputs[1:]], outputs),
        ([inputs[0].to(torch.float64), *inputs[1:]], outputs),
        (inputs, outputs + outputs),
    ]
    cases["nope"] = [(inputs, outputs)]
    result = pte_adapter.analyse(pte_adapter.load(write_bundle(pte, tmp_path / "u.bpte", cases)))
    assert result.bundle is not None
    problems = result.bundle.methods[name].problems
    assert len(problems) == 3, problems
    assert problems[0].startswith("test case 1, input 0: [")
    assert "float64, where the method has" in problems[1]
    assert problems[2].startswith("test case 3 has 2 expected outputs; the method has 1")
    assert result.bundle.problems == [
        "the bundle has 1 test case(s) for method 'nope', which the program does not have"
    ]
    assert "bundle: " + result.bundle.problems[0] in result.problems


def test_size_accounts_for_every_byte_of_the_bundle(tmp_path: Path) -> None:
    """The whole file: the program part is ExecuTorch's program vector, broken down as the `.pte`
    alone is (moved to where it sits); each test-data part holds ExecuTorch's tensor bytes."""
    data = BPTE.read_bytes()
    t = theirs(data)
    report = pte_adapter.open_analysis(BPTE, profile=False).size()
    assert sum(leaf.size for leaf in report.leaves()) == len(data) == report.file_size
    assert report.problems == []
    (program,) = [p for p in report.root.children if p.kind == "bundled_program"]
    assert data[program.offset : program.end] == bytes(t.program)
    inner = tmp_path / "inner.pte"
    inner.write_bytes(bytes(t.program))
    alone = pte_adapter.open_analysis(inner, profile=False).size()
    assert [(p.kind, p.offset + program.offset, p.size) for p in alone.leaves()] == [
        (p.kind, p.offset, p.size) for p in program.leaves()
    ]
    tensors = [
        bytes(v.val.data)
        for s in t.method_test_suites
        for c in s.test_cases
        for v in c.inputs + c.expected_outputs
    ]
    test_parts = [p for p in report.leaves() if p.kind == "bundled_test_data"]
    assert sorted(data[p.offset : p.end] for p in test_parts) == sorted(tensors)
