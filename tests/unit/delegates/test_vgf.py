"""VGF payloads (`VgfBackend`): the container, the SPIR-V inside and the partition's graph.

The examples are built by `examples/builders/vgf.py` (ExecuTorch's VGF backend + Arm
model-converter 0.11.0): a small CNN (INT8 in a delegate segment, float inline), MobileNetV2 (INT8
inline, float in a segment) and a grid_sample model whose warp is a compute shader between two
graph segments. Here: invariants and hand-checked facts on those real files; the independent
oracles (vgf_dump, spirv-dis, the converter's .tosa input, vgfpy) are in
tests/oracle/test_vgf_oracle.py, corrupt input in tests/robustness/test_vgf_corrupt.py.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.diff import diff_programs
from pte_adapter.analysis.size import size_report
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vgf import decode as vgf
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph
from pte_adapter.render.diff_report import diff_json
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import EXAMPLES, example

VGF_EXAMPLES = ("vgf_small", "vgf_small_fp", "vgf_mv2_int", "vgf_mv2_fp", "vgf_grid_sample")
SEGMENT_KINDS = ("GRAPH_SEGMENT", "COMPUTE_SEGMENT")


def test_the_examples_ship() -> None:
    # A shipped example that is missing is a failure, not a skip; each keeps its converter input.
    for name in VGF_EXAMPLES:
        example(name)
        assert list((EXAMPLES / f"{name}_artifacts").glob("*.tosa")), name


def executorch_payloads(name: str) -> list[tuple[bytes, int]]:
    """(payload, DelegateCall arg count) per VgfBackend delegate, via ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(example(name).read_bytes()).program
    out = []
    for plan in prog.execution_plan:
        nargs = {
            ins.instr_args.delegate_index: len(ins.instr_args.args)
            for chain in plan.chains
            for ins in chain.instructions
            if type(ins.instr_args).__name__ == "DelegateCall"
        }
        for i, d in enumerate(plan.delegates):
            if d.id == "VgfBackend":
                out.append((bytes(prog.backend_delegate_data[d.processed.index].data), nargs[i]))
    return out


def _decode(payload: bytes) -> DecodedDelegate:
    return vgf.decode(memoryview(payload), DecodeContext(delegate_id="VgfBackend"))


def _delegates(name: str) -> list[Any]:
    program = pte_adapter.load(example(name))
    return [d for m in program.methods for d in m.delegates if d.id == "VgfBackend"]


