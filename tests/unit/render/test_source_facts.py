"""Node and group attributes from the ETRecord, on the LocalResponseNorm example.

Expected values come from how the examples build the model (examples/models/mobilenet.py):
MobileNetV2 with one `nn.LocalResponseNorm` inserted after features[3] (so it is `features.4`), called from
`MobileNetV2.forward` as `x = self.features(x)`; ExecuTorch's decomposition of LRN is what puts
`aten::avg_pool3d` on the CPU.
"""

from __future__ import annotations

import json
from typing import Any

import pte_adapter
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.analysis.source import partition_sources
from pte_adapter.analysis.why import why_not_delegated
from pte_adapter.program.model import InstructionKind
from pte_adapter.render.source_facts import (
    MAX_MODULES,
    instruction_source_facts,
    layer_namespace,
    partition_source_facts,
)
from tests.support.examples import EXAMPLES, example
from tests.support.groups import group_names


def test_lrn_node_and_island_attributes() -> None:
    program = pte_adapter.load(example("mv2_lrn_ethosu85"))
    method = program.methods[0]
    source = pte_adapter.analyse(program).source
    assert source is not None
    msrc = source.methods["forward"]
    pool = next(
        i
        for i in method.instructions
        if i.kind is InstructionKind.KERNEL
        and method.operators[i.op_index or 0].name == "aten::avg_pool3d"
    )
    facts = instruction_source_facts(msrc.instructions[pool.index])
    assert facts["module"] == "features.4 (LocalResponseNorm)"
    assert facts["module_class"] == "torch.nn.modules.normalization.LocalResponseNorm"
    line = (EXAMPLES / "models" / "mobilenet.py").read_text().splitlines().index(
        "        x = self.features(x)"
    ) + 1
    assert facts["source_line"] == f"examples/models/mobilenet.py:{line}  x = self.features(x)"
    assert facts["torch_fn"] == "function.local_response_norm"
    assert layer_namespace(msrc.instructions[pool.index]) == ["features", "features.4"]

    parts = partition_method(method)
    island = parts.partitions[parts.partition_of[pool.index]]
    reasons = [r for r in why_not_delegated(method, parts) if r.instruction == pool.index]
    group = partition_source_facts(partition_sources(method, msrc, parts)[island.index], reasons)
    assert group["cause"] == "features.4 LocalResponseNorm → aten::avg_pool3d.out"
    assert "aten.avg_pool3d: not supported by the Arm backend" in group["why_not_delegated"]
    first_npu = parts.delegate_partitions[0]
    covered = partition_source_facts(partition_sources(method, msrc, parts)[first_npu.index], [])
    assert covered["modules_covered"].startswith("features.0 … features.")


def test_delegate_node_names_a_bounded_number_of_modules() -> None:
    program = pte_adapter.load(example("mv2_lrn_ethosu85"))
    msrc = pte_adapter.analyse(program).source
    assert msrc is not None
    calls = [i for i in program.methods[0].instructions if i.kind is InstructionKind.DELEGATE]
    facts = instruction_source_facts(msrc.methods["forward"].instructions[calls[-1].index])
    shown, more = facts["module"].split(" … (+")
    assert len(shown.split(", ")) == MAX_MODULES
    assert int(more.rstrip(")")) > 0


def test_no_etrecord_no_source_facts() -> None:
    program = pte_adapter.load(example("mv2_ethosu55"))
    assert pte_adapter.analyse(program).source is None
    assert instruction_source_facts(None) == {}
    assert layer_namespace(None) == []


def _method_graph(name: str) -> dict[str, Any]:
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    data = json.loads(json.dumps(graphs_to_json(convert_path(example(name)))))
    return next(g for g in data["graphs"] if g["id"] == "forward")


def _operator(node: dict[str, Any]) -> str:
    """A kernel call's full operator name (its label is the short one), else its label."""
    return next((a["value"] for a in node["attrs"] if a["key"] == "operator"), node["label"])


def test_model_explorer_nodes_and_groups_carry_source_and_why() -> None:
    g = _method_graph("mv2_lrn_ethosu85")
    nodes = {_operator(n): n for n in g["nodes"]}
    pool = nodes["aten::avg_pool3d.out"]
    attrs = {a["key"]: a["value"] for a in pool["attrs"]}
    assert attrs["module"] == "features.4 (LocalResponseNorm)"
    assert "not supported by the Arm backend" in attrs["why_not_delegated"]
    # A three-kernel island is not split into layers: opening it shows the kernels. Its name says
    # what fell off the NPU, and from which layer.
    island_name = "CPU island 2 - aten::avg_pool3d (features.4 LocalResponseNorm)"
    assert pool["namespace"] == island_name
    island = g["groupNodeAttributes"][island_name]
    assert island["cause"] == "features.4 LocalResponseNorm → aten::avg_pool3d.out"
    npu = group_names(example("mv2_lrn_ethosu85"))["forward"][1]
    assert npu.startswith("NPU partition 1 (EthosUBackend) - 16 ops, ")
    assert g["groupNodeAttributes"][npu]["modules_covered"]


def test_undelegated_island_opens_layer_by_layer() -> None:
    """SmallNet without a delegate is one CPU island of 25 kernels; with its ETRecord every kernel
    sits in the layers of the model (features.0 is a ConvBNReLU: Conv2d, BatchNorm2d, ReLU6)."""
    from pte_adapter.render.plan.annotations import NEST_LAYERS_ABOVE

    assert len(pte_adapter.load(example("undelegated")).methods[0].instructions) > NEST_LAYERS_ABOVE
    g = _method_graph("undelegated")
    island = group_names(example("undelegated"))["forward"][0]
    assert island.startswith("CPU island 1 - aten::")
    by_label: dict[str, list[str]] = {}
    for n in g["nodes"]:
        by_label.setdefault(_operator(n), []).append(n["namespace"])
    assert by_label["aten::convolution.out"][0] == f"{island}/features/features.0/features.0.0"
    assert by_label["aten::hardtanh.out"][0] == f"{island}/features/features.0/features.0.2"
    assert f"{island}/out" in by_label["aten::addmm.out"]
    # Root-level functional calls (the final softmax) stay directly in the island.
    assert by_label["aten::_softmax.out"] == [island]
