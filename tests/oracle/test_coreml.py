"""Core ML payloads: our reading of the flattened model folder against ExecuTorch's own
`executorchcoreml.unflatten_directory_contents`, which writes the folder back to disk: every file
we list, with its bytes, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pte_adapter
from pte_adapter.delegates.coreml.filetree import read_file_tree
from pte_adapter.delegates.coreml.layout import payload_layout
from tests.support.examples import EXAMPLES

COREML_EXAMPLES = sorted(EXAMPLES.glob("coreml_*.pte"))


def _payloads(path: Path) -> list[tuple[int, bytes]]:
    """(offset in the file, bytes) of each Core ML payload, by ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(path.read_bytes()).program
    out = []
    data = path.read_bytes()
    for plan in prog.execution_plan:
        for d in plan.delegates:
            assert d.id == "CoreMLBackend"
            payload = bytes(prog.backend_delegate_data[d.processed.index].data)
            out.append((data.find(payload), payload))
    return out


def _unflattened(payload: bytes, into: Path) -> dict[str, bytes]:
    from executorch.backends.apple.coreml import executorchcoreml

    into.mkdir()
    assert executorchcoreml.unflatten_directory_contents(payload, str(into))
    (root,) = list(into.iterdir())
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_coreml_examples_ship() -> None:
    assert [p.name for p in COREML_EXAMPLES] == ["coreml_small.pte"]


def test_file_tree_matches_executorchcoreml(tmp_path: Path) -> None:
    for path in COREML_EXAMPLES:
        program = pte_adapter.load(path)
        delegates = [d for m in program.methods for d in m.delegates]
        for i, (_, payload) in enumerate(_payloads(path)):
            files = _unflattened(payload, tmp_path / f"{path.stem}_{i}")
            tree = read_file_tree(memoryview(payload), "x", 0)
            assert {f.path: payload[f.offset : f.offset + f.size] for f in tree.files} == files
            dec = delegates[i].decoded
            assert not dec.problems, dec.problems
            (g,) = [g for g in dec.graphs if g.name == "Core ML files"]
            assert sorted(n.attrs["path"] for n in g.nodes) == sorted(files)
            meta = json.loads(files["metadata.json"])
            assert dec.num_inputs == len(meta["inputNames"])
            assert dec.num_outputs == len(meta["outputNames"])
            assert dec.summary["identifier"] == meta["identifier"]
            manifest = json.loads(files["model.mlpackage/Manifest.json"])
            entry = manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]
            model = "model.mlpackage/Data/" + entry["path"]
            assert dec.stats["coreml_model_bytes"] == len(files[model])


def test_layout_accounts_for_every_payload_byte() -> None:
    for path in COREML_EXAMPLES:
        for offset, payload in _payloads(path):
            layout = payload_layout(memoryview(payload), offset, None)
            covered = bytearray(len(payload))
            for s in layout.spans:
                assert covered[s.offset - offset : s.offset - offset + s.size].count(1) == 0
                covered[s.offset - offset : s.offset - offset + s.size] = b"\1" * s.size
            # What the files and the index leave is alignment between files: zeros.
            assert all(payload[i] == 0 for i in range(len(payload)) if not covered[i])


def _spec(files: dict[str, bytes]) -> Any:
    """coremltools' own parse of the package's root model specification."""
    from coremltools.proto import Model_pb2

    manifest = json.loads(files["model.mlpackage/Manifest.json"])
    entry = manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]
    spec = Model_pb2.Model()
    spec.ParseFromString(files["model.mlpackage/Data/" + entry["path"]])
    return spec


def _dims(value_type: Any) -> tuple[str, list[int]]:
    from coremltools.proto import MIL_pb2

    tt = value_type.tensorType
    name = MIL_pb2.DataType.Name(tt.dataType).lower()
    return name, [d.constant.size if d.HasField("constant") else -1 for d in tt.dimensions]


def test_mil_operations_match_coremltools(tmp_path: Path) -> None:
    """Every operation of every function, in order, with its bound inputs, its outputs and their
    types, against coremltools' protobuf parse of the same model specification."""
    for path in COREML_EXAMPLES:
        program = pte_adapter.load(path)
        delegates = [d for m in program.methods for d in m.delegates]
        for i, (_, payload) in enumerate(_payloads(path)):
            spec = _spec(_unflattened(payload, tmp_path / f"{path.stem}_mil_{i}"))
            dec = delegates[i].decoded
            graphs = {g.name: g for g in dec.graphs if g.name.startswith("MIL function ")}
            assert set(graphs) == {f"MIL function {n}" for n in spec.mlProgram.functions}
            total = 0
            for fname, function in spec.mlProgram.functions.items():
                g = graphs[f"MIL function {fname}"]
                block = function.block_specializations[function.opset]
                assert [n.kind for n in g.nodes] == [op.type for op in block.operations]
                for node, op in zip(g.nodes, block.operations, strict=True):
                    bound = [
                        b.name
                        for arg in op.inputs.values()
                        for b in arg.arguments
                        if b.WhichOneof("binding") == "name"
                    ]
                    assert sorted(node.inputs) == sorted(bound)
                    assert node.outputs == [o.name for o in op.outputs]
                    for o in op.outputs:
                        dtype, shape = _dims(o.type)
                        assert (g.tensors[o.name].dtype, g.tensors[o.name].shape) == (dtype, shape)
                assert g.outputs == list(block.outputs)
                assert sorted(g.inputs) == sorted(i.name for i in function.inputs)
                total += len(block.operations)
            assert dec.inner_op_count == dec.stats["coreml_ops"] == total


def test_constants_are_where_their_blob_headers_say(tmp_path: Path) -> None:
    """A constant in the weight file: its bytes are where we say, as many as we say; checked with
    coremltools' own blob reader on the unflattened package."""
    from coremltools.libmilstoragepython import _BlobStorageReader

    readers = {"float16": "read_fp16_data", "float32": "read_float_data", "int8": "read_int8_data"}
    checked = 0
    for path in COREML_EXAMPLES:
        program = pte_adapter.load(path)
        delegates = [d for m in program.methods for d in m.delegates]
        for i, (_, payload) in enumerate(_payloads(path)):
            folder = tmp_path / f"{path.stem}_blob_{i}"
            spec = _spec(_unflattened(payload, folder))
            (root,) = list(folder.iterdir())
            tensors = {t.id: t for g in delegates[i].decoded.graphs for t in g.tensors.values()}
            for function in spec.mlProgram.functions.values():
                for op in function.block_specializations[function.opset].operations:
                    if op.type != "const" or not op.attributes["val"].HasField("blobFileValue"):
                        continue
                    blob = op.attributes["val"].blobFileValue
                    ours = tensors[op.outputs[0].name]
                    file = (
                        root
                        / "model.mlpackage/Data/com.apple.CoreML"
                        / blob.fileName.removeprefix("@model_path/")
                    )
                    reader = _BlobStorageReader(str(file))
                    values = getattr(reader, readers[ours.dtype])(blob.offset)
                    assert ours.constant_bytes == values.nbytes
                    at = int(ours.attrs["data"].rsplit("payload +", 1)[1].rstrip(")"))
                    assert payload[at : at + values.nbytes] == values.tobytes()
                    checked += 1
    assert checked
