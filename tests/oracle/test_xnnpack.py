"""XNNPACK payloads: our decoder against ExecuTorch's own XNNPACK serialization classes.

The oracle is independent of our reader: ExecuTorch's `deserialize_pte_binary` gets each payload,
its `XNNHeader.from_bytes` splits it, the `flatc` shipped in the executorch wheel turns the
FlatBuffer into JSON with the exporter's own `schema.fbs`, and ExecuTorch's `_json_to_dataclass`
rebuilds the `XNNGraph` dataclasses the exporter serialised. Every expected number comes from that
graph, never from this file.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import struct
import subprocess
from dataclasses import fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.delegates.xnnpack import decode as xnnpack
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from pte_adapter.program.model import Delegate, Program
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import EXAMPLES

XNN_EXAMPLES = sorted(EXAMPLES.glob("*xnnpack*.pte"))
INVALID = 0xFFFFFFFF
# flatc's JSON prints floats with 6 decimal places, our attributes with 6 significant digits: both
# round, so compare with that much slack.
REL = 1e-4
ABS = 1e-6


# -- oracle ------------------------------------------------------------------------------------


def _flatc_json(fb: bytes, tmp: Path) -> dict[str, Any]:
    import executorch.backends.xnnpack.serialization as ser
    from executorch.exir._serialize._flatbuffer import _get_flatc_path

    (tmp / "schema.fbs").write_bytes(resources.files(ser).joinpath("schema.fbs").read_bytes())
    (tmp / "g.bin").write_bytes(fb)
    subprocess.run(
        [_get_flatc_path(), "--json", "--strict-json", "--defaults-json", "--raw-binary",
         "-o", str(tmp), str(tmp / "schema.fbs"), "--", str(tmp / "g.bin")],
        check=True, capture_output=True,
    )  # fmt: skip
    text = (tmp / "g.json").read_text()
    # flatc writes non-finite floats bare (`inf`), which JSON has no word for.
    text = re.sub(r"(?<=[\s:\[,])(-?)inf\b", r"\1Infinity", text)
    text = re.sub(r"(?<=[\s:\[,])-?nan\b", "NaN", text)
    result: dict[str, Any] = json.loads(text)
    return result


@cache
def oracle(path: Path) -> dict[tuple[str, int], Any]:
    """(method, delegate index) -> (XNNGraph dataclass, DelegateCall arg count, named data)."""
    import tempfile

    from executorch.backends.xnnpack.serialization.xnnpack_graph_schema import XNNGraph
    from executorch.backends.xnnpack.serialization.xnnpack_graph_serialize import XNNHeader
    from executorch.exir._serialize._dataclass import _json_to_dataclass
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = deserialize_pte_binary(path.read_bytes())
    prog = pte.program
    named: dict[str, bytes] = {}
    if pte.named_data is not None:
        for key, entry in pte.named_data.pte_data.items():
            named[key] = bytes(pte.named_data.buffers[entry.buffer_index])
    out: dict[tuple[str, int], Any] = {}
    for plan in prog.execution_plan:
        nargs: dict[int, int] = {}
        for chain in plan.chains:
            for ins in chain.instructions:
                if type(ins.instr_args).__name__ == "DelegateCall":
                    nargs[ins.instr_args.delegate_index] = len(ins.instr_args.args)
        for i, d in enumerate(plan.delegates):
            if d.id != "XnnpackBackend":
                continue
            payload = prog.backend_delegate_data[d.processed.index].data
            header = XNNHeader.from_bytes(payload[: XNNHeader.EXPECTED_LENGTH])
            fb = payload[
                header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size
            ]
            with tempfile.TemporaryDirectory() as tmp:
                graph = _json_to_dataclass(_flatc_json(fb, Path(tmp)), XNNGraph)
            out[(plan.name, i)] = (graph, nargs.get(i), named)
    return out


# -- helpers -----------------------------------------------------------------------------------


@cache
def loaded(path: Path) -> Program:
    return pte_adapter.load(path)


def xnn_delegates(program: Program) -> list[tuple[str, Delegate]]:
    return [(m.name, d) for m in program.methods for d in m.delegates if d.id == "XnnpackBackend"]


def test_the_xnnpack_examples_ship() -> None:
    # Shipped examples that are missing are a failure, not a skip.
    assert [p.name for p in XNN_EXAMPLES] == [
        "lrn_pow_xnnpack.pte",
        "lrn_rsqrt_xnnpack.pte",
        "mv2_xnnpack_fp32.pte",
        "mv2_xnnpack_int8.pte",
        "numerics_xnnpack_fp32.pte",
        "numerics_xnnpack_int8.pte",
        "tiny_gpt_xnnpack.pte",
        "tiny_llama_xnnpack.pte",
        "wide_xnnpack.pte",
        "xnnpack_lrn.pte",
        "xnnpack_ptd.pte",
    ]


# -- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", XNN_EXAMPLES, ids=lambda p: p.name)
def test_graph_matches_executorch(path: Path) -> None:
    program = loaded(path)
    expected = oracle(path)
    ours = {(m, d.index): d for m, d in xnn_delegates(program)}
    assert set(ours) == set(expected), "delegates found differ from ExecuTorch's"
    assert ours, f"{path.name} has no XNNPACK delegate"
    for key, (graph, nargs, named) in expected.items():
        dec: DecodedDelegate = ours[key].decoded
        assert not dec.problems, dec.problems
        g = dec.graphs[0]
        # Node kinds, order and counts.
        kinds = [type(n.xnode_union).__name__.removeprefix("XNN") for n in graph.xnodes]
        assert [n.kind for n in g.nodes] == kinds
        assert dec.inner_op_count == len(graph.xnodes)
        # Graph boundary and the DelegateCall input/output split.
        assert dec.num_inputs == len(graph.input_ids)
        assert dec.num_outputs == len(graph.output_ids)
        assert g.inputs == [f"v{i}" for i in graph.input_ids]
        assert g.outputs == [f"v{i}" for i in graph.output_ids]
        if nargs is not None:
            assert dec.num_inputs + dec.num_outputs == nargs
        for ours_node, xnode in zip(g.nodes, graph.xnodes, strict=True):
            _check_node(ours_node, xnode)
        assert len(g.tensors) == len(graph.xvalues)
        for xv in graph.xvalues:
            _check_value(g.tensors, xv.xvalue_union, graph, named)


def _check_node(node: Any, xnode: Any) -> None:
    params = xnode.xnode_union
    ins, outs = [], []
    list_lengths = {
        len(v) for v in (getattr(params, f.name) for f in fields(params)) if isinstance(v, list)
    }
    for f in fields(params):
        v = getattr(params, f.name)
        if f.name.endswith("_id"):
            if v != INVALID:
                (outs if f.name.startswith("output") else ins).append(f"v{v}")
            # A positional operand (input_id, input2_id, output_id) is the port's tensor v<id>;
            # a role (filter_id, bias_id) and an absent operand are attributes.
            if re.fullmatch(r"(input|output)\d*_id", f.name) and v != INVALID:
                assert f.name not in node.attrs, f.name
            else:
                assert node.attrs[f.name] == ("none" if v == INVALID else str(v)), f.name
        elif f.name == "num_dims" and v in list_lengths:
            assert "num_dims" not in node.attrs  # the shape or permutation beside it says it
        elif isinstance(v, bool | int) and f.name != "flags":
            assert node.attrs[f.name] == str(int(v)), f.name
        elif isinstance(v, float):
            assert float(node.attrs[f.name]) == pytest.approx(v, rel=REL, abs=ABS), f.name
        elif isinstance(v, list) and all(isinstance(x, int) for x in v) and len(v) <= 8:
            assert node.attrs[f.name] == str(list(v)), f.name
        elif f.name == "flags":
            # Shown only when set: 0 is the default, stated once (docs/model-explorer.md).
            assert int(node.attrs["flags"], 16) == v if v else "flags" not in node.attrs
            assert node.params["flags"] == v
    assert node.inputs == ins
    assert node.outputs == outs
    assert node.attrs["debug_handle"] == str(xnode.debug_handle)
    if xnode.output_min_max is not None:
        assert float(node.attrs["output_min"]) == pytest.approx(xnode.output_min_max.output_min)
        assert float(node.attrs["output_max"]) == pytest.approx(xnode.output_min_max.output_max)
    else:
        assert "output_min" not in node.attrs


def _check_value(tensors: dict[str, Any], value: Any, graph: Any, named: dict[str, bytes]) -> None:
    quant = None
    if type(value).__name__ == "XNNQuantizedTensorValue":
        quant = value.quant_params
        value = value.tensor_value
    t = tensors[f"v{value.id_out}"]
    assert t.shape == list(value.dims)
    # external_input / external_output alone: the tensor's name says it ("input v0"); other flags
    # are shown (docs/model-explorer.md, "Defaults, said once").
    role = {1: "input ", 2: "output "}.get(value.flags)
    if role is not None:
        assert t.name.startswith(role) and "flags" not in t.attrs
    elif value.flags:
        assert "flags" in t.attrs
    else:
        assert "flags" not in t.attrs
    assert "xnn_datatype_" + t.dtype == value.datatype.name
    if value.constant_buffer_idx:
        entry = graph.constant_data[value.constant_buffer_idx]
        assert t.attrs["constant_bytes"] == str(entry.size)
        assert t.attrs["named_key"] == entry.named_key
        # XNNPACK names constants by the sha256 of their bytes: the located bytes must hash to it.
        if not entry.named_key.startswith("scale_") and entry.named_key in named:
            assert hashlib.sha256(named[entry.named_key]).hexdigest() == entry.named_key
        _check_location(t.attrs["data"], entry)
    else:
        assert "constant_bytes" not in t.attrs
    if quant is None:
        assert "quantization" not in t.attrs
        return
    kind = type(quant).__name__
    assert t.attrs["quantization"] == kind
    if kind == "PerTensorQuant":
        assert float(t.attrs["scale"]) == pytest.approx(quant.scale, rel=REL, abs=ABS)
        assert int(t.attrs["zero_point"]) == quant.zero_point
    elif kind == "PerChannelQuant":
        assert int(t.attrs["channel_dim"]) == quant.channel_dim
        count = quant.num_scales if not quant.scale else len(quant.scale)
        assert int(t.attrs["num_scales"]) == count
        if not quant.scale:
            key = graph.constant_data[quant.scale_buffer_idx].named_key
            raw = named[key]
            first = struct.unpack_from("<f", raw, 0)[0]
            shown = t.attrs["scales"].strip("[").split(",")[0]
            assert float(shown) == pytest.approx(first, rel=REL, abs=ABS)


_LOCATION_CACHE: dict[str, bytes] = {}


def _check_location(where: str, entry: Any) -> None:
    """'<file> @ <offset>': the bytes there must be the constant (sha256 of them = the key)."""
    m = re.fullmatch(r"(.+) @ (\d+)", where)
    assert m, where
    path = next((p for p in EXAMPLES.iterdir() if p.name == m.group(1)), None)
    assert path is not None, where
    if path.name not in _LOCATION_CACHE:
        _LOCATION_CACHE[path.name] = path.read_bytes()
    data = _LOCATION_CACHE[path.name]
    off = int(m.group(2))
    blob = data[off : off + entry.size]
    digest = hashlib.sha256(blob).hexdigest()
    assert entry.named_key in (digest, "scale_" + digest)


def test_both_storage_forms_seen() -> None:
    storages = {d.storage for p in XNN_EXAMPLES for _, d in xnn_delegates(loaded(p))}
    assert storages == {"inline", "segment"}


def test_int8_example_is_quantized() -> None:
    paths = [p for p in XNN_EXAMPLES if "int8" in p.name]
    assert paths, "mv2_xnnpack_int8.pte is missing: run python -m examples.build_examples"
    kinds = {
        t.attrs.get("quantization")
        for p in paths
        for _, d in xnn_delegates(loaded(p))
        for g in d.decoded.graphs
        for t in g.tensors.values()
    }
    # A statically quantized CNN has per-tensor activations and per-channel weights.
    assert {"PerTensorQuant", "PerChannelQuant"} <= kinds


# -- robustness --------------------------------------------------------------------------------


def _payload_and_ctx() -> tuple[bytes, DecodeContext]:
    for path in XNN_EXAMPLES:
        program = loaded(path)
        for _, d in xnn_delegates(program):
            if d.payload_offset is None or d.payload_size is None or program.sources is None:
                continue
            raw = bytes(path.read_bytes()[d.payload_offset : d.payload_offset + d.payload_size])
            ctx = DecodeContext(delegate_id=d.id, sources=program.sources, payload_offset=0)
            return raw, ctx
    raise AssertionError(
        "no XNNPACK payload in the examples: run python -m examples.build_examples"
    )


def test_not_xnnpack_is_a_format_error() -> None:
    ctx = DecodeContext(delegate_id="XnnpackBackend")
    for bad in (b"", b"\0" * 7, b"\0\0\0\0XH00" + b"\0" * 4, b"\0\0\0\0XYZW" + b"\0" * 40):
        with pytest.raises(PteFormatError):
            xnnpack.decode(memoryview(bad), ctx)


def test_truncations_raise_format_error_only() -> None:
    """The payload's header states the graph's size: every cut is short of it and refused."""
    raw, ctx = _payload_and_ctx()
    out: Outcomes[DecodedDelegate] = Outcomes("cuts of an XNNPACK payload")
    for n in range(0, len(raw), max(1, len(raw) // 97)):
        out.attempt(n, xnnpack.decode, memoryview(raw[:n]), ctx)
    assert out.tried >= 97 and len(out.rejected) == out.tried, out


def test_mutations_raise_format_error_only() -> None:
    raw, ctx = _payload_and_ctx()
    fb_end = min(len(raw), 32 + struct.unpack_from("<I", raw, 14)[0])  # mutate header + graph
    rng = random.Random(279)
    out: Outcomes[DecodedDelegate] = Outcomes("byte edits of an XNNPACK header and graph")
    for _ in range(300):
        data, edits = byte_edits(rng, raw, span=(0, fb_end))
        out.attempt(tuple(edits), xnnpack.decode, memoryview(data), ctx)
    # Measured: 210 of 300 (70 %); the rest hit values (shapes, ids, quantization) the graph
    # holds as data.
    assert out.rejected_share >= 0.5, out
    for edits, result in out.accepted:
        assert result.inner_op_count is not None and result.graphs[0].nodes, edits
