"""What a program needs from a runtime (`analysis/needs.py`, `pte-adapter ops`) against ExecuTorch's
own tools: `gen_oplist` (the selective-build list, byte for byte), torchgen's merge of two lists,
and the pip runtime (its operator names and backends, and the methods it refuses to load, with the
operators and kernel keys it logs as missing)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pte_adapter.analysis.load_check import NOT_LISTED, check_load
from pte_adapter.analysis.needs import (
    KNOWN_LIBRARIES,
    STANDARD_NAMESPACES,
    merge_needs,
)
from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.api import open_analysis
from pte_adapter.container.runtime_list import parse_runtime_list, read_runtime_list
from pte_adapter.render.oplist_yaml import selected_operators_yaml
from tests.support.examples import EXAMPLE_PTES, EXAMPLES, ROOT, oracle

PROGRAMS = [*EXAMPLE_PTES, *sorted(EXAMPLES.glob("*.bpte"))]
PIP_LIST = EXAMPLES / "runtimes" / "pip_portable_lib.txt"


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def analyses() -> dict[str, ProgramAnalysis]:
    """Every example, analysed once, opened as `pte-adapter ops examples/x.pte` run from the
    repository's root opens it."""
    with _at_root():
        return {p.name: open_analysis(Path(_relative(p)), profile=False) for p in PROGRAMS}


@contextlib.contextmanager
def _at_root() -> Iterator[None]:
    import os

    old = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(old)


def _gen_oplist(path: Path, out: Path) -> str:
    """ExecuTorch's own selective-build list of the program (its path as given: relative)."""
    from executorch.codegen.tools.gen_oplist import gen_oplist

    with _at_root(), contextlib.redirect_stdout(io.StringIO()):
        gen_oplist(output_path=out, model_file_path=_relative(path))
    return out.read_text()


@pytest.fixture(scope="module")
def gen_oplist_lists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("gen_oplist")
    return {p.name: _gen_oplist(p, folder / f"{p.name}.yaml") for p in PROGRAMS}


def test_yaml_is_gen_oplists_byte_for_byte(
    gen_oplist_lists: dict[str, str], analyses: dict[str, ProgramAnalysis]
) -> None:
    """On every example: the same text, so the same operators and kernel metadata; several
    examples list custom operators, kernels with several keys, or no kernel at all."""
    differ, kinds = [], {"custom": 0, "several keys": 0, "no kernel": 0}
    for path in PROGRAMS:
        needs = analyses[path.name].needs
        ours, theirs = selected_operators_yaml(needs), gen_oplist_lists[path.name]
        if ours != theirs:
            differ.append(path.name)
        assert yaml.safe_load(ours) == yaml.safe_load(theirs), path.name
        kinds["custom"] += any(op.custom for op in needs.operators)
        kinds["several keys"] += any(len(op.kernel_keys) > 1 for op in needs.operators)
        kinds["no kernel"] += not needs.called
    assert not differ, differ
    assert all(n >= 2 for n in kinds.values()), kinds


def test_programs_merge_as_torchgen_merges_their_lists(
    gen_oplist_lists: dict[str, str], analyses: dict[str, ProgramAnalysis]
) -> None:
    from torchgen.selective_build.selector import SelectiveBuilder, combine_selective_builders

    names = ["mv2_lrn_ethosu85.pte", "mv2_lrn2_ethosu85.pte", "undelegated.pte", "cond.pte"]
    builders = [SelectiveBuilder.from_yaml_dict(yaml.safe_load(gen_oplist_lists[n])) for n in names]
    merged = builders[0]
    for b in builders[1:]:
        merged = combine_selective_builders(merged, b)
    theirs = merged.to_dict()
    needs = merge_needs([analyses[n].needs for n in names])
    ours = yaml.safe_load(selected_operators_yaml(needs))
    assert ours["et_kernel_metadata"] == theirs["et_kernel_metadata"]
    assert set(ours["operators"]) == set(theirs["operators"])
    for name, entry in theirs["operators"].items():
        mine = ours["operators"][name]
        assert set(mine.pop("debug_info")) == set(entry.pop("debug_info")), name
        assert mine == entry, name
    assert len(needs.programs) == 4 and len(needs.operators) > 10


