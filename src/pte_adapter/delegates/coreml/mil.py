"""An ML Program (`Model.mlProgram`, MIL) as neutral graphs: each function's operations in order,
each with its inputs bound by name (or an immediate value), its outputs with their types, and every
tensor with dtype and shape; a constant in the package's weight file with its size and place (the
blob header coremltools writes before each: sentinel 0xDEADBEEF, dtype, size, data offset)."""

from __future__ import annotations

import struct
from collections import Counter
from typing import Any, Final

from pte_adapter.delegates.coreml.filetree import FileTree
from pte_adapter.delegates.coreml.protobuf import BytesRef, ProtoReader
from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo

MODEL: Final = "CoreML.Specification.Model"
BLOCK: Final = "CoreML.Specification.MILSpec.Block"
BLOB_SENTINEL: Final = 0xDEADBEEF
PREVIEW: Final = 8
# Operations read over all functions and blocks, as Ethos-U's command stream is capped (each costs
# every view work: one drawn in Model Explorer about 0.1 ms): past them the rest of the block is
# not read (a problem says so).
MAX_OPERATIONS: Final = 10_000


def read_model(data: memoryview, part: str, base: int) -> tuple[dict[str, Any], list[str]]:
    """The model specification, and what its reading left out."""
    reader = ProtoReader(data, part, base, caps={(BLOCK, "operations"): MAX_OPERATIONS})
    spec = reader.message(MODEL)
    problems = []
    if reader.cut:
        problems.append(
            f"more than {MAX_OPERATIONS} operations: the first {MAX_OPERATIONS} are shown, the "
            "rest of their block is not read"
        )
    return spec, problems


def _tensor_type(value_type: Any) -> tuple[str, list[int] | None]:
    """(dtype, shape) of a ValueType; unknown dimensions are -1."""
    tt = value_type.get("tensorType") if isinstance(value_type, dict) else None
    if not isinstance(tt, dict):
        kind = next(iter(value_type), "none") if isinstance(value_type, dict) else "none"
        return str(kind).removesuffix("Type"), None
    dims = []
    for d in tt.get("dimensions", []):
        const = d.get("constant") if isinstance(d, dict) else None
        dims.append(int(const.get("size", 0)) if isinstance(const, dict) else -1)
    return str(tt.get("dataType", "")).lower(), dims


def _immediate(value: Any) -> str | None:
    """An immediate tensor value as text (its first elements), else None."""
    imm = value.get("immediateValue") if isinstance(value, dict) else None
    tensor = imm.get("tensor") if isinstance(imm, dict) else None
    if not isinstance(tensor, dict) or not tensor:
        return None
    kind, body = next(iter(tensor.items()))
    items = body.get("values", []) if isinstance(body, dict) else []
    if isinstance(items, BytesRef):  # packed bytes of a small float16 or int8 tensor
        return f"{items.size} bytes ({kind})"
    if not isinstance(items, list):
        return str(kind)
    shown = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in items[:PREVIEW]]
    more = f", ... ({len(items)} values)" if len(items) > PREVIEW else ""
    text = ", ".join(shown) + more
    return text if len(items) == 1 and not more else f"[{text}]"


class _Blobs:
    """Constants in the package's weight files: each blob's size and place, from its header."""

    def __init__(self, payload: memoryview, tree: FileTree, folder: str) -> None:
        self.payload, self.tree, self.folder = payload, tree, folder

    def describe(self, blob: dict[str, Any], problems: list[str]) -> tuple[dict[str, str], int]:
        name = str(blob.get("fileName", ""))
        offset = int(blob.get("offset", 0))
        path = self.folder + name.removeprefix("@model_path/")
        f = self.tree.find(path)
        attrs = {"blob": f"{name} @ {offset}"}
        if f is None or offset + 64 > f.size:
            problems.append(f"constant blob {name} @ {offset} is not in the package's files")
            return attrs, 0
        sentinel, dtype, size, data_at = struct.unpack_from(
            "<IIQQ", self.payload, f.offset + offset
        )
        if sentinel != BLOB_SENTINEL or data_at + size > f.size:
            problems.append(f"constant blob {name} @ {offset} has no valid blob header")
            return attrs, 0
        attrs["data"] = f"{f.path} @ {data_at} (payload +{f.offset + data_at})"
        attrs["constant_bytes"] = str(size)
        attrs["blob_dtype"] = str(dtype)
        return attrs, size


