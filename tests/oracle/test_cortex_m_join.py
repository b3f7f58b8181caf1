"""The Cortex-M flow's ETRecord joins its program as ExecuTorch's Inspector joins it.

Arm's flow runs its Cortex-M passes after lowering (`CortexMPassManager`, or `ReplaceQuantNodesPass`
alone as `aot_arm_compiler.py` does for Ethos-U), while the ETRecord keeps the edge program from
before them: a `cortex_m::quantized_linear` kernel maps to an `aten.linear` node. The oracle is
the Inspector's own join (`tests/support/inspector_join.py`: an ETDump with one event per
instruction, written with ExecuTorch's schema, read by the Inspector with the ETRecord), on both
Cortex-M examples: one with a `cortex_m::` compute kernel (the classifier's quantized linears),
one with only `cortex_m::` (de)quantize glue beside `aten::` compute.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.source import user_source_line
from pte_adapter.program.model import InstructionKind, Program
from tests.support.examples import EXAMPLES, example
from tests.support.inspector_join import JoinedEvent, inspector_join

WITH_KERNEL = "classifier_cortex_m_ethosu85"  # cortex_m::quantized_linear
GLUE_ONLY = "lrn_cortex_m_qdq_ethosu85"  # cortex_m:: (de)quantize, aten::avg_pool3d
CORTEX_M = [WITH_KERNEL, GLUE_ONLY]


@cache
def _joined(stem: str, workdir: Path) -> dict[int, JoinedEvent]:
    program = pte_adapter.load(example(stem))
    return inspector_join(program, EXAMPLES / f"{stem}.etrecord", workdir)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inspector")


def _kernel_ops(program: Program) -> set[str]:
    method = program.methods[0]
    return {
        method.operators[i.op_index].name
        for i in method.instructions
        if i.kind is InstructionKind.KERNEL and i.op_index is not None
    }


def test_examples_are_cortex_m_builds() -> None:
    with_kernel = _kernel_ops(pte_adapter.load(example(WITH_KERNEL)))
    assert "cortex_m::quantized_linear" in with_kernel
    glue_only = _kernel_ops(pte_adapter.load(example(GLUE_ONLY)))
    assert {"cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor"} <= glue_only
    assert not any(op.startswith("cortex_m::quantized_") for op in glue_only)


def _layers(event: JoinedEvent) -> list[tuple[str, str]]:
    """The innermost module of each of the event's nodes, distinct, in the Inspector's order;
    torch.export's own wrapper (what quantization nodes outside any layer carry) is no layer."""
    out: list[tuple[str, str]] = []
    for node in event.nodes:
        stack = event.module_stacks.get(node) or []
        if not stack or (len(stack) == 1 and "<locals>" in stack[0][1]):
            continue
        if stack[-1] not in out:
            out.append(stack[-1])
    return out


def _line(event: JoinedEvent) -> str:
    return next((s for s in map(user_source_line, event.stack_traces.values()) if s), "")


@pytest.mark.parametrize("stem", CORTEX_M)
def test_join_matches_the_inspector(stem: str, workdir: Path) -> None:
    program = pte_adapter.load(example(stem))
    result = pte_adapter.analyse(program)
    assert result.problems == []
    assert result.source is not None and result.source.etrecord == f"{stem}.etrecord"
    ours = result.source.methods["forward"].instructions
    theirs = _joined(stem, workdir)
    method = program.methods[0]
    mapped = 0
    for ins in (i for i in method.instructions if i.chain == 0):
        event = theirs[ins.chain_position]
        if not event.nodes:
            assert ins.index not in ours
            continue
        mine = ours[ins.index]
        # A handle the Inspector lists twice is one handle to the adapter (its join stays linear).
        assert mine.handles == list(dict.fromkeys(event.debug_handles)), ins.index
        assert list(dict.fromkeys(mine.nodes)) == event.nodes, ins.index  # it names each once
        assert [(m.path, m.cls) for m in mine.modules] == _layers(event), ins.index
        assert mine.source_line == _line(event), ins.index
        mapped += 1
    assert mapped == len(method.instructions)  # the Inspector maps every instruction of these


def _me_nodes(stem: str) -> list[dict[str, str]]:
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    data: Any = json.loads(json.dumps(graphs_to_json(convert_path(example(stem)))))
    graph = next(g for g in data["graphs"] if g["id"] == "forward")
    return [{a["key"]: a["value"] for a in n["attrs"]} for n in graph["nodes"]]


@pytest.mark.parametrize("stem", CORTEX_M)
def test_every_cpu_kernel_the_inspector_maps_shows_module_and_line(
    stem: str, workdir: Path
) -> None:
    """Done when: in Model Explorer, every CPU kernel the Inspector maps to a layer shows that
    layer, and every one it maps to a line of the model's code shows that line."""
    theirs = _joined(stem, workdir)
    # A kernel call's node is labelled with its operator and has its operator_index (no `kind`:
    # KernelCall is the default, docs/model-explorer.md).
    kernels = [a for a in _me_nodes(stem) if "operator_index" in a]
    assert kernels
    shown = 0
    for attrs in kernels:
        event = theirs[int(attrs["instruction"])]
        layers = _layers(event)
        if layers:
            assert (
                attrs["module"].split(", ")[0]
                == f"{layers[0][0]} ({layers[0][1].rsplit('.', 1)[-1]})"
            )
            shown += 1
        if _line(event):
            assert attrs["source_line"] == _line(event)
            assert attrs["source_line"].startswith("examples/models/small.py:")
    assert shown >= 1
    if stem == WITH_KERNEL:
        linears = [a for a in kernels if a["operator_index"] and "fc" in a.get("module", "")]
        assert {a["module"] for a in linears} == {"fc1 (Linear)", "fc2 (Linear)"}