def _pip_runtime() -> tuple[list[str], list[str]]:
    from examples.build_runtime_lists import pip_runtime

    return pip_runtime()


def _called_and_backends(path: Path, cache: dict[Path, object]) -> tuple[set[str], set[str]]:
    """ExecuTorch's deserializer: the operators KernelCalls call and the delegates' backends."""
    called, backends = set(), set()
    for plan in oracle(path, cache).program.execution_plan:  # type: ignore[attr-defined]
        backends |= {d.id for d in plan.delegates}
        for chain in plan.chains:
            for ins in chain.instructions:
                if type(ins.instr_args).__name__ == "KernelCall":
                    op = plan.operators[ins.instr_args.op_index]
                    called.add(f"{op.name}.{op.overload}" if op.overload else op.name)
    return called, backends


def test_missing_is_the_set_difference_with_the_pip_runtime(
    tmp_path: Path, analyses: dict[str, ProgramAnalysis], oracle_cache: dict[Path, object]
) -> None:
    names, backends = _pip_runtime()
    listed = tmp_path / "names.txt"
    listed.write_text("\n".join(names))  # the form its _get_operator_names() gives
    runtime = read_runtime_list(listed)
    some_missing = 0
    for path in PROGRAMS:
        check = check_load(analyses[path.name].needs, runtime, backends)
        called, needed = _called_and_backends(path, oracle_cache)
        assert {m.operator.name for m in check.missing_operators} == called - set(names), path
        assert {m.reason for m in check.missing_operators} <= {NOT_LISTED}
        assert {b.backend for b in check.missing_backends} == needed - set(backends), path
        some_missing += bool(check.missing_operators)
    assert some_missing >= 3  # the LRN islands' avg_pool3d, Arm's cortex_m kernels


def test_the_committed_pip_list_is_the_installed_runtimes() -> None:
    names, backends = _pip_runtime()
    runtime = read_runtime_list(PIP_LIST)
    assert set(runtime.operators) == set(names)
    assert f"# Its backends (_get_registered_backend_names()): {','.join(backends)}" in (
        PIP_LIST.read_text()
    ), "rerun python -m examples.build_runtime_lists"


# The runtime loading every method of every example, its log (stderr) per method after a marker.
_LOADER = r"""
import os, sys
import executorch.kernels.quantized
from executorch.extension.pybindings import portable_lib
for path in sys.argv[1:]:
    try:
        program = portable_lib._load_program(path)
    except Exception:
        continue
    for i in range(program.num_methods()):
        name = program.get_method_name(i)
        os.write(2, f"@@@ {path} {name}\n".encode())
        try:
            program.load_method(name)
            os.write(2, b"@@@ loaded\n")
        except Exception:
            os.write(2, b"@@@ refused\n")
"""
_MISSING_OP = re.compile(r"Missing operator: \[(\d+)\] (\S+)")
_BACKEND = re.compile(r"Backend (\S+) is not registered")


