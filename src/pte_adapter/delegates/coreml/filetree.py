"""The folder a Core ML payload holds, flattened by ExecuTorch's `inmemoryfs`
(`executorchcoreml.flatten_directory_contents`): every file's bytes one after another from the
payload's start, then an index of the folder as JSON written backwards at its end.

The index is `{"nodes": [...]}`, each node `{"name", "kind" (0 file, 1 folder), "dataRegion":
{"offset", "size"}, "children": {name: index}}`; a folder's children come before it and the root
folder is the last node (inmemoryfs' `FlattenedInMemoryNode::flatten`). Everything is checked:
regions inside the file bytes, children before their folder, a bounded walk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pte_adapter.errors import PteFormatError

KIND_FILE = 0
KIND_FOLDER = 1
MAX_INDEX_BYTES = 1 << 24  # an index of a few hundred files is a few KB
_QUOTE, _BACKSLASH, _OPEN, _CLOSE = 0x22, 0x5C, 0x7B, 0x7D


@dataclass(frozen=True)
class PackedFile:
    path: str  # "/"-separated from the root folder, e.g. "model.mlpackage/Manifest.json"
    offset: int  # in the payload
    size: int


@dataclass(frozen=True)
class FileTree:
    root: str  # the flattened folder's own name ("lowered_module")
    files: list[PackedFile]
    folders: list[str]
    index_offset: int  # where the backwards JSON index starts in the payload
    index_size: int

    def find(self, path: str) -> PackedFile | None:
        return next((f for f in self.files if f.path == path), None)


def _index_start(payload: memoryview, part: str, base: int) -> int:
    """Where the backwards JSON object that ends the payload begins: its last byte is its `{`."""
    end = len(payload)
    if end == 0 or payload[end - 1] != _OPEN:
        raise PteFormatError(
            "a flattened Core ML folder ends with its index, a JSON object written backwards "
            "(last byte '{')",
            part=part,
            offset=base + max(end - 1, 0),
        )
    depth, in_string = 0, False
    for pos in range(end - 1, max(end - 1 - MAX_INDEX_BYTES, -1), -1):
        ch = payload[pos]
        if in_string:
            if ch == _QUOTE:
                # Backwards, `\"` is a quote followed by a backslash: count the backslashes
                # before the quote in the original order.
                run = 0
                while pos + 1 + run < end and payload[pos + 1 + run] == _BACKSLASH:
                    run += 1
                in_string = run % 2 == 1
            continue
        if ch == _QUOTE:
            in_string = True
        elif ch == _OPEN:
            depth += 1
        elif ch == _CLOSE:
            depth -= 1
            if depth == 0:
                return pos
    raise PteFormatError(
        "the Core ML folder index never closes (not a flattened folder, or cut)",
        part=part,
        offset=base + end - 1,
    )


def _int(value: object, what: str, part: str, at: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PteFormatError(f"{what} is {value!r}, not a count", part=part, offset=at)
    return value


def read_file_tree(payload: memoryview, part: str, base: int) -> FileTree:
    start = _index_start(payload, part, base)
    at = base + start
    try:
        doc = json.loads(bytes(payload[start:])[::-1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PteFormatError(
            f"the Core ML folder index is not JSON: {e}", part=part, offset=at
        ) from e
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, dict) for n in nodes):
        raise PteFormatError("the Core ML folder index has no nodes", part=part, offset=at)
    paths: dict[int, str] = {len(nodes) - 1: ""}
    files: list[PackedFile] = []
    folders: list[str] = []
    # The root is last and a folder's children come before it: walking from the end visits every
    # node once, and a child index that is not smaller than its folder's is refused.
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        if index not in paths:
            continue  # not in the tree (inmemoryfs never writes such a node)
        path, name = paths[index], node.get("name")
        if not isinstance(name, str) or "/" in name or name in (".", ".."):
            raise PteFormatError(f"node {index} has a bad name {name!r}", part=part, offset=at)
        kind = node.get("kind")
        if kind == KIND_FILE:
            region = node.get("dataRegion")
            region = region if isinstance(region, dict) else {}
            offset = _int(region.get("offset", 0), f"node {index}'s offset", part, at)
            size = _int(region.get("size", 0), f"node {index}'s size", part, at)
            if offset + size > start:
                raise PteFormatError(
                    f"file {path!r} spans [{offset}, {offset + size}), past the file bytes "
                    f"(the index starts at {start})",
                    part=part,
                    offset=at,
                )
            files.append(PackedFile(path, offset, size))
        elif kind == KIND_FOLDER:
            folders.append(path)
            children = node.get("children")
            for child, ci in (children if isinstance(children, dict) else {}).items():
                ci = _int(ci, f"child {child!r} of node {index}", part, at)
                if ci >= index or ci in paths or not isinstance(child, str):
                    raise PteFormatError(
                        f"node {index} names child {ci} ({child!r}), which is not an earlier "
                        "node of no other folder",
                        part=part,
                        offset=at,
                    )
                paths[ci] = f"{path}/{child}" if path else child
        else:
            raise PteFormatError(f"node {index} is of kind {kind!r}", part=part, offset=at)
    root = nodes[-1].get("name")
    files.sort(key=lambda f: f.offset)
    return FileTree(str(root), files, sorted(folders), start, len(payload) - start)
