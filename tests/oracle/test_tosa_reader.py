"""The TOSA reader against independent oracles.

- tosa-tools' generated Python readers (`tosa.TosaGraph` ...) read the same bytes; operators,
  attributes and tensors must agree.
- ExecuTorch's own deserializer extracts the TOSABackend payloads from the example programs.
- tosa-tools' serializer (`tosa_serializer`, the writer ExecuTorch uses) builds small graphs,
  including a TOSA 1.1 one; versions are then patched in place to probe version handling.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.tosa.decode import decode, read_tosa, read_tosa_file
from pte_adapter.delegates.tosa.reader import SMALL_CONSTANT_ELEMENTS
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.examples import EXAMPLES
from tests.support.oracles import tosa_enum, tosa_oracle_graph

TOSA_EXAMPLES = ("mv2_tosa.pte", "tosa_debug.pte")

# The adapter's readable dtype names: schema names lower-cased, floats named like PyTorch's.
READABLE_FLOATS = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16"}


# -- oracle: tosa-tools' generated readers -------------------------------------------------------


ORACLE_ENUM_FIELDS = {
    "acc_type": "DType",
    "nan_mode": "NanPropagationMode",
    "rounding_mode": "RoundingMode",
    "mode": "ResizeMode",
    "block_size": "BlockSize",
}


def _camel(field: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in field.split("_"))


def _readable_dtype(oracle_name: str) -> str:
    return READABLE_FLOATS.get(oracle_name, oracle_name.lower())


def check_against_oracle(buf: bytes) -> tuple[int, int]:
    """Assert our reader agrees with tosa-tools on `buf`; returns (operators, tensors) compared."""
    model = read_tosa(buf)
    oracle = tosa_oracle_graph(buf)
    assert {(b.region, b.name) for b in model.blocks} == set(oracle)
    n_ops = n_tensors = 0
    for block in model.blocks:
        want = oracle[(block.region, block.name)]
        assert [op.kind for op in block.operators] == [o["kind"] for o in want["ops"]]
        assert block.inputs == want["inputs"]
        assert block.outputs == want["outputs"]
        for op, o in zip(block.operators, want["ops"], strict=True):
            assert op.inputs == o["inputs"] and op.outputs == o["outputs"], op.index
            if o["attr"] is not None:
                first = want["tensors"].get(o["inputs"][0]) if o["inputs"] else None
                _check_attribute(op.attrs, o["attr"], first["dtype"] if first else "")
        declared = {k: v for k, v in block.tensors.items() if not v.is_shape}
        assert set(declared) == set(want["tensors"])
        for name, t in declared.items():
            w = want["tensors"][name]
            assert (t.shape or []) == w["shape"], name
            assert t.dtype == _readable_dtype(w["dtype"]), name
            assert t.tosa_dtype == w["dtype"], name
            assert t.data_size == w["data"], name
        shapes = {k: v for k, v in block.tensors.items() if v.is_shape}
        assert {k: (v.shape, v.data_size) for k, v in shapes.items()} == {
            k: ([v["rank"]], v["data"]) for k, v in want["shapes"].items()
        }
        n_ops += len(block.operators)
        n_tensors += len(declared) + len(shapes)
    return n_ops, n_tensors


RAW_FORMATS = {"INT8": "b", "INT16": "h", "INT32": "i", "FP32": "f", "FP16": "e"}


def _check_attribute(ours: dict[str, str], table: Any, element: str) -> None:
    """Every int/bool/list/enum field tosa-tools can read must read the same in our attrs."""
    compared = 0
    for key, value in ours.items():
        camel = _camel(key)
        if hasattr(table, camel + "AsNumpy") and hasattr(table, camel + "Length"):
            arr = getattr(table, camel + "AsNumpy")()
            if key in ("min_val", "max_val"):
                # Raw bytes, shown as values of the input's element type.
                fmt = RAW_FORMATS[element]
                raw = bytes(arr.tobytes())
                values = struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw)
                text = [str(v) for v in values]
                assert value == (text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"), key
            elif key != "implementation_attrs":
                assert value == str([int(x) for x in arr]), key
            compared += 1
        elif hasattr(table, camel) and key in ORACLE_ENUM_FIELDS:
            names = tosa_enum(ORACLE_ENUM_FIELDS[key])
            name = names[getattr(table, camel)()]
            expected = _readable_dtype(name) if key == "acc_type" else name
            assert value == expected, key
            compared += 1
        elif hasattr(table, camel):
            raw = getattr(table, camel)()
            if isinstance(raw, bool):
                assert value == str(raw).lower(), key
            elif isinstance(raw, int):
                assert value == str(raw), key
            elif isinstance(raw, bytes):
                assert value == raw.decode(), key
            compared += 1
    assert compared == len([k for k in ours if hasattr(table, _camel(k))])


# -- payloads from the example programs, through ExecuTorch's deserializer --------------------------


def tosa_payloads(pte: Path) -> Iterator[tuple[int, bytes, dict[str, bytes]]]:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes()).program
    for plan in program.execution_plan:
        for i, d in enumerate(plan.delegates):
            if d.id != "TOSABackend":
                continue
            # Segments are moved back inline by the deserializer.
            data = bytes(program.backend_delegate_data[d.processed.index].data)
            yield i, data, {c.key: bytes(c.value) for c in d.compile_specs}


def _example(name: str) -> Path:
    path = EXAMPLES / name
    # A shipped example that is missing is a failure, not a skip.
    assert path.exists(), f"{name} is missing: run python -m examples.build_examples"
    return path


@pytest.mark.parametrize("name", TOSA_EXAMPLES)
def test_example_payload_matches_tosa_tools(name: str) -> None:
    path = _example(name)
    payloads = list(tosa_payloads(path))
    assert payloads, f"{name} has no TOSABackend delegate"
    for _, data, specs in payloads:
        n_ops, n_tensors = check_against_oracle(data)
        assert n_ops > 0 and n_tensors > 0
        decoded = decode(memoryview(data), DecodeContext("TOSABackend", specs, pte_path=path))
        _check_decoded(decoded, data, specs)


def _check_decoded(decoded: DecodedDelegate, data: bytes, specs: dict[str, bytes]) -> None:
    oracle = tosa_oracle_graph(data)
    main = oracle[("main", "main")] if ("main", "main") in oracle else next(iter(oracle.values()))
    graph = decoded.graphs[0]
    assert graph.name == "TOSA main"
    assert [n.kind for n in graph.nodes] == [o["kind"] for o in main["ops"]]
    assert graph.inputs == main["inputs"] and graph.outputs == main["outputs"]
    assert decoded.num_inputs == len(main["inputs"])
    assert decoded.num_outputs == len(main["outputs"])
    compute = sum(
        1 for b in oracle.values() for o in b["ops"] if o["kind"] not in ("CONST", "CONST_SHAPE")
    )
    assert decoded.inner_op_count == compute
    assert len(decoded.graphs) == len(oracle)
    for tname, t in main["tensors"].items():
        info = graph.tensors[tname]
        assert info.shape == t["shape"] and info.dtype == _readable_dtype(t["dtype"])
        if t["data"]:
            assert info.attrs["constant_bytes"] == str(t["data"])
        else:
            assert "constant_bytes" not in info.attrs
    if "tosa_spec" in specs:
        assert decoded.summary["tosa_spec"] == specs["tosa_spec"].decode()
    assert decoded.summary["tosa_constant_bytes"] == str(
        sum(
            t["data"]
            for b in oracle.values()
            for t in (*b["tensors"].values(), *b["shapes"].values())
        )
    )
    assert not decoded.problems


def test_example_payload_equals_sidecar() -> None:
    """formats.md: a TOSABackend payload is its sidecar file byte for byte; read_tosa_file agrees."""
    path = _example("mv2_tosa.pte")
    sidecars = sorted((EXAMPLES / "mv2_tosa_artifacts").glob("output_*.tosa"))
    assert sidecars, (
        "mv2_tosa_artifacts/ holds no output_*.tosa: run python -m examples.build_examples"
    )
    payloads = [data for _, data, _ in tosa_payloads(path)]
    for sidecar in sidecars:
        assert sidecar.read_bytes() in payloads
        graphs = read_tosa_file(sidecar)
        oracle = tosa_oracle_graph(sidecar.read_bytes())
        assert [n.kind for n in graphs[0].nodes] == [
            o["kind"] for o in next(iter(oracle.values()))["ops"]
        ]


# -- graphs written by tosa-tools' serializer ---------------------------------------------------------


def _serializer(minor: int) -> Any:
    import tosa_serializer as ts  # tosa-tools, in the test extra

    return ts, ts.TosaSerializer(
        "", targetMajor=1, targetMinor=minor, targetPatch=0, targetDraft=minor > 0
    )


def build_small_graph(minor: int = 0) -> bytes:
    """input -> CONV2D(const weights/bias) -> CLAMP -> RESHAPE -> output, written by tosa-tools."""
    import numpy as np

    ts, g = _serializer(minor)
    x = g.addPlaceholder([1, 8, 8, 4], ts.DType.INT8)
    w = g.addConst([6, 3, 3, 4], ts.DType.INT8, np.arange(6 * 3 * 3 * 4, dtype=np.int8), name="w")
    bias = g.addConst([6], ts.DType.INT32, np.arange(6, dtype=np.int32), name="bias")
    izp = g.addConst([1], ts.DType.INT8, np.array([3], dtype=np.int8), name="izp")
    wzp = g.addConst([1], ts.DType.INT8, np.array([0], dtype=np.int8), name="wzp")
    conv = g.addIntermediate([1, 4, 4, 6], ts.DType.INT32)
    attr = ts.TosaSerializerAttribute()
    attr.Conv2dAttribute([1, 1, 0, 0], [2, 2], [1, 1], False, ts.DType.INT32)
    g.addOperator(ts.Op.CONV2D, [x.name, w.name, bias.name, izp.name, wzp.name], [conv.name], attr)
    clamped = g.addIntermediate([1, 4, 4, 6], ts.DType.INT32)
    attr = ts.TosaSerializerAttribute()
    attr.ClampAttribute(
        list(np.array([-5], dtype=np.int32).tobytes()),
        list(np.array([100], dtype=np.int32).tobytes()),
        ts.NanPropagationMode.PROPAGATE,
    )
    g.addOperator(ts.Op.CLAMP, [conv.name], [clamped.name], attr)
    out = g.addIntermediate([1, 96], ts.DType.INT32)
    shape = g.addConst([2], ts.DType.SHAPE, np.array([1, 96], dtype=np.int64), name="shape")
    attr = ts.TosaSerializerAttribute()
    attr.ReshapeAttribute()
    g.addOperator(ts.Op.RESHAPE, [clamped.name, shape.name], [out.name], attr)
    g.addOutputTensor(out)
    return bytes(g.serialize())


def test_serializer_graph_matches_tosa_tools_and_reads_attributes() -> None:
    buf = build_small_graph()
    check_against_oracle(buf)
    model = read_tosa(buf)
    assert str(model.version) == "1.0.0"
    conv = next(op for op in model.main.operators if op.kind == "CONV2D")
    assert conv.attrs["pad"] == "[1, 1, 0, 0]" and conv.attrs["stride"] == "[2, 2]"
    assert conv.attrs["acc_type"] == "int32"
    clamp = next(op for op in model.main.operators if op.kind == "CLAMP")
    # min/max are raw bytes in the input's element type (INT32 here).
    assert (clamp.attrs["min_val"], clamp.attrs["max_val"]) == ("-5", "100")
    assert clamp.attrs["nan_mode"] == "PROPAGATE"
    izp = model.main.tensors["izp"]
    assert izp.values == [3]
    w = model.main.tensors["w"]
    assert w.values is None and w.data_size >= 6 * 3 * 3 * 4  # too big to show; never copied


def test_tosa_1_1_graph() -> None:
    """A 1.1 graph (written by tosa-tools as 1.1) reads without problems."""
    buf = build_small_graph(minor=1)
    check_against_oracle(buf)
    model = read_tosa(buf)
    assert (model.version.major, model.version.minor) == (1, 1)
    assert not model.problems


# -- version handling, by patching the version table of a real graph ------------------------------


def patch_version(buf: bytes, major: int, minor: int) -> bytes:
    """Overwrite Version._major/_minor in place (both are written, as neither is the default -1)."""
    from tosa.TosaGraph import TosaGraph

    version = TosaGraph.GetRootAs(buf, 0).Version()
    tab = version._tab
    out = bytearray(buf)
    for vt_offset, value in ((4, major), (6, minor)):
        field = tab.Offset(vt_offset)
        assert field, "serializer omitted a version field"
        out[tab.Pos + field : tab.Pos + field + 4] = value.to_bytes(4, "little", signed=True)
    return bytes(out)


def test_version_0x_is_refused_by_version() -> None:
    buf = patch_version(build_small_graph(), 0, 80)
    with pytest.raises(PteFormatError, match=r"0\.80.*not\s+supported|0\.x"):
        read_tosa(buf)


@pytest.mark.parametrize(("major", "minor"), [(2, 0), (-1, -1)])
def test_other_major_versions_are_refused(major: int, minor: int) -> None:
    with pytest.raises(PteFormatError, match="unsupported version"):
        read_tosa(patch_version(build_small_graph(), major, minor))


def test_newer_minor_is_read_with_a_problem() -> None:
    model = read_tosa(patch_version(build_small_graph(), 1, 7))
    assert [op.kind for op in model.main.operators] == [
        op.kind for op in read_tosa(build_small_graph()).main.operators
    ]
    assert any("1.7" in p for p in model.problems)


def test_op_newer_than_declared_version_is_flagged() -> None:
    """An operator that only exists in the 1.1 schema, in a graph that says 1.0."""
    from pte_adapter.delegates.tosa._generated import tosa_schema as _tables

    first_1_1 = _tables.OP_COUNT_BY_SCHEMA["1.0"]
    buf = bytearray(build_small_graph())
    from tosa.TosaGraph import TosaGraph

    op = TosaGraph.GetRootAs(bytes(buf), 0).Regions(0).Blocks(0).Operators(0)
    field = op._tab.Offset(4)
    buf[op._tab.Pos + field : op._tab.Pos + field + 4] = first_1_1.to_bytes(4, "little")
    model = read_tosa(bytes(buf))
    assert model.main.operators[0].kind == _tables.OP_NAMES[first_1_1]
    assert "schema_note" in model.main.operators[0].attrs
    assert any("not part of the TOSA 1.0 schema" in p for p in model.problems)


def test_small_constant_limit_is_respected() -> None:
    model = read_tosa(build_small_graph())
    for t in model.main.tensors.values():
        if t.values is not None:
            assert len(t.values) <= SMALL_CONSTANT_ELEMENTS


# -- control flow ---------------------------------------------------------------------------------------


def build_cond_graph() -> bytes:
    """main: COND_IF(then_b, else_b); each branch a region with one block, as ExecuTorch writes."""
    ts, g = _serializer(0)
    cond = g.addPlaceholder([1], ts.DType.BOOL)
    x = g.addPlaceholder([1, 4], ts.DType.FP32)
    out = g.addIntermediate([1, 4], ts.DType.FP32)
    attr = ts.TosaSerializerAttribute()
    attr.CondIfAttribute("then_b", "else_b")
    g.addOperator(ts.Op.COND_IF, [cond.name, x.name], [out.name], attr)
    g.addOutputTensor(out)
    for name, op in (("then_b", ts.Op.ABS), ("else_b", ts.Op.SIN)):
        g.startRegion(name)
        g.currRegion.addBasicBlock(name)
        i = g.addPlaceholder([1, 4], ts.DType.FP32)
        r = g.addIntermediate([1, 4], ts.DType.FP32)
        attr = ts.TosaSerializerAttribute()
        attr.AbsAttribute() if op == ts.Op.ABS else attr.SinAttribute()
        g.addOperator(op, [i.name], [r.name], attr)
        g.addOutputTensor(r)
    return bytes(g.serialize())


def test_cond_if_links_its_blocks_as_subgraphs() -> None:
    buf = build_cond_graph()
    check_against_oracle(buf)
    decoded = decode(memoryview(buf), DecodeContext("TOSABackend"))
    names = [g.name for g in decoded.graphs]
    oracle = tosa_oracle_graph(buf)
    assert len(names) == len(oracle) == 3 and names[0] == "TOSA main"
    cond = next(n for n in decoded.graphs[0].nodes if n.kind == "COND_IF")
    assert len(cond.subgraphs) == 2 and set(cond.subgraphs) <= set(names[1:])
    # Each linked graph is the block the attribute names, holding that block's operators.
    by_name = {g.name: g for g in decoded.graphs}
    for key, graph_name in zip(("then_graph", "else_graph"), cond.subgraphs, strict=True):
        block = cond.attrs[key]
        assert by_name[graph_name].attrs["block"] == block
        assert [n.kind for n in by_name[graph_name].nodes] == [
            o["kind"] for o in oracle[(block, block)]["ops"]
        ]
    assert decoded.inner_op_count == 3 and not decoded.problems


# -- the generated tables ------------------------------------------------------------------------------


def test_generated_enums_agree_with_tosa_tools() -> None:
    from pte_adapter.delegates.tosa._generated import tosa_schema as _tables

    assert tosa_enum("Op") == _tables.OP_NAMES
    assert tosa_enum("DType") == _tables.DTYPE_NAMES
    attribute_tables = {tag: name for tag, (name, _) in _tables.ATTRIBUTE_TABLES.items()}
    assert attribute_tables == {k: v for k, v in tosa_enum("Attribute").items() if k}
