"""Fuzz targets: which example file to corrupt, which to convert afterwards, and where to aim.

A *target* is one file to corrupt (a `.pte`, a `.ptd`, a sidecar `.tosa` or an `.etrecord`) together
with the file to convert afterwards (the `.pte` that reads it, or the `.tosa` itself) and the byte
ranges worth aiming at (a delegate payload, or the whole file). FlatBuffer field positions (vector
lengths, uoffsets, union tags) are not guessed: they are recorded by watching the project's own
reader walk the clean file, so "length-field inflation", "union-tag change" and "offset redirection"
hit real fields of the program, the TOSA graph, the XNNPACK graph and the VGF tables.

The mutators that use them are in `fuzz_recipes.py`; the runner in `fuzz.py`.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.fuzz_structure import payload_structure

KIND_BY_BACKEND = {
    "EthosUBackend": "ethos-u",
    "TOSABackend": "tosa",
    "XnnpackBackend": "xnnpack",
    "VgfBackend": "vgf",
    "VulkanBackend": "vulkan",
    "CoreMLBackend": "coreml",
}


# -- targets ----------------------------------------------------------------------------------


@dataclass
class Target:
    kind: str  # "pte", "ethos-u", "tosa", "xnnpack", "vgf", "vulkan", "ptd", "sidecar-tosa", ...
    convert: str  # file to convert, relative to examples/
    mutate: str  # file to corrupt, relative to examples/
    regions: list[tuple[int, int]]  # [start, end) ranges to aim at
    lengths: list[int] = field(default_factory=list)  # positions of u32 vector lengths
    offsets: list[int] = field(default_factory=list)  # positions of u32 uoffsets
    tags: list[int] = field(default_factory=list)  # positions of u8 union tags
    tables: list[int] = field(default_factory=list)  # positions of tables (redirection targets)
    # Where a payload's own structure is, for the structure-aware mutator (`fuzz_structure.py`):
    # named groups of positions (Vulkan: call arguments, list items, dimensions, the table
    # vectors' elements; Core ML: the folder index's numbers, the specification's lengths).
    structure: dict[str, list[Any]] = field(default_factory=dict)
    # Also compare the program's run with itself (`numerics --reference`): what reads the debug
    # buffer and the ETDump's debug values, which a conversion never reads.
    numerics: bool = False

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.mutate}" + (
            f"->{self.convert}" if self.convert != self.mutate else ""
        )


class _Recorder:
    """Watches `flatbuf` while a clean file is read and maps field positions to file offsets."""

    def __init__(self, root: Path) -> None:
        import numpy as np

        self.root = root.resolve()
        self._np = np
        self.files: list[tuple[int, int, str, object]] = []  # (address, size, name, keep-alive)
        self.hits: dict[str, dict[str, set[int]]] = {}
        self._fb_where: dict[int, tuple[str, int] | None] = {}
        self._keep: list[object] = []

    def address(self, buf: object) -> int:
        arr = self._np.frombuffer(buf, dtype=self._np.uint8)  # type: ignore[call-overload]
        return int(arr.ctypes.data) if arr.size else 0

    def register(self, buf: object, name: str) -> None:
        self.files.append((self.address(buf), len(buf), name, buf))  # type: ignore[arg-type]

    def locate(self, fb: Any) -> tuple[str, int] | None:
        key = id(fb)
        if key not in self._fb_where:
            self._keep.append(fb)
            where = None
            if len(fb.data):
                addr = self.address(fb.data)
                for start, size, name, _ in self.files:
                    if start <= addr < start + size:
                        where = (name, addr - start)
            self._fb_where[key] = where
        return self._fb_where[key]

    def note(self, fb: Any, what: str, pos: int) -> None:
        where = self.locate(fb)
        if where is not None:
            name, base = where
            self.hits.setdefault(name, {}).setdefault(what, set()).add(base + pos)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        import pte_adapter.container.files as files_mod
        import pte_adapter.container.pte as pte_mod
        import pte_adapter.container.sources as sources_mod
        from pte_adapter.container import flatbuf

        rec = self
        orig_read_bytes = Path.read_bytes
        orig_read_regular = files_mod.read_regular
        orig_map_regular = files_mod.map_regular
        orig_vector_at = flatbuf.FlatBuffer.vector_at
        orig_follow = flatbuf.FlatBuffer.follow
        orig_table_at = flatbuf.FlatBuffer.table_at
        orig_union = flatbuf.Table.union

        def map_file(path: Path, inside: Path | None = None) -> memoryview:
            data = memoryview(bytes(orig_read_bytes(path)))
            with contextlib.suppress(ValueError):
                rec.register(data, str(path.resolve().relative_to(rec.root)))
            return data

        def read_regular(
            path: Path, limit: int, part: str | None = None, inside: Path | None = None
        ) -> bytes:
            data = orig_read_regular(path, limit, part, inside)
            with contextlib.suppress(ValueError):
                rec.register(data, str(path.resolve().relative_to(rec.root)))
            return data

        def map_regular(
            path: Path, part: str | None = None, inside: Path | None = None
        ) -> memoryview:
            data = orig_map_regular(path, part, inside)
            with contextlib.suppress(ValueError):
                rec.register(data, str(path.resolve().relative_to(rec.root)))
            return data

        def read_bytes(path: Path) -> bytes:
            data = orig_read_bytes(path)
            with contextlib.suppress(ValueError):
                rec.register(data, str(path.resolve().relative_to(rec.root)))
            return data

        def vector_at(fb: Any, pos: int, elem_size: int, what: str) -> tuple[int, int]:
            rec.note(fb, "lengths", pos)
            return orig_vector_at(fb, pos, elem_size, what)

        def follow(fb: Any, pos: int, what: str) -> int:
            rec.note(fb, "offsets", pos)
            return orig_follow(fb, pos, what)

        def table_at(fb: Any, pos: int, what: str, *where: Any) -> Any:
            rec.note(fb, "tables", pos)
            return orig_table_at(fb, pos, what, *where)

        def union(t: Any, type_slot: int, what: str = "union") -> Any:
            p = t._field(type_slot, 1)
            if p:
                rec.note(t.fb, "tags", p)
            return orig_union(t, type_slot, what)

        patches: list[tuple[object, str, object]] = [
            (pte_mod, "map_file", map_file),
            (sources_mod, "map_file", map_file),
            (Path, "read_bytes", read_bytes),
            (files_mod, "read_regular", read_regular),
            (files_mod, "map_regular", map_regular),
            (flatbuf.FlatBuffer, "vector_at", vector_at),
            (flatbuf.FlatBuffer, "follow", follow),
            (flatbuf.FlatBuffer, "table_at", table_at),
            (flatbuf.Table, "union", union),
        ]
        saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
        import pte_adapter.api as api_mod

        saved.append((api_mod, "map_file", api_mod.map_file))
        patches.append((api_mod, "map_file", map_file))
        try:
            for obj, name, new in patches:
                setattr(obj, name, new)
            yield
        finally:
            for obj, name, old in saved:
                setattr(obj, name, old)


def _positions(rec: _Recorder, name: str, what: str, lo: int, hi: int) -> list[int]:
    return sorted(p for p in rec.hits.get(name, {}).get(what, set()) if lo <= p < hi)


def _ethosu_regions(payload: bytes, offset: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Block headers and every block's data except the (uninterpreted) weights."""
    regions: list[tuple[int, int]] = []
    lengths: list[int] = []
    pos = 0
    while pos + 32 <= len(payload):
        name = payload[pos : pos + 16].rstrip(b"\0")
        (size,) = struct.unpack_from("<I", payload, pos + 16)
        regions.append((offset + pos, offset + pos + 32))
        lengths.append(offset + pos + 16)
        data_end = min(len(payload), pos + 32 + size)
        if name not in (b"weight_data", b"scratch_data") and size:
            regions.append((offset + pos + 32, offset + data_end))
        if name == b"cmd_data":  # COP1 word counts and command payload words
            lengths += [offset + p for p in range(pos + 32, data_end - 3, 4)][:64]
        pos += 32 + (size + 15) // 16 * 16
    return regions, lengths


