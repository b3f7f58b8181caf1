"""Source mapping: TOSA operators grouped by the PyTorch module that produced them.

Expected namespaces are derived in the test from the debug JSON itself (the operator's
`location.text`, or a debug.json written here), never typed in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.tosa.debuginfo import module_path_to_namespace
from pte_adapter.delegates.tosa.decode import decode, read_tosa, read_tosa_file
from tests.support.examples import EXAMPLES


def expected_namespace(event: dict[str, Any]) -> str | None:
    """The innermost module path of an nn_module_stack, '.' -> '/' (None: no module stack)."""
    stack = event.get("torch_info", {}).get("nn_module_stack")
    if not isinstance(stack, dict) or not stack:
        return None
    paths = [v[0] for v in stack.values() if isinstance(v, list) and v]
    deepest = max(paths, key=lambda p: (len([x for x in p.split(".") if x]), paths.index(p)))
    return deepest.replace(".", "/")


def debug_payload() -> tuple[bytes, dict[str, bytes], Path]:
    pte = EXAMPLES / "tosa_debug.pte"
    # A shipped example that is missing is a failure, not a skip.
    assert pte.exists(), "tosa_debug.pte is missing: run python -m examples.build_examples"
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes()).program
    for plan in program.execution_plan:
        for d in plan.delegates:
            if d.id == "TOSABackend":
                data = bytes(program.backend_delegate_data[d.processed.index].data)
                return data, {c.key: bytes(c.value) for c in d.compile_specs}, pte
    pytest.fail("tosa_debug.pte has no TOSABackend delegate")


def test_debug_example_groups_ops_by_pytorch_module() -> None:
    from tosa.TosaGraph import TosaGraph

    data, specs, pte = debug_payload()
    decoded = decode(memoryview(data), DecodeContext("TOSABackend", specs, pte_path=pte))
    graph = decoded.graphs[0]
    block = TosaGraph.GetRootAs(data, 0).Regions(0).Blocks(0)
    located = 0
    expected_spaces = set()
    for i, node in enumerate(graph.nodes):
        loc = block.Operators(i).Location()
        text = loc.Text() if loc is not None else None
        if not text:
            continue
        event = json.loads(text)
        located += 1
        want = expected_namespace(event)
        if want is not None:
            assert node.namespace == want, (node.kind, node.attrs.get("aten_node"))
            expected_spaces.add(want)
        assert node.attrs["aten_node"] == event["aten_info"]["node_name"]
        assert node.attrs["aten_op"] == event["aten_info"]["operator_name"]
        if event["torch_info"].get("stack_trace"):
            assert "stack_trace" in node.attrs and "source" in node.attrs
    assert located > 0, "the debug example carries no operator locations"
    # The graph folds into several modules (the example has nested features/0..2, head, ...).
    assert len({s for s in expected_spaces if s}) >= 2
    # Constants without a location join the module of the operator that consumes them.
    consumers = {t: n for n in graph.nodes for t in n.inputs}
    for node in graph.nodes:
        if node.kind == "CONST" and "aten_node" not in node.attrs and node.outputs:
            user = consumers.get(node.outputs[0])
            if user is not None and all(consumers.get(o) is user for o in node.outputs):
                assert node.namespace == user.namespace
    assert "operator locations" in decoded.summary["tosa_source_mapping"]


def test_module_path_spellings() -> None:
    """The path spellings torch.export has used all fold to the same namespace."""
    for spelling in (
        "features.3.conv.0",
        "L['self'].features[3].conv[0]",
        "getattr(L['self'].features, '3').conv[0]",
    ):
        assert module_path_to_namespace(spelling) == "features/3/conv/0"
    assert module_path_to_namespace("") == ""


def _serializer_graph() -> bytes:
    import tosa_serializer as ts  # tosa-tools, in the test extra

    g = ts.TosaSerializer("", targetMajor=1, targetMinor=0, targetPatch=0, targetDraft=False)
    x = g.addPlaceholder([1, 4], ts.DType.FP32)
    a = g.addIntermediate([1, 4], ts.DType.FP32)
    b = g.addIntermediate([1, 4], ts.DType.FP32)
    for op, src, dst, attr_name in (
        (ts.Op.ABS, x, a, "AbsAttribute"),
        (ts.Op.SIN, a, b, "SinAttribute"),
    ):
        attr = ts.TosaSerializerAttribute()
        getattr(attr, attr_name)()
        g.addOperator(op, [src.name], [dst.name], attr)
    g.addOutputTensor(b)
    return bytes(g.serialize())


def _event(event_id: int, output: str, op_id: int, module_path: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "aten_info": {"node_name": f"node{event_id}", "operator_name": "aten.some_op.default"},
        "tosa_info": {"node_name": output, "operator_name": "Op.X", "operator_id": op_id},
        "torch_info": {
            "stack_trace": ['File "model.py", line 10, in forward', "    y = self.block(x)"],
            "node_trace": "No node trace available.",
            "nn_module_stack": {"root": ["", "Model"], "inner": [module_path, "torch.nn.Module"]},
            "torch_fn": ["f", "f"],
        },
    }


def test_debug_json_beside_a_tosa_file(tmp_path: Path) -> None:
    """DebugMode.JSON: events are matched by first output AND operator number; others ignored."""
    buf = _serializer_graph()
    model = read_tosa(buf)
    ops = model.main.operators
    events = [
        _event(0, ops[0].outputs[0], ops[0].code, "blocks.0.act"),
        # Right output name, wrong operator number: from another partition, must not be used.
        _event(1, ops[1].outputs[0], ops[1].code + 1, "blocks.1"),
    ]
    path = tmp_path / "graph.tosa"
    path.write_bytes(buf)
    (tmp_path / "debug.json").write_text(json.dumps(events))
    graph = read_tosa_file(path)[0]
    first, second = graph.nodes
    assert first.namespace == expected_namespace(events[0])
    assert first.attrs["aten_node"] == events[0]["aten_info"]["node_name"]
    assert first.attrs["source"].startswith("model.py:10")
    assert second.namespace == "" and "aten_node" not in second.attrs
    assert "debug.json" in graph.attrs["tosa_source_mapping"]