def _tosa_nodes(g: DelegateGraph) -> list[Any]:
    return [n for n in g.nodes if n.kind not in SEGMENT_KINDS]


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_loads_with_its_graph_and_io_split(name: str) -> None:
    delegates = _delegates(name)
    expected = executorch_payloads(name)
    assert len(delegates) == len(expected) >= 1
    for d, (payload, nargs) in zip(delegates, expected, strict=True):
        dec = d.decoded
        assert not dec.problems, dec.problems
        assert dec.summary["format"].startswith("VGF ")
        assert dec.num_inputs is not None and dec.num_outputs is not None
        assert dec.num_inputs + dec.num_outputs == nargs
        assert d.payload_size == len(payload)  # the payload our reader found is ExecuTorch's
        main, sequence = dec.graphs
        assert (main.name, sequence.name) == (vgf.MAIN_VIEW, vgf.SEQUENCE_VIEW)
        # The main view is drawn inline: its inputs/outputs are the DelegateCall's.
        assert (len(main.inputs), len(main.outputs)) == (dec.num_inputs, dec.num_outputs)
        assert _tosa_nodes(main), "no TOSA operator decoded"
        assert sequence.nodes and all(n.kind in SEGMENT_KINDS for n in sequence.nodes)
        assert {t.attrs["category"] for t in sequence.tensors.values()} >= {"INPUT", "OUTPUT"}


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_edges_follow_spirv_ids(name: str) -> None:
    """Every operand is a graph input, an earlier operation's result or a constant; every result
    is written once; every graph output is written."""
    for d in _delegates(name):
        g = d.decoded.graphs[0]
        written = set(g.inputs)
        for node in g.nodes:
            for tid in node.inputs:
                t = g.tensors[tid]
                assert tid in written or "constant" in t.attrs or "constant_bytes" in t.attrs, (
                    node.id,
                    tid,
                )
            for tid in node.outputs:
                assert tid not in written, f"{tid} written twice"
                written.add(tid)
        assert set(g.outputs) <= written
        for node in _tosa_nodes(g):
            assert node.attrs["spirv_result"].startswith("%")
            out = g.tensors[node.outputs[0]]
            assert out.shape is not None and out.dtype, node.id  # from the SPIR-V tensor type


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_weights_are_byte_spans_in_the_constant_section(name: str) -> None:
    data = example(name).read_bytes()
    for d in _delegates(name):
        g = d.decoded.graphs[0]
        lo, hi = d.payload_offset, d.payload_offset + d.payload_size
        weights = [t for t in g.tensors.values() if "constant_bytes" in t.attrs]
        assert weights
        readers = Counter(tid for n in g.nodes for tid in n.inputs)
        for t in weights:
            offset, size = int(t.attrs["file_offset"]), int(t.attrs["constant_bytes"])
            assert lo <= offset and offset + size <= hi
            n = 1
            for dim in t.shape or []:
                n *= dim
            assert size == n * {"int8": 1, "int16": 2, "int32": 4, "float32": 4}[t.dtype], t
            assert readers[t.id] >= 1, f"no operator reads {t.name}"
            assert data[offset : offset + size]  # in the file, not a copy
        assert d.decoded.stats["constant_bytes"] == sum(
            int(t.attrs["constant_bytes"]) for t in weights
        )


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_partition_numbers(name: str) -> None:
    program = pte_adapter.load(example(name))
    result = pte_adapter.analyse(program)
    for m, ma in zip(program.methods, result.methods, strict=True):
        parts = [p for p in ma.summary.partitions if p.backend == "VgfBackend"]
        assert len(parts) == len(m.delegates)
        for d, p in zip(m.delegates, parts, strict=True):
            dec = d.decoded
            tosa = _tosa_nodes(dec.graphs[0])
            stats = dec.stats
            assert stats["tosa_ops"] == len(tosa)
            counts = Counter(n.kind for n in tosa)
            assert stats["tosa_op_counts"] == ", ".join(
                f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            )
            assert dec.inner_op_count == len(tosa) + stats["vgf_compute_segments"]
            assert p.inner_ops == dec.inner_op_count
            assert p.delegate_stats == stats
            # Bytes in and out: the sequence's resources are the DelegateCall's tensors.
            assert stats["vgf_input_bytes"] == p.bytes_in
            assert stats["vgf_output_bytes"] == p.bytes_out


def test_mobilenet_operators() -> None:
    # Hand-checked against the model: 17 inverted residual blocks (16 with an expansion 1x1),
    # so 1 + 16 + 17 + 1 = 35 1x1/3x3 convolutions plus the classifier as a 1x1 CONV2D; 10 blocks
    # add their input back (11 at width 0.25, where the first block keeps its 8 channels); ReLU6
    # is a CLAMP in float (folded into RESCALE in INT8).
    counts = {}
    for name in ("vgf_mv2_int", "vgf_mv2_fp"):
        (d,) = _delegates(name)
        counts[name] = Counter(n.kind for n in _tosa_nodes(d.decoded.graphs[0]))
        assert counts[name]["DEPTHWISE_CONV2D"] == 17
        assert counts[name]["CONV2D"] == 36
    assert counts["vgf_mv2_int"]["ADD"] == 10
    assert counts["vgf_mv2_int"]["AVG_POOL2D"] == 1
    assert counts["vgf_mv2_int"]["CLAMP"] == 0 < counts["vgf_mv2_int"]["RESCALE"]
    assert counts["vgf_mv2_fp"]["CLAMP"] == 35
    assert counts["vgf_mv2_fp"]["RESCALE"] == 0
    # Float average pooling is lowered as two sums and a multiply.
    assert counts["vgf_mv2_fp"]["REDUCE_SUM"] == 2 and counts["vgf_mv2_fp"]["MUL"] == 1
    assert counts["vgf_mv2_fp"]["ADD"] == 11


