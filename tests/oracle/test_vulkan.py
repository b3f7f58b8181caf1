"""Vulkan payloads: our decoder against ExecuTorch's own Vulkan serialization code.

The oracle is independent of our reader: ExecuTorch's `deserialize_pte_binary` gets each payload,
its `VulkanDelegateHeader.from_bytes` splits it, and `flatbuffer_to_vk_graph` (the `flatc` shipped
in the executorch wheel with the exporter's own `schema.fbs`, then `_json_to_dataclass`) rebuilds
the `VkGraph` dataclasses the exporter serialised. Argument names are checked against torch's own
operator schemas, a constant's location against the sha256 the exporter named it by, and the
bytes in and out against the program's own tensors. Every expected number comes from those, never
from this file.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.delegates.vulkan.layout import payload_layout
from pte_adapter.operator_names import target_base
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode
from pte_adapter.program.model import Delegate, Program
from tests.support.examples import EXAMPLES

VK_EXAMPLES = sorted(EXAMPLES.glob("vulkan_*.pte"))
REL = 1e-5  # flatc's JSON prints doubles with fewer digits than they have


@cache
def oracle(path: Path) -> dict[tuple[str, int], Any]:
    """(method, delegate index) -> (header, VkGraph, DelegateCall input sizes in bytes, payload)."""
    import torch
    from executorch.backends.vulkan.serialization.vulkan_graph_serialize import (
        VulkanDelegateHeader,
        flatbuffer_to_vk_graph,
    )
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.scalar_type import ScalarType

    _TORCH_DTYPES = {
        "BYTE": torch.uint8,
        "CHAR": torch.int8,
        "INT": torch.int32,
        "LONG": torch.int64,
        "HALF": torch.float16,
        "FLOAT": torch.float32,
        "DOUBLE": torch.float64,
        "BOOL": torch.bool,
    }
    prog = deserialize_pte_binary(path.read_bytes()).program
    out: dict[tuple[str, int], Any] = {}
    for plan in prog.execution_plan:
        calls: dict[int, list[int]] = {}
        for chain in plan.chains:
            for ins in chain.instructions:
                if type(ins.instr_args).__name__ == "DelegateCall":
                    calls[ins.instr_args.delegate_index] = list(ins.instr_args.args)
        for i, d in enumerate(plan.delegates):
            assert d.id == "VulkanBackend"
            payload = bytes(prog.backend_delegate_data[d.processed.index].data)
            header = VulkanDelegateHeader.from_bytes(
                payload[: VulkanDelegateHeader.EXPECTED_LENGTH]
            )
            fb = payload[
                header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size
            ]
            sizes = []
            for a in calls[i]:
                t = plan.values[a].val
                dtype = _TORCH_DTYPES[ScalarType(t.scalar_type).name]
                sizes.append(math.prod(t.sizes) * dtype.itemsize)
            out[(plan.name, i)] = (header, flatbuffer_to_vk_graph(fb), sizes, payload)
    return out


@cache
def loaded(path: Path) -> Program:
    return pte_adapter.load(path)


def vk_delegates(program: Program) -> dict[tuple[str, int], Delegate]:
    return {
        (m.name, d.index): d
        for m in program.methods
        for d in m.delegates
        if d.id == "VulkanBackend"
    }


def test_the_vulkan_examples_ship() -> None:
    assert [p.name for p in VK_EXAMPLES] == [
        "vulkan_cnn_island.pte",
        "vulkan_int8_weights.pte",
        "vulkan_mv2.pte",
        "vulkan_transformer.pte",
    ]


def _expected_text(v: Any, vid: int) -> str | float:
    """What our attribute of an argument must say, from the oracle's dataclass (a float for a
    double, compared approximately)."""
    kind = type(v).__name__
    if kind == "VkTensor":
        return f"v{vid}"
    if kind == "Int":
        return str(v.int_val)
    if kind == "Double":
        return float(v.double_val)
    if kind == "Bool":
        return "true" if v.bool_val else "false"
    if kind == "String":
        return repr(v.string_val)
    if kind == "SymInt":
        return f"symint {v.value}"
    if kind == "Null":
        return "none"
    if kind == "ValueList":
        return "[" + ", ".join(f"v{i}" for i in v.items) + "]"
    if kind == "IntList":
        return "[" + ", ".join(str(i) for i in v.items) + "]"
    if kind == "BoolList":
        return "[" + ", ".join("true" if b else "false" for b in v.items) + "]"
    raise AssertionError(f"value kind {kind} is not handled by this test")


def _schema_names(op: str) -> list[str] | None:
    """The operator's argument names from torch's own registry (None: not a torch operator)."""
    import executorch.backends.vulkan.custom_ops_lib  # noqa: F401  (registers et_vk ops)
    import torch

    parts = op.split(".")
    if len(parts) == 2:
        parts = ["aten", *parts]
    try:
        overload = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except AttributeError:
        return None
    return [a.name for a in overload._schema.arguments]


def _check_call(node: OpNode, call: Any, values: list[Any]) -> None:
    assert node.kind == call.name
    assert node.attrs["node_id"] == str(call.node_id)
    shown = list(node.attrs.items())[1:]  # node_id first, then one attribute per argument
    assert len(shown) == len(call.args)
    names = _schema_names(call.name)
    if names is not None:
        assert [k for k, _ in shown] == [*names, "out"]
    ins: list[str] = []
    for pos, ((_, text), vid) in enumerate(zip(shown, call.args, strict=True)):
        v = values[vid].value
        if type(v).__name__ == "DoubleList":
            got = [float(x) for x in text.strip("[]").split(", ")]
            assert got == pytest.approx(list(v.items), rel=REL)
            continue
        want = _expected_text(v, vid)
        if isinstance(want, float):
            assert float(text) == pytest.approx(want, rel=REL)
        else:
            assert text == want
        tensors = [vid] if type(v).__name__ == "VkTensor" else []
        if type(v).__name__ == "ValueList":
            tensors = [i for i in v.items if type(values[i].value).__name__ == "VkTensor"]
        if pos < len(call.args) - 1:
            ins += [f"v{i}" for i in tensors]
        else:
            assert node.outputs == [f"v{i}" for i in tensors]
    assert node.inputs == ins


def _check_tensors(g: DelegateGraph, graph: Any, pte: bytes) -> int:
    """Every tensor value as the oracle has it; returns its constant bytes."""
    constant_bytes = 0
    tensors = [(i, v.value) for i, v in enumerate(graph.values)]
    tensors = [(i, t) for i, t in tensors if type(t).__name__ == "VkTensor"]
    for i, t in tensors:
        ours = g.tensors[f"v{i}"]
        assert ours.shape == list(t.dims)
        assert ours.dtype == t.datatype.name.lower()
        assert ours.attrs["storage_type"].split(" ")[0] == t.storage_type.name
        assert ours.attrs["memory_layout"].split(" ")[0] == t.memory_layout.name
        staging = t.staging_datatype.name
        assert ours.attrs.get("staging_dtype", ours.dtype) == (
            ours.dtype if staging in ("UNSET", t.datatype.name) else staging.lower()
        )
        assert ours.attrs.get("mem_obj_id", "-1") == str(max(t.mem_obj_id, -1))
        if t.constant_id < 0:
            assert "constant_id" not in ours.attrs
            continue
        ref = graph.constants[t.constant_id]
        constant_bytes += ref.length
        assert ours.attrs["constant_bytes"] == str(ref.length)
        assert ours.constant_bytes == ref.length
        assert ours.attrs.get("named_key", "") == (ref.named_key or "")
        if ref.named_key:
            # The exporter names each constant by the sha256 of its bytes: the bytes at the
            # location we show must hash to it.
            source, _, at = ours.attrs["data"].partition(" @ ")
            assert source.endswith(".pte")
            blob = pte[int(at) : int(at) + ref.length]
            assert hashlib.sha256(blob).hexdigest() == ref.named_key
    assert sum(1 for t in g.tensors.values() if t.dtype in _DTYPES) >= len(tensors)
    return constant_bytes


_DTYPES = {"bool", "uint8", "int8", "int32", "float16", "float32", "float64", "int64"}


@pytest.mark.parametrize("path", VK_EXAMPLES, ids=lambda p: p.name)
def test_graph_matches_executorch(path: Path) -> None:
    program = loaded(path)
    expected = oracle(path)
    ours = vk_delegates(program)
    assert set(ours) == set(expected), "delegates found differ from ExecuTorch's"
    pte = path.read_bytes()
    for key, (_, graph, sizes, _) in expected.items():
        dec: DecodedDelegate = ours[key].decoded
        assert not dec.problems, dec.problems
        (g,) = dec.graphs
        assert len(g.nodes) == dec.inner_op_count == len(graph.chain)
        for node, call in zip(g.nodes, graph.chain, strict=True):
            _check_call(node, call, graph.values)
        assert g.inputs == [f"v{i}" for i in graph.input_ids]
        assert g.outputs == [f"v{i}" for i in graph.output_ids]
        assert dec.num_inputs is not None and dec.num_outputs is not None
        assert dec.num_inputs + dec.num_outputs == len(sizes)
        constant_bytes = _check_tensors(g, graph, pte)
        stats = dec.stats
        assert stats["vk_ops"] == len(graph.chain)
        assert stats["vk_values"] == len(graph.values)
        assert stats["vk_constants"] == len(graph.constants)
        assert stats["constant_bytes"] == constant_bytes
        assert stats["vk_input_bytes"] == sum(sizes[: dec.num_inputs])
        assert stats["vk_output_bytes"] == sum(sizes[dec.num_inputs :])
        assert dec.summary["version"] == graph.version
        assert dec.summary["storage_type_override"] == graph.storage_type_override.name
        assert dec.summary["memory_layout_override"] == graph.memory_layout_override.name


def test_every_value_type_but_boollist_is_in_the_examples() -> None:
    """The examples exercise the readers of every GraphTypes member the exporter writes for them
    (no operator of these models takes a list of bools)."""
    kinds = {
        type(v.value).__name__
        for path in VK_EXAMPLES
        for _, graph, _, _ in oracle(path).values()
        for v in graph.values
    }
    from executorch.backends.vulkan.serialization import vulkan_graph_schema as schema

    members = {t.__name__ for t in schema.GraphTypes.__args__}  # type: ignore[attr-defined]
    assert kinds == members - {"BoolList"}


@pytest.mark.parametrize("path", VK_EXAMPLES, ids=lambda p: p.name)
def test_layout_accounts_for_every_payload_byte(path: Path) -> None:
    program = loaded(path)
    for key, (header, _, _, payload) in oracle(path).items():
        d = vk_delegates(program)[key]
        layout = payload_layout(memoryview(payload), d.payload_offset, None)
        spans = sorted(layout.spans, key=lambda s: s.offset)
        base = d.payload_offset
        assert [(s.kind, s.offset - base, s.size) for s in spans[:2]] == [
            ("payload_header", 0, header.EXPECTED_LENGTH),
            ("vulkan_flatbuffer", header.flatbuffer_offset, header.flatbuffer_size),
        ]
        covered = bytearray(len(payload))
        for s in spans:
            assert covered[s.offset - base : s.offset - base + s.size].count(1) == 0
            covered[s.offset - base : s.offset - base + s.size] = b"\1" * s.size
        # Whatever the spans leave is the 16-byte alignment padding: zeros, and less than 16
        # bytes after each part.
        assert all(payload[i] == 0 for i in range(len(payload)) if not covered[i])
        assert covered.count(0) < 16 * 3
        assert header.bytes_size == sum(s.size for s in spans if s.kind == "vulkan_raw_bytes")
        named = {ref.named_key for ref in oracle(path)[key][1].constants if ref.named_key}
        assert set(layout.named_keys) == named


# The partitioner's log words (captured while each example was built) -> the kind of our reason.
_KIND_BY_LOG = {
    "no operator implementation": "not_listed",
    "op args not supported": "check",
    "dtype not supported": "dtype",
    "op does not support high dim tensors": "rank",
}


@pytest.mark.parametrize("path", VK_EXAMPLES, ids=lambda p: p.name)
def test_reasons_agree_with_what_the_partitioner_logged(path: Path) -> None:
    """Every CPU compute kernel's reason, from the `.pte` and the pinned rules, against the reason
    the real VulkanPartitioner logged for that node while the example was built
    (`<stem>.vulkan_skips.json`, examples/builders/vulkan.py)."""
    from pte_adapter.api import open_analysis

    skips = json.loads(path.with_suffix(".vulkan_skips.json").read_text())["skips"]
    logged = {".".join(s["target"].split(".")[:2]): s["reason"] for s in skips}
    analysis = open_analysis(path, profile=False)
    reasons = [r for m in analysis.methods for r in m.reasons]
    assert {target_base(r.operator) for r in reasons} == set(logged)
    for r in reasons:
        said = logged[target_base(r.operator)]
        assert r.backend == "Vulkan" and r.by == "rules"
        assert r.kind == _KIND_BY_LOG[said], (r, said)
        assert f'"{said}"' in r.text and "ExecuTorch 1.5.1" in r.text, r.text
