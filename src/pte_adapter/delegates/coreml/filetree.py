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
import re
from dataclasses import dataclass
from typing import Any

from pte_adapter.container.files import json_values
from pte_adapter.errors import LimitExceededError, PteFormatError
from pte_adapter.program.cached import cached

KIND_FILE = 0
KIND_FOLDER = 1
MAX_INDEX_BYTES = 1 << 24  # an index of a few hundred files is a few KB
# JSON values the index may build (commas and brackets, counted before parsing, like the
# ETRecord's parts: `container/files.json_values`): about eight per file, so a folder of 30,000
# files (a model package has a handful). Braces and quotes the search for the index's start may
# step over: a file's node has four braces and ten quotes.
MAX_INDEX_VALUES = 250_000
MAX_INDEX_TOKENS = 2 * MAX_INDEX_VALUES
MAX_DEPTH = 64  # folders inside folders (a model package nests four deep)
_QUOTE, _OPEN = 0x22, 0x7B
_ESCAPE_WINDOW = 256
_TOKEN = re.compile(rb'[{}"]')


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
        return self._by_path.get(path)

    @cached
    def _by_path(self) -> dict[str, PackedFile]:
        """Every file by its path, made once (a model names a weight file per constant, and a
        payload can hold thousands of both)."""
        found: dict[str, PackedFile] = {}
        for f in self.files:
            found.setdefault(f.path, f)
        return found


def _index_start(payload: memoryview, part: str, base: int) -> int:
    """Where the backwards JSON object that ends the payload begins: its last byte is its `{`.

    The last `MAX_INDEX_BYTES` are read forwards as JSON (reversed once), stepping from brace to
    quote with a regular expression and from quote to quote with `find`: the work is one step
    per brace or quote (escaped ones too), at most `MAX_INDEX_TOKENS` of them."""
    end = len(payload)
    if end == 0 or payload[end - 1] != _OPEN:
        raise PteFormatError(
            "a flattened Core ML folder ends with its index, a JSON object written backwards "
            "(last byte '{')",
            part=part,
            offset=base + max(end - 1, 0),
        )
    text = bytes(payload[max(end - MAX_INDEX_BYTES, 0) : end])[::-1]
    depth, pos, in_string = 0, 0, False
    for _ in range(MAX_INDEX_TOKENS):
        if in_string:  # the next quote not escaped by an odd run of backslashes ends it
            at = text.find(b'"', pos)
            if at < 0:
                break
            # (a run of backslashes is counted in a window: no name has hundreds)
            window = text[max(at - _ESCAPE_WINDOW, 0) : at]
            run = len(window) - len(window.rstrip(b"\\"))
            in_string, pos = run % 2 == 1, at + 1
            continue
        found = _TOKEN.search(text, pos)
        if found is None:
            break
        at = found.start()
        if text[at] == _QUOTE:
            in_string = True
        else:
            depth += 1 if text[at] == _OPEN else -1
            if depth == 0:
                return end - 1 - at
        pos = at + 1
    else:
        raise LimitExceededError(
            f"the Core ML folder index has more than {MAX_INDEX_TOKENS} braces and quotes "
            f"(limit {MAX_INDEX_TOKENS}): not read",
            part=part,
            offset=base + end - 1,
        )
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
    nodes = _index_nodes(bytes(payload[start:])[::-1], part, at)
    # Each node's folder and name (the root: none); a path is made only for a file, from its
    # folders (at most MAX_DEPTH), never one per level of a chain of folders.
    placed: dict[int, tuple[int, str]] = {len(nodes) - 1: (-1, "")}
    depth: dict[int, int] = {len(nodes) - 1: 0}
    files: list[PackedFile] = []
    folders: list[int] = []
    # The root is last and a folder's children come before it: walking from the end visits every
    # node once, and a child index that is not smaller than its folder's is refused.
    for index_at in range(len(nodes) - 1, -1, -1):
        node = nodes[index_at]
        if index_at not in placed:
            continue  # not in the tree (inmemoryfs never writes such a node)
        name = node.get("name")
        if not isinstance(name, str) or "/" in name or name in (".", ".."):
            raise PteFormatError(f"node {index_at} has a bad name {name!r}", part=part, offset=at)
        kind = node.get("kind")
        if kind == KIND_FILE:
            files.append(_file(node, index_at, _path(placed, index_at), start, part, at))
        elif kind == KIND_FOLDER:
            folders.append(index_at)
            if depth[index_at] >= MAX_DEPTH:
                raise LimitExceededError(
                    f"folder {name!r} (node {index_at}) is {depth[index_at]} folders deep "
                    f"(limit {MAX_DEPTH})",
                    part=part,
                    offset=at,
                )
            children = node.get("children")
            for child, ci in (children if isinstance(children, dict) else {}).items():
                ci = _int(ci, f"child {child!r} of node {index_at}", part, at)
                if ci >= index_at or ci in placed or not isinstance(child, str):
                    raise PteFormatError(
                        f"node {index_at} names child {ci} ({child!r}), which is not an earlier "
                        "node of no other folder",
                        part=part,
                        offset=at,
                    )
                placed[ci] = (index_at, child)
                depth[ci] = depth[index_at] + 1
        else:
            raise PteFormatError(f"node {index_at} is of kind {kind!r}", part=part, offset=at)
    root = nodes[-1].get("name")
    files.sort(key=lambda f: f.offset)
    paths = sorted(_path(placed, i) for i in folders)
    return FileTree(str(root), files, paths, start, len(payload) - start)


def _index_nodes(index: bytes, part: str, at: int) -> list[dict[str, Any]]:
    """The index's nodes, its values counted before it is parsed."""
    values = json_values(index)
    if values > MAX_INDEX_VALUES:
        raise LimitExceededError(
            f"the Core ML folder index holds more than {MAX_INDEX_VALUES} JSON values (commas and "
            f"brackets, counted before parsing: {values}): not parsed",
            part=part,
            offset=at,
        )
    try:
        doc = json.loads(index.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PteFormatError(
            f"the Core ML folder index is not JSON: {e}", part=part, offset=at
        ) from e
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, dict) for n in nodes):
        raise PteFormatError("the Core ML folder index has no nodes", part=part, offset=at)
    return nodes


def _file(
    node: dict[str, Any], index: int, path: str, start: int, part: str, at: int
) -> PackedFile:
    """A file node, its bytes checked to lie before the index (which starts at `start`)."""
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
    return PackedFile(path, offset, size)


def _path(placed: dict[int, tuple[int, str]], index: int) -> str:
    """The "/"-joined names from the root's child down to node `index` (the root: "")."""
    names: list[str] = []
    while index >= 0:
        index, name = placed[index]
        names.append(name)
    return "/".join(reversed(names[:-1]))