def test_compute_shader_segment_between_graph_segments() -> None:
    (d,) = _delegates("vgf_grid_sample")
    main, sequence = d.decoded.graphs
    assert [n.kind for n in sequence.nodes] == ["GRAPH_SEGMENT", "COMPUTE_SEGMENT", "GRAPH_SEGMENT"]
    (shader,) = [n for n in main.nodes if n.kind == "COMPUTE_SEGMENT"]
    assert shader.attrs["execution_model"] == "GLCompute"
    assert shader.attrs["execution_mode LocalSize"] == "8 x 8 x 1"
    assert shader.attrs["dispatch_shape"] == "[2, 2, 1]"
    assert "TensorsARM" in shader.attrs["capabilities"]
    # The shader reads the first graph's output (the same storage, as an image: one alias group)
    # and the grid input; the second graph reads what the shader writes.
    first = [n for n in main.nodes if n.namespace == "graph_segment_0"]
    second = [n for n in main.nodes if n.namespace == "graph_segment_1"]
    assert [n.kind for n in first] == ["TRANSPOSE", "CONV2D", "CLAMP"]
    assert [n.kind for n in second] == ["CONV2D", "TRANSPOSE"]
    assert first[-1].outputs[0] in shader.inputs
    assert main.inputs[1] in shader.inputs
    assert shader.outputs[0] == second[0].inputs[0]
    assert "aliases" in main.tensors[shader.outputs[0]].attrs
    assert shader.namespace == ""


def test_attributes_and_inline_constants() -> None:
    (d,) = _delegates("vgf_small")
    g = d.decoded.graphs[0]
    conv = next(n for n in g.nodes if n.kind == "CONV2D")
    # Operands before the first input are attributes, shown with their values.
    assert conv.attrs["pad"] == "[1, 1, 1, 1]"
    assert conv.attrs["stride"] == conv.attrs["dilation"] == "[1, 1]"
    assert conv.attrs["local_bound"] == "false"
    assert conv.attrs["inputs"] == "input, weight, bias, input_zp, weight_zp"
    bias = g.tensors[conv.inputs[2]]
    assert bias.attrs["constant"] == "inline in the SPIR-V module"
    assert bias.shape == [8] and bias.dtype == "int32"
    assert bias.attrs["values"].startswith("[") and bias.attrs["values"].count(",") == 7
    weight = g.tensors[conv.inputs[1]]
    assert weight.attrs["category"] == "CONSTANT" and weight.shape == [8, 3, 3, 3]
    rescale = next(n for n in g.nodes if n.kind == "RESCALE")
    assert rescale.attrs["scale32"] == "true" and rescale.attrs["input_unsigned"] == "false"
    assert rescale.attrs["inputs"] == "input, multiplier, shift, input_zp, output_zp"


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_size_accounts_for_every_payload_byte(name: str) -> None:
    report = size_report(pte_adapter.load(example(name)))
    totals = report.totals()
    assert sum(totals.values()) == example(name).stat().st_size
    assert not any(k.startswith("payload_") for k in totals), totals  # nothing opaque
    (d,) = _delegates(name)
    assert totals["vgf_constant"] == d.decoded.stats["constant_bytes"]
    spirv = sum(v for k, v in totals.items() if k.startswith("spirv_"))
    assert spirv == d.decoded.stats["vgf_spirv_bytes"]
    assert report.problems == []


def test_diff_pairs_vgf_partitions() -> None:
    diff = diff_json(
        diff_programs(
            pte_adapter.analyse(pte_adapter.load(example("vgf_small"))),
            pte_adapter.analyse(pte_adapter.load(example("vgf_small_fp"))),
        )
    )
    pairs = [p for m in diff["methods"] for p in m["partitions"] if p["status"] == "same role"]
    (pair,) = [p for p in pairs if p["before"]["backend"] == "VgfBackend"]
    assert pair["after"]["backend"] == "VgfBackend"
    assert pair["before"]["stats"]["tosa_ops"] == 13  # RESCALEs of the INT8 graph
    assert pair["after"]["stats"]["tosa_ops"] == 11
    assert diff["size"]["by_kind"]["vgf_constant"]["delta"] > 0  # float weights are larger