def _arguments(op: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each input parameter as text (bound names, or values) and the names it reads, in order."""
    attrs: dict[str, str] = {}
    reads: list[str] = []
    for param, arg in op.get("inputs", {}).items():
        texts = []
        for binding in arg.get("arguments", []) if isinstance(arg, dict) else []:
            name = binding.get("name") if isinstance(binding, dict) else None
            if isinstance(name, str):
                texts.append(name)
                reads.append(name)
            else:
                texts.append(_immediate(binding.get("value")) or "value")
        attrs[str(param)] = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return attrs, reads


def _operation(
    i: int, op: dict[str, Any], graph: DelegateGraph, blobs: _Blobs, problems: list[str]
) -> OpNode:
    kind = str(op.get("type", "")) or "unnamed"
    attrs, reads = _arguments(op)
    constant: dict[str, str] = {}
    nbytes: int | None = None
    for key, value in op.get("attributes", {}).items():
        if key == "name":
            attrs["op_name"] = _immediate(value) or ""
            continue
        blob = value.get("blobFileValue") if isinstance(value, dict) else None
        if isinstance(blob, dict):
            constant, nbytes = blobs.describe(blob, problems)
            attrs[str(key)] = constant["blob"]
        else:
            attrs[str(key)] = _immediate(value) or "value"
    if op.get("blocks"):
        attrs["blocks"] = str(len(op["blocks"]))
    outputs = []
    for out in op.get("outputs", []):
        name = str(out.get("name", ""))
        dtype, shape = _tensor_type(out.get("type"))
        info = TensorInfo(name, name, shape, dtype)
        if kind == "const" and constant:
            info.attrs.update(constant)
            info.constant_bytes = nbytes
        elif kind == "const":
            info.attrs["value"] = attrs.get("val", "")
        graph.tensors[name] = info
        outputs.append(name)
    return OpNode(f"op{i}", kind, kind, reads, outputs, attrs)


def mil_graphs(
    spec: dict[str, Any],
    payload: memoryview,
    tree: FileTree,
    folder: str,
    input_order: list[str],
    problems: list[str],
) -> tuple[list[DelegateGraph], Counter[str]]:
    """One graph per function of the ML Program (its opset's block)."""
    program = spec.get("mlProgram")
    graphs: list[DelegateGraph] = []
    kinds: Counter[str] = Counter()
    if not isinstance(program, dict):
        return graphs, kinds
    blobs = _Blobs(payload, tree, folder)
    for fname, function in program.get("functions", {}).items():
        if not isinstance(function, dict):  # a map entry with a name and no function
            problems.append(f"function {fname!r} has no definition")
            continue
        opset = str(function.get("opset", ""))
        block = function.get("block_specializations", {}).get(opset)
        if not isinstance(block, dict):
            problems.append(f"function {fname} has no block for its opset {opset!r}")
            continue
        graph = DelegateGraph(name=f"MIL function {fname}")
        graph.attrs = {"opset": opset}
        declared = [str(i.get("name", "")) for i in function.get("inputs", [])]
        for inp in function.get("inputs", []):
            name = str(inp.get("name", ""))
            dtype, shape = _tensor_type(inp.get("type"))
            graph.tensors[name] = TensorInfo(name, f"input {name}", shape, dtype)
        for i, op in enumerate(block.get("operations", [])):
            node = _operation(i, op, graph, blobs, problems)
            kinds[node.kind] += 1
            graph.nodes.append(node)
        ordered = [n for n in input_order if n in declared]
        graph.inputs = ordered if len(ordered) == len(declared) else declared
        graph.outputs = [str(o) for o in block.get("outputs", [])]
        for name in graph.inputs + graph.outputs:
            if name not in graph.tensors:
                problems.append(f"function {fname}: {name!r} is neither an input nor produced")
        graphs.append(graph)
    return graphs, kinds