@pytest.fixture(scope="module")
def runtime_loads() -> dict[tuple[str, str], tuple[bool, str]]:
    """(program, method) -> (loaded, the runtime's log while loading it), in one process."""
    run = subprocess.run(
        [sys.executable, "-c", _LOADER, *map(str, PROGRAMS)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    out = {
        (Path(m[1]).name, m[2]): (m[4] == "loaded", m[3])
        for m in re.finditer(r"@@@ (\S+) (\S+)\n(.*?)@@@ (loaded|refused)\n", run.stderr, re.S)
    }
    assert len(out) > 40, run.stderr[-2000:]
    return out


def test_what_the_pip_runtime_refuses_is_what_ops_names(
    runtime_loads: dict[tuple[str, str], tuple[bool, str]], analyses: dict[str, ProgramAnalysis]
) -> None:
    """The runtime logs the first backend it lacks (then stops) or every operator it lacks (with
    its operator-table index); loading works exactly when neither is missing, except for reasons
    that are no kernel or backend (a dynamic_unbound tensor, external data not given)."""
    names, backends = _pip_runtime()
    runtime = parse_runtime_list("\n".join(names).encode(), "pip")
    loads = runtime_loads
    refused_for_kernels = 0
    for path in PROGRAMS:
        for ma in analyses[path.name].methods:
            if (path.name, ma.name) not in loads:
                continue  # a bundle: the runtime loads plain programs
            loaded, log = loads[(path.name, ma.name)]
            check = check_load(ma.needs, runtime, backends)
            if loaded:
                assert check.ok, (path.name, ma.name)
                continue
            backend = _BACKEND.search(log)
            if backend:
                assert backend[1] in {b.backend for b in check.missing_backends}
                continue
            logged = {(int(i), n) for i, n in _MISSING_OP.findall(log)}
            table = {op.full_name: j for j, op in enumerate(ma.method.operators)}
            ours = {(table[m.operator.name], m.operator.name) for m in check.missing_operators}
            assert logged == ours, (path.name, logged, ours)
            refused_for_kernels += bool(logged)
            if not logged:
                assert check.ok and ("dynamic" in log or "external" in log), (path.name, log)
    assert refused_for_kernels >= 1


def test_kernel_keys_are_the_ones_the_runtime_looks_for(
    runtime_loads: dict[tuple[str, str], tuple[bool, str]], analyses: dict[str, ProgramAnalysis]
) -> None:
    """When the runtime cannot find a kernel it logs the key it looked for (dtype and dim order
    of each tensor argument): ours for that call."""
    seen = 0
    for (name, method), (_, log) in runtime_loads.items():
        for match in re.finditer(
            r"kernel '(\S+)' not found\.\n((?:.*operator_registry.*\n)+)", log
        ):
            text = "".join(line.split("] ", 1)[1] for line in match[2].splitlines())
            metas = re.findall(r"dtype: (\d+) \| dim order: \[([\d,]*)\]", text)
            logged = "v1/" + "|".join(f"{d};{o.rstrip(',')}" for d, o in metas)
            result = analyses[name]
            keys = {
                c.kernel_key.text
                for op in result.method(method).needs.operators  # type: ignore[union-attr]
                if op.name == match[1]
                for c in op.calls
                if c.kernel_key is not None
            }
            assert logged in keys, (name, logged, keys)
            seen += 1
    assert seen >= 1


def _namespaces(yaml_file: Path) -> set[str]:
    text = yaml_file.read_text()
    return set(re.findall(r"^- (?:func|op): (\w+)::", text, re.M))


def test_standard_namespaces_are_those_of_executorchs_kernel_libraries() -> None:
    import executorch.kernels

    root = Path(next(iter(executorch.kernels.__path__))).parent
    names, _ = _pip_runtime()
    found = {n.split("::", 1)[0] for n in names}
    found |= _namespaces(root / "kernels" / "portable" / "functions.yaml")
    found |= _namespaces(root / "kernels" / "quantized" / "quantized.yaml")
    assert found == set(STANDARD_NAMESPACES)
    for namespace in KNOWN_LIBRARIES:
        assert namespace in _namespaces(root / "backends" / namespace / "ops" / "operators.yaml")


def test_a_gen_oplist_list_reads_as_pyyaml_reads_it(gen_oplist_lists: dict[str, str]) -> None:
    """Our YAML reader on every list gen_oplist wrote: the same operators and keys as PyYAML."""
    for name, text in gen_oplist_lists.items():
        doc: Any = yaml.safe_load(text)
        runtime = parse_runtime_list(text.encode(), name)
        assert set(runtime.operators) == set(doc["operators"]), name
        assert runtime.kernel_keys == doc["et_kernel_metadata"], name
        assert json.dumps(doc)  # a plain document