def test_not_vgf_is_a_format_error() -> None:
    for bad in (b"", b"VGF1" + b"\0" * 20, b"XXXX" + b"\0" * 200):
        with pytest.raises(PteFormatError):
            _decode(bad)


def test_corruptions_raise_format_error_only() -> None:
    payload = executorch_payloads("vgf_small")[0][0]
    cuts: Outcomes[Any] = Outcomes("cuts of a VGF payload")
    for n in range(0, len(payload), max(1, len(payload) // 61)):
        cuts.attempt(n, _decode, payload[:n])
    # The header's section table reaches the end of the payload: every cut is refused.
    assert cuts.tried >= 61 and len(cuts.rejected) == cuts.tried, cuts
    rng = random.Random(139)
    edits: Outcomes[Any] = Outcomes("byte edits of a VGF payload")
    for _ in range(300):
        data, label = byte_edits(rng, payload)
        edits.attempt(tuple(label), _decode, data)
    # Measured: 124 of 300 (41 %); most accepted edits decode exactly like the intact payload
    # (they hit bytes the decoder does not interpret).
    assert edits.rejected_share >= 0.25, edits
    for label, result in edits.accepted:
        # Shown with its operators, or (a module the SPIR-V reader refused) with what is wrong.
        assert (result.graphs and result.graphs[0].nodes) or result.problems, label


def test_legacy_constant_references_are_identity_bindings(tmp_path: Path) -> None:
    """Arm's encoder writes segments without explicit graph constant bindings when given plain
    constant references (files before format 0.5 have none): graph constant id = constant index."""
    import vgfpy

    payload, _ = executorch_payloads("vgf_small")[0]
    ours = _decode(payload)
    enc = vgfpy.CreateEncoder(0)
    parsed = vgf.read_vgf(memoryview(payload), "x", 0)
    (module,) = parsed.modules
    assert module.spirv is not None
    words = list(memoryview(bytes(module.spirv)).cast("I"))
    mref = enc.AddModule(vgfpy.ModuleType.Graph, module.name, module.entry_point, words)
    resources = []
    for r in parsed.resources:
        if r.category == "CONSTANT":
            resources.append(enc.AddConstantResource(r.vk_format, r.shape, r.strides))
        elif r.category == "INPUT":
            resources.append(
                enc.AddInputResource(r.vk_descriptor_type, r.vk_format, r.shape, r.strides)
            )
        else:
            resources.append(
                enc.AddOutputResource(r.vk_descriptor_type, r.vk_format, r.shape, r.strides)
            )
    consts = [
        enc.AddConstant(resources[c.mrt_index], payload[c.offset : c.offset + c.size])
        for c in parsed.constants
    ]
    (seg,) = parsed.segments
    ins = [enc.AddBindingSlot(b.binding, resources[b.mrt_index]) for b in seg.inputs]
    outs = [enc.AddBindingSlot(b.binding, resources[b.mrt_index]) for b in seg.outputs]
    dset = enc.AddDescriptorSetInfo(ins + outs, 0)
    enc.AddSegmentInfo(mref, seg.name, [dset], ins, outs, consts)
    enc.AddModelSequenceInputsOutputs(ins, parsed.input_names, outs, parsed.output_names)
    enc.Finish()
    path = tmp_path / "legacy.vgf"
    with path.open("wb") as f:
        assert enc.WriteTo(f)
    rebuilt = _decode(path.read_bytes())
    assert not rebuilt.problems, rebuilt.problems
    g0, g1 = ours.graphs[0], rebuilt.graphs[0]
    assert [n.kind for n in g1.nodes] == [n.kind for n in g0.nodes]
    assert [g1.tensors[t].shape for n in g1.nodes for t in n.inputs] == [
        g0.tensors[t].shape for n in g0.nodes for t in n.inputs
    ]