def _vgf_modules(data: bytes, lo: int, hi: int) -> list[tuple[int, int]]:
    """The SPIR-V modules of a VGF payload (word counts, ids, types and operands live there)."""
    from pte_adapter.delegates.vgf.decode import read_vgf

    vgf = read_vgf(memoryview(data)[lo:hi], "fuzz target", lo)
    return [
        (m.code_offset, m.code_offset + m.code_size)
        for m in vgf.modules
        if m.code_offset is not None and m.code_size
    ]


def _outside(positions: list[int], ranges: list[tuple[int, int]]) -> list[int]:
    return [p for p in positions if not any(lo <= p < hi for lo, hi in ranges)]


def discover_targets(examples: Path) -> list[Target]:
    """Every mutable file under `examples` (a `Workspace` copy), with payload ranges and fields."""
    from pte_adapter.api import load
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    targets: list[Target] = []
    ptds = sorted(p.name for p in examples.glob("*.ptd"))
    ptd_users: dict[str, str] = {}
    for pte in sorted(examples.glob("*.pte")):
        rec = _Recorder(examples)
        with rec.watching():
            program = load(pte)
            text = str(graphs_to_json(convert_path(pte)))
        for ptd in ptds:
            if ptd in text:
                ptd_users.setdefault(ptd, pte.name)
        data = pte.read_bytes()
        name = pte.name
        # A bundle (named .pte): the program's offsets are within the program it holds.
        base = program.bundle.program.offset if program.bundle else 0
        inner = (base, base + program.bundle.program.size) if program.bundle else (0, len(data))
        payloads: list[tuple[int, int]] = []
        for method in program.methods:
            for d in method.delegates:
                if d.payload_offset is None or d.payload_size is None:
                    continue
                kind = KIND_BY_BACKEND.get(d.id, "opaque")
                lo, hi = base + d.payload_offset, base + d.payload_offset + d.payload_size
                payloads.append((lo, hi))
                regions = [(lo, hi)]
                lengths = _positions(rec, name, "lengths", lo, hi)
                if kind == "ethos-u":
                    regions, lengths = _ethosu_regions(data[lo:hi], lo)
                elif kind == "vgf":
                    regions = [(lo, min(hi, lo + 128)), (lo, hi), *_vgf_modules(data, lo, hi)]
                    lengths += [lo + p for p in range(0, 128, 4)]
                elif kind in ("xnnpack", "vulkan"):  # a 30-byte header before the FlatBuffer
                    regions = [(lo, min(hi, lo + 32)), (lo, hi)]
                    lengths += [lo + p for p in range(8, 32, 4)]
                structure = payload_structure(kind, data, lo, hi)
                targets.append(
                    Target(
                        kind,
                        name,
                        name,
                        regions,
                        lengths,
                        _positions(rec, name, "offsets", lo, hi),
                        _positions(rec, name, "tags", lo, hi),
                        _positions(rec, name, "tables", lo, hi),
                        structure,
                    )
                )
        # The program itself: fields outside the payloads (those have their own targets).
        targets.append(_fields_target("pte", rec, name, [inner], payloads))
        if program.bundle:  # the bundle's own fields: root, test cases, the program's length
            targets.append(_fields_target("bundle", rec, name, [(0, len(data))], [inner]))
        for rel, hits in sorted(rec.hits.items()):
            if rel.endswith(".tosa") and "/" in rel:
                size = (examples / rel).stat().st_size
                targets.append(
                    Target(
                        "sidecar-tosa",
                        name,
                        rel,
                        [(0, size)],
                        sorted(hits.get("lengths", ())),
                        sorted(hits.get("offsets", ())),
                        sorted(hits.get("tags", ())),
                        sorted(hits.get("tables", ())),
                    )
                )
    for ptd_name, user in sorted(ptd_users.items()):
        rec = _Recorder(examples)
        with rec.watching():
            load(examples / user)
        size = (examples / ptd_name).stat().st_size
        # A .ptd's FlatBuffer sits at its start; its segments are plain tensor bytes.
        targets.append(
            Target(
                "ptd",
                user,
                ptd_name,
                [(0, min(size, 4096)), (0, size)],
                [*_positions(rec, ptd_name, "lengths", 0, size), 12],
                _positions(rec, ptd_name, "offsets", 0, size),
                [],
                _positions(rec, ptd_name, "tables", 0, size),
            )
        )
    for etrecord in sorted([*examples.glob("*.etrecord"), *examples.glob("*_etrecord.bin")]):
        # An ETRecord is a zip beside its .pte: its bytes are aimed at as a whole and at the
        # zip's central directory (the last 1 KiB: entry sizes, offsets, names), and the .pte is
        # converted. A broken ETRecord must only ever become a problem on the program.
        stem = etrecord.name.removesuffix("_etrecord.bin").removesuffix(".etrecord")
        found = [
            p.name for p in (examples / f"{stem}.pte", examples / f"{stem}.bpte") if p.exists()
        ]
        size = etrecord.stat().st_size
        if found:
            pte_name = found[0]
            targets.append(
                Target(
                    "etrecord", pte_name, etrecord.name, [(0, size), (max(0, size - 1024), size)]
                )
            )
        # The same ETRecord opened as graphs (Model Explorer on the `.etrecord`): its graphs, and
        # the program beside it matched against it. A broken one is one format error, no more.
        targets.append(
            Target(
                "etrecord-graph",
                etrecord.name,
                etrecord.name,
                [(0, size), (max(0, size - 1024), size)],
            )
        )
    for etdump in sorted(examples.glob("*.etdp")):
        # The ETDump beside a program is read for its measured time: a broken one is a problem on
        # the view (`measured profile problem`), never a lost program.
        pte = etdump.with_suffix(".pte")
        if pte.exists():
            size = etdump.stat().st_size
            targets.append(
                Target("etdump", pte.name, etdump.name, [(0, size), (0, min(size, 512))])
            )
    for listed in sorted((examples / RUNTIME_LISTS).glob("*")):
        # A runtime's operator list (`ops --runtime-ops`): the text is aimed at as a whole and
        # checked against a program that calls kernels it lists (`fuzz.run_runtime_list`).
        program = RUNTIME_LIST_PROGRAMS.get(listed.name, "xnnpack_lrn.pte")
        if (examples / program).exists():
            rel = str(listed.relative_to(examples))
            targets.append(Target("runtime-list", program, rel, [(0, listed.stat().st_size)]))
    for buffer in sorted(examples.glob("*.debug_buffer.bin")):
        # A debug buffer (and the ETDump whose debug events point into it) is read only when
        # numbers are compared: a broken one is a problem of the numeric gap, never a lost view.
        stem = buffer.name.removesuffix(".debug_buffer.bin")
        pte, etdump = examples / f"{stem}.pte", examples / f"{stem}.etdp"
        if pte.exists() and etdump.exists():
            size = buffer.stat().st_size
            targets.append(
                Target("debug-buffer", pte.name, buffer.name, [(0, size)], numerics=True)
            )
            size = etdump.stat().st_size
            targets.append(
                Target("etdump-debug", pte.name, etdump.name, [(0, size)], numerics=True)
            )
    for tosa in sorted(examples.glob("*_artifacts/*.tosa")):
        rel = str(tosa.relative_to(examples))
        rec = _Recorder(examples)
        with rec.watching():
            convert_path(tosa)
        size = tosa.stat().st_size
        targets.append(
            Target(
                "tosa-file",
                rel,
                rel,
                [(0, size)],
                _positions(rec, rel, "lengths", 0, size),
                _positions(rec, rel, "offsets", 0, size),
                _positions(rec, rel, "tags", 0, size),
                _positions(rec, rel, "tables", 0, size),
            )
        )
    return targets


def _fields_target(
    kind: str,
    rec: _Recorder,
    name: str,
    regions: list[tuple[int, int]],
    skip: list[tuple[int, int]],
) -> Target:
    """Aim at `regions` of file `name` and at the fields the reader walked in them, except
    those inside `skip` (parts with targets of their own)."""
    lo, hi = min(r[0] for r in regions), max(r[1] for r in regions)
    return Target(
        kind,
        name,
        name,
        regions,
        *(_outside(_positions(rec, name, what, lo, hi), skip) for what in FIELDS),
    )


FIELDS = ("lengths", "offsets", "tags", "tables")
# The runtime operator lists (examples/runtimes/) and the program each is checked against: one
# calling kernels the list has (with other kernel keys too), the pip runtime's against an island.
RUNTIME_LISTS = "runtimes"
RUNTIME_LIST_PROGRAMS = {
    "mv2_lrn_ethosu85.selected_operators.yaml": "whatif_lrn_cpu_ethosu85.pte",
    "undelegated.selected_operators.yaml": "cond.pte",
}
