"""The Model Explorer server's cache of converted programs: re-opening the same file is free.

Model Explorer calls the adapter's `convert` each time a file is opened (a reload of the page, a
second tab, the same file picked again). The graphs of the last few files are kept here, each under
its path *and* a fingerprint of everything its conversion read:

- the adapter version (`pte_adapter.__version__`): another version converts differently;
- the file's identity and state: device, inode, size, mtime and ctime in nanoseconds. Any write to
  the file (or a replacement under the same name) changes its ctime or inode; unlike mtime, ctime
  cannot be set back from user space (`touch -d`, `cp -p` restore mtime only);
- a BLAKE2b hash of the file's first and last 64 KiB (the program's flatbuffer header and the end
  of its last segment): a second, content-based check that costs microseconds where a hash of a
  650 MB file's weights would cost more than converting it;
- every side file the conversion may read: the state (name, size, mtime, ctime, inode) of every
  entry in the file's folder and in each folder directly inside it (the ETRecord, ETDump, `.ptd`
  files, Arm's reports, `<stem>_artifacts/` with its `.tosa` files), and in the folders the
  program's delegates name as their debug artifacts (`Backend.artifact_folders`). An added,
  removed or rewritten side file changes the fingerprint, so a new ETDump is never hidden.

A name alone never serves an entry: each look-up fingerprints the file again (a few stats and two
small reads) and converts anew when anything differs. The cache is bounded by entries and by the
total number of nodes kept (about 2 KiB of Model Explorer objects each, measured on the 48-layer
XNNPACK GPT: the builder shares what repeats, render/model_explorer.py); a program larger than the
bound is converted every time and never kept. Nothing else of a conversion (the program, its
analysis, the plan) outlives it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from model_explorer import graph_builder as gb

MAX_ENTRIES = 4
MAX_NODES = 40_000  # over all entries: about 2 KiB each, so at most ~80 MiB kept
EDGE_BYTES = 64 * 1024

Fingerprint = tuple[object, ...]


def _state(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _edges_hash(path: Path, size: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        h.update(f.read(EDGE_BYTES))
        if size > EDGE_BYTES:
            f.seek(max(EDGE_BYTES, size - EDGE_BYTES))
            h.update(f.read(EDGE_BYTES))
    return h.hexdigest()


def _folder_state(folder: Path, depth: int) -> tuple[object, ...]:
    """(name, state) of every entry, and of those of its sub-folders while `depth` > 0."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return ("missing",)
    out: list[object] = []
    for e in entries:
        try:
            # A symlink's own state: what it points at outside the folder is never read
            # (container/files.py), so it is neither listed nor a reason to convert again.
            out.append((e.name, _state(e.stat(follow_symlinks=False))))
            if depth > 0 and e.is_dir(follow_symlinks=False):
                out.append(_folder_state(Path(e.path), depth - 1))
        except OSError:
            out.append((e.name, "unreadable"))
    return tuple(out)


def fingerprint(path: Path, version: str, extra_folders: tuple[Path, ...] = ()) -> Fingerprint:
    """Everything a conversion of `path` depends on (the module's docstring); raises OSError when
    the file cannot be read."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the hash: the conversion refuses it
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    folders = tuple(_folder_state(f, 0) for f in extra_folders)
    return (
        version,
        _state(st),
        _edges_hash(path, st.st_size),
        _folder_state(path.parent, 1),
        folders,
    )


@dataclass
class _Entry:
    fingerprint: Fingerprint
    extra_folders: tuple[Path, ...]
    graphs: list[gb.Graph]
    nodes: int


Converter = Callable[[Path], tuple[list[gb.Graph], tuple[Path, ...]]]


class GraphCache:
    """Converted graphs by path and fingerprint, least recently used out first."""

    def __init__(self, version: str, max_entries: int = MAX_ENTRIES, max_nodes: int = MAX_NODES):
        self.version = version
        self.max_entries = max_entries
        self.max_nodes = max_nodes
        self._entries: OrderedDict[Path, _Entry] = OrderedDict()
        self._lock = threading.Lock()  # Model Explorer's server may answer requests in threads
        self.hits = 0
        self.misses = 0

    def get(self, path: Path, convert: Converter) -> list[gb.Graph]:
        """The graphs of `path`: kept ones when nothing they depend on changed, else `convert`'s
        (which returns the graphs and the further folders they read side files from)."""
        try:
            key = path.resolve()
        except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
            return convert(path)[0]  # the conversion refuses it in one line, as without a cache
        with self._lock:
            entry = self._entries.get(key)
        try:
            before = fingerprint(key, self.version, entry.extra_folders if entry else ())
        except OSError:  # not there, not readable: the conversion says so, as without a cache
            with self._lock:
                self._entries.pop(key, None)
            return convert(path)[0]
        if entry is not None and before == entry.fingerprint:
            with self._lock:
                self._entries.move_to_end(key)
                self.hits += 1
            return list(entry.graphs)
        if entry is not None and entry.extra_folders:
            before = fingerprint(key, self.version)
        graphs, extra = convert(path)
        self.misses += 1
        # Fingerprinted before converting: a file rewritten meanwhile is not kept as the old one.
        if extra:
            before = (*before[:4], tuple(_folder_state(f, 0) for f in extra))
        self._keep(key, _Entry(before, extra, graphs, sum(len(g.nodes) for g in graphs)))
        return list(graphs)

    def _keep(self, key: Path, entry: _Entry) -> None:
        with self._lock:
            self._entries.pop(key, None)
            if entry.nodes > self.max_nodes:
                return
            self._entries[key] = entry
            while len(self._entries) > self.max_entries or self._node_total() > self.max_nodes:
                self._entries.popitem(last=False)

    def _node_total(self) -> int:
        return sum(e.nodes for e in self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
