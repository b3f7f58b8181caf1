"""Core ML delegate payloads (ExecuTorch's `CoreMLBackend`): the model folder the backend wrote,
flattened (`filetree.py`), with `metadata.json` (the partition's input and output names and the
model's identifier) beside the package (`model.mlpackage`: `Manifest.json`, the `model.mlmodel`
specification and its `weights/weight.bin`; or a compiled `model.mlmodelc`).

The decoded views: for an ML Program, each MIL function's operations (`mil.py`, the model
specification read by `protobuf.py` with tables generated from the pinned coremltools' protos);
and the folder, one node per file inside its folders, with its size and where its bytes are.
Weights are never read, only the blob headers that say where each constant is.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pte_adapter.delegates.coreml.filetree import FileTree, PackedFile, read_file_tree
from pte_adapter.delegates.coreml.mil import mil_graphs, read_model
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode

__all__ = ["decode", "read_file_tree"]

MAX_JSON_FILE = 1 << 20  # metadata.json and Manifest.json are a few hundred bytes
METADATA = "metadata.json"
MANIFEST = "model.mlpackage/Manifest.json"
PACKAGE_DATA = "model.mlpackage/Data/"


def _json_file(payload: memoryview, f: PackedFile | None, problems: list[str]) -> Mapping[str, Any]:
    if f is None:
        return {}
    if f.size > MAX_JSON_FILE:
        problems.append(f"{f.path} is {f.size} bytes; not read")
        return {}
    try:
        doc = json.loads(bytes(payload[f.offset : f.offset + f.size]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        problems.append(f"{f.path} is not JSON: {e}")
        return {}
    return doc if isinstance(doc, dict) else {}


def _names(doc: Mapping[str, Any], key: str) -> list[str]:
    value = doc.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def root_model(tree: FileTree, manifest: Mapping[str, Any]) -> PackedFile | None:
    """The package's root model specification, as its manifest names it."""
    entries = manifest.get("itemInfoEntries")
    root = manifest.get("rootModelIdentifier")
    if not isinstance(entries, dict) or not isinstance(root, str):
        return None
    if not isinstance(entries.get(root), dict):
        return None
    path = entries[root].get("path")
    return tree.find(PACKAGE_DATA + path) if isinstance(path, str) else None


def _graph(tree: FileTree, model: PackedFile | None, base: int | None) -> DelegateGraph:
    graph = DelegateGraph(name="Core ML files")
    for i, f in enumerate(tree.files):
        folder, _, name = f.path.rpartition("/")
        attrs = {"path": f.path, "bytes": str(f.size), "at": f"payload +{f.offset}"}
        if base is not None:
            attrs["at"] += f" (file offset {base + f.offset})"
        if f is model:
            attrs["role"] = "root model specification"
        graph.nodes.append(
            OpNode(id=f"file{i}", kind="file", label=name, attrs=attrs, namespace=folder)
        )
    return graph


def _program(
    payload: memoryview,
    tree: FileTree,
    model: PackedFile | None,
    inputs: list[str],
    ctx: DecodeContext,
    problems: list[str],
) -> tuple[list[DelegateGraph], Counter[str]]:
    """The ML Program's functions, when the root model is one."""
    if model is None:
        return [], Counter()
    base = (ctx.payload_offset or 0) + model.offset
    part = f"Core ML model specification ({model.path})"
    spec, cut = read_model(payload[model.offset : model.offset + model.size], part, base)
    problems.extend(cut)
    folder = model.path.rpartition("/")[0] + "/"
    graphs, kinds = mil_graphs(spec, payload, tree, folder, inputs, problems)
    if not graphs:
        problems.append("the model is not an ML Program: its operations are not shown")
    return graphs, kinds


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"Core ML payload ({ctx.delegate_id})"
    tree = read_file_tree(payload, part, ctx.payload_offset or 0)
    problems: list[str] = []
    meta = _json_file(payload, tree.find(METADATA), problems)
    manifest = _json_file(payload, tree.find(MANIFEST), problems)
    model = root_model(tree, manifest)
    inputs, outputs = _names(meta, "inputNames"), _names(meta, "outputNames")
    weights = [f for f in tree.files if f.path.startswith(PACKAGE_DATA) and "/weights/" in f.path]
    graph = _graph(tree, model, ctx.payload_offset)
    functions, kinds = _program(payload, tree, model, inputs, ctx, problems)
    summary = {
        "format": "Core ML (flattened folder)",
        "folder": tree.root,
        "identifier": str(meta.get("identifier", "")),
        "input_names": ", ".join(inputs),
        "output_names": ", ".join(outputs),
        "files": str(len(tree.files)),
        "file_list": ", ".join(f"{f.path} ({f.size} B)" for f in tree.files),
        "model": f"{model.path} ({model.size} B)" if model is not None else "none found",
        "weight_bytes": str(sum(f.size for f in weights)),
        "index": f"{tree.index_size} bytes at +{tree.index_offset}",
    }
    if ctx.spec_text("model_type"):
        summary["model_type"] = ctx.spec_text("model_type") or ""
    if model is None:
        root = manifest.get("rootModelIdentifier")
        why = (
            "names none"
            if root is None or isinstance(root, str)
            else f"names it by a {type(root).__name__}, not a string"
        )
        problems.append(f"no root model specification (the package's Manifest.json {why})")
    graph.attrs = dict(summary)
    if functions:
        summary["operations"] = str(sum(kinds.values()))
        summary["operation_kinds"] = ", ".join(
            f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        summary["functions"] = ", ".join(g.name.removeprefix("MIL function ") for g in functions)
    stats: dict[str, int | float | str] = {
        "coreml_ops": sum(kinds.values()),
        "coreml_files": len(tree.files),
        "coreml_model_bytes": model.size if model is not None else 0,
        "coreml_weight_bytes": sum(f.size for f in weights),
        "constant_bytes": sum(f.size for f in weights),
    }
    return DecodedDelegate(
        graphs=[*functions, graph],
        inner_op_count=sum(kinds.values()) if functions else None,
        summary=summary,
        num_inputs=len(inputs) if meta else None,
        num_outputs=len(outputs) if meta else None,
        stats=stats,
        problems=problems,
    )
