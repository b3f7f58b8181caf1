"""Mutation fuzzing over the real example files: targets, mutators, recipes and a runner.

A *target* is one file to corrupt (a `.pte`, a `.ptd`, a sidecar `.tosa` or an `.etrecord`) together with the file
to convert afterwards (the `.pte` that reads it, or the `.tosa` itself) and the byte ranges worth
aiming at (a delegate payload, or the whole file). FlatBuffer field positions (vector lengths,
uoffsets, union tags) are not guessed: they are recorded by watching the project's own reader walk
the clean file, so "length-field inflation", "union-tag change" and "offset redirection" hit real
fields of the program, the TOSA graph, the XNNPACK graph and the VGF tables.

A mutation is a *recipe*: a JSON-able list of edits applied to the clean file, e.g.
`[["set", 4096, "ffffffff"]]`, `[["truncate", 1000]]`, `[["splice", "other.pte", 800, 1200]]`.
Recipes are what `tests/support/fuzz_regressions/*.json` store, so a crash is replayed from a real example
without committing the corrupted bytes.

The runner converts inside a private copy of `examples/` (so sidecar and `.ptd` lookups behave as
they do beside real files), times each input, and reports any exception that is not a
`PteFormatError` - including decoder exceptions that `delegates.registry` would otherwise turn into
a "this is a bug" problem text.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tests.support.examples import EXAMPLES

REGRESSIONS = Path(__file__).resolve().parent / "fuzz_regressions"

# ["set", offset, hex] | ["xor", offset, hex] | ["truncate", n] | ["splice", name, cut, other_cut]
# | ["delete", offset, n] | ["insert", offset, hex] | ["fill", offset, count, hex]
Edit = list[Any]
Recipe = list[Edit]

KIND_BY_BACKEND = {
    "EthosUBackend": "ethos-u",
    "TOSABackend": "tosa",
    "XnnpackBackend": "xnnpack",
    "VgfBackend": "vgf",
    "VulkanBackend": "vulkan",
    "CoreMLBackend": "coreml",
}

INTERESTING_U32 = (
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    15,
    16,
    31,
    32,
    64,
    127,
    128,
    255,
    256,
    4095,
    4096,
    65535,
    65536,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFE,
    0xFFFF_FFFF,
    0x1000_0000,
    0x0FFF_FFFF,
    0x4000_0000,
)
INTERESTING_U8 = (0, 1, 2, 3, 4, 0x7F, 0x80, 0xFE, 0xFF)
# Files a run copies: programs, bundles, data, sidecars, manifests, ETRecords (`.etrecord`, Arm's
# `_etrecord.bin`) and ETDumps.
COPIED = (".pte", ".bpte", ".ptd", ".tosa", ".json", ".etrecord", ".bin", ".etdp")


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
        if found:
            pte_name = found[0]
            size = etrecord.stat().st_size
            targets.append(
                Target(
                    "etrecord", pte_name, etrecord.name, [(0, size), (max(0, size - 1024), size)]
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


# -- mutators ---------------------------------------------------------------------------------


def _pos_in(rng: random.Random, t: Target, size: int) -> int:
    lo, hi = rng.choice(t.regions)
    hi = min(hi, size)
    return rng.randrange(lo, hi) if hi > lo else rng.randrange(max(size, 1))


def _u32_hex(v: int) -> str:
    return struct.pack("<I", v & 0xFFFF_FFFF).hex()


def m_bitflip(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    out: Recipe = []
    for _ in range(rng.randint(1, 8)):
        p = _pos_in(rng, t, len(data))
        out.append(["xor", p, f"{1 << rng.randrange(8):02x}"])
    return out


def m_byteset(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    out: Recipe = []
    for _ in range(rng.randint(1, 4)):
        p = _pos_in(rng, t, len(data))
        v = rng.choice(INTERESTING_U8) if rng.random() < 0.7 else rng.randrange(256)
        out.append(["set", p, f"{v:02x}"])
    return out


def m_u32set(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    p = _pos_in(rng, t, len(data)) & ~3
    v = rng.choice(INTERESTING_U32) if rng.random() < 0.8 else rng.getrandbits(32)
    return [["set", p, _u32_hex(v)]]


def m_truncate(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    if rng.random() < 0.5:
        return [["truncate", _pos_in(rng, t, len(data))]]
    return [["truncate", rng.randrange(max(len(data), 1))]]


def m_splice(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    other, osize = rng.choice(names)
    cut = _pos_in(rng, t, len(data))
    ocut = rng.randrange(max(osize, 1))
    if rng.random() < 0.5:
        cut, ocut = cut & ~15, ocut & ~15
    return [["splice", other, cut, ocut]]


def m_inflate(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    if t.lengths and rng.random() < 0.9:
        p = rng.choice(t.lengths)
    else:  # any aligned u32 holding a small count
        cands = [q for q in range(_pos_in(rng, t, len(data)) & ~3, len(data) - 3, 4)][:256]
        small = [q for q in cands if 0 < struct.unpack_from("<I", data, q)[0] < 4096]
        p = rng.choice(small or cands or [0])
    if p + 4 > len(data):
        return []
    old = struct.unpack_from("<I", data, p)[0]
    v = rng.choice(
        [
            0x7FFF_FFFF,
            0xFFFF_FFFF,
            0x1000_0000,
            0x4000_0000,
            old * 65536,
            old + 1,
            len(data) // 4,
            len(data) - p,
            old * 2 + 1,
            0x0100_0000,
        ]
    )
    return [["set", p, _u32_hex(v)]]


def m_tag(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    if not t.tags:
        return m_byteset(rng, t, data, names)
    p = rng.choice(t.tags)
    v = rng.randrange(256) if rng.random() < 0.3 else rng.randrange(48)
    return [["set", p, f"{v:02x}"]]


def m_redirect(rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]) -> Recipe:
    if not t.offsets:
        return m_u32set(rng, t, data, names)
    p = rng.choice(t.offsets)
    choice = rng.random()
    if choice < 0.4 and t.tables:  # at another table (shared/cyclic structure)
        v = rng.choice(t.tables) - p
    elif choice < 0.55:
        v = 0  # at itself
    elif choice < 0.7:
        v = -rng.randrange(4, 4096, 4)  # backwards (uoffsets are unsigned: wraps huge)
    else:
        v = rng.randrange(0, max(len(data) - p, 4)) & ~3
    return [["set", p, _u32_hex(v)]]


def m_insert_delete(
    rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]
) -> Recipe:
    p = _pos_in(rng, t, len(data))
    if rng.random() < 0.5:
        return [["delete", p, rng.choice([1, 2, 4, 8, 16, 32])]]
    return [["insert", p, bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 16]))).hex()]]


MUTATORS: list[
    tuple[str, Callable[[random.Random, Target, bytes, list[tuple[str, int]]], Recipe]]
] = [
    ("bitflip", m_bitflip),
    ("byteset", m_byteset),
    ("u32set", m_u32set),
    ("truncate", m_truncate),
    ("splice", m_splice),
    ("inflate", m_inflate),
    ("tag", m_tag),
    ("redirect", m_redirect),
    ("insdel", m_insert_delete),
]


def mutate(
    rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]
) -> tuple[str, Recipe]:
    """One recipe: usually a single mutator, sometimes a stack of them ("havoc")."""
    if rng.random() < 0.2:
        recipe: Recipe = []
        labels = []
        for _ in range(rng.randint(2, 4)):
            label, fn = rng.choice(MUTATORS)
            if label in ("truncate", "splice", "insdel"):
                continue  # keep positions meaningful: only in-place edits stack
            recipe += fn(rng, t, data, names)
            labels.append(label)
        return "havoc(" + "+".join(labels) + ")", recipe
    label, fn = rng.choice(MUTATORS)
    return label, fn(rng, t, data, names)


def apply_recipe(data: bytes, recipe: Recipe, examples: Path = EXAMPLES) -> bytes:
    buf = bytearray(data)
    for edit in recipe:
        op = edit[0]
        if op == "set":
            p, raw = int(edit[1]), bytes.fromhex(edit[2])
            if p < len(buf):
                buf[p : p + len(raw)] = raw[: max(0, len(buf) - p)]
        elif op == "xor":
            p, raw = int(edit[1]), bytes.fromhex(edit[2])
            for i, b in enumerate(raw):
                if p + i < len(buf):
                    buf[p + i] ^= b
        elif op == "truncate":
            del buf[int(edit[1]) :]
        elif op == "splice":
            other = (examples / str(edit[1])).read_bytes()
            buf = buf[: int(edit[2])] + bytearray(other[int(edit[3]) :])
        elif op == "delete":
            del buf[int(edit[1]) : int(edit[1]) + int(edit[2])]
        elif op == "insert":
            buf[int(edit[1]) : int(edit[1])] = bytes.fromhex(edit[2])
        elif op == "fill":  # ["fill", offset, count, hex]: insert `count` copies of the bytes
            buf[int(edit[1]) : int(edit[1])] = bytes.fromhex(edit[3]) * int(edit[2])
        else:
            raise ValueError(f"unknown recipe edit {edit!r}")
    return bytes(buf)


# -- running ----------------------------------------------------------------------------------


class FuzzTimeout(BaseException):  # BaseException: no `except Exception` may eat it
    """An input ran past the hard time limit."""


@dataclass
class Outcome:
    status: str  # "ok", "format" (PteFormatError), or the name of any other exception type
    seconds: float  # wall-clock time of the conversion
    cpu_seconds: float  # CPU time of the conversion (what the input costs, on a busy machine too)
    message: str = ""
    swallowed: list[str] = field(default_factory=list)  # decoder bugs the registry caught

    @property
    def bad(self) -> bool:
        return self.status not in ("ok", "format") or bool(self.swallowed)


@contextlib.contextmanager
def _decoder_watch(swallowed: list[str]) -> Iterator[None]:
    """Wrap every registry decoder so that a non-format exception is recorded (then re-raised,
    so the registry still turns it into a problem text as it would for a user)."""
    from pte_adapter.delegates import registry
    from pte_adapter.errors import PteFormatError

    orig = registry.hook

    def hook(target: str) -> Any:
        decoder = orig(target)
        if decoder is None:
            return None

        def watched(*args: Any) -> Any:
            try:
                return decoder(*args)
            except PteFormatError:
                raise
            except Exception as e:
                swallowed.append(f"{target}: {type(e).__name__}: {e}")
                raise

        return watched

    registry.hook = hook  # type: ignore[assignment]
    try:
        yield
    finally:
        registry.hook = orig  # type: ignore[assignment]


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise FuzzTimeout("hard time limit")


def run_input(path: Path, hard_limit: float = 30.0, to_json: bool = True) -> Outcome:
    """Convert one file (and serialise its graphs, as the server does) and classify the result.

    `seconds` times the conversion only.
    """
    from pte_adapter.errors import PteFormatError
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    swallowed: list[str] = []
    watch = _decoder_watch(swallowed)
    watch.__enter__()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, hard_limit)
    t0, c0 = time.perf_counter(), time.process_time()
    elapsed = cpu = None
    try:
        graphs = convert_path(path)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        if to_json:
            graphs_to_json(graphs)
        status, message = "ok", ""
    except PteFormatError as e:
        status, message = "format", str(e)
    except FuzzTimeout:
        status, message = "FuzzTimeout", f"over {hard_limit} s"
    except Exception as e:
        status, message = type(e).__name__, str(e)[:500]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        watch.__exit__(None, None, None)
    if elapsed is None or cpu is None:
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Outcome(status, elapsed, cpu, message, list(swallowed))


def _link_or_copy(src: Path, dst: Path) -> None:
    """A hard link where the file system allows it (the snapshot and the workers' copies share
    /dev/shm), else a copy. Safe because a workspace never writes into a file: `_write` puts a new
    inode in its place. Copies cost the examples' size per worker, and a pool under load replaces
    many workers (436 copies, 22 GB of /dev/shm, were seen before the links)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _place_examples(source: Path, root: Path) -> None:
    """The example files of `source` (not the workers' folders inside a snapshot) under `root`,
    linked where the file system allows it."""
    for src in source.rglob("*"):
        if ".workers" in src.relative_to(source).parts:
            continue
        if src.is_file() and src.suffix in COPIED:
            dst = root / src.relative_to(source)
            dst.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(src, dst)


class Workspace:
    """A private snapshot of examples/ in which one file at a time is replaced by mutated bytes.

    Everything (target discovery, splices, clean bytes) uses the snapshot, so examples being
    rebuilt while a run goes on cannot change what the run means.
    """

    def __init__(self, root: Path, source: Path = EXAMPLES) -> None:
        self.root = root
        _place_examples(source, root)
        self._clean: dict[str, bytes] = {}

    def names(self) -> list[tuple[str, int]]:
        """(name, size) of every file a splice may take its tail from."""
        return sorted(
            (str(p.relative_to(self.root)), p.stat().st_size)
            for p in self.root.rglob("*")
            if p.suffix in (".pte", ".ptd", ".tosa")
        )

    def clean(self, rel: str) -> bytes:
        if rel not in self._clean:
            self._clean[rel] = (self.root / rel).read_bytes()
        return self._clean[rel]

    def _write(self, rel: str, data: bytes) -> None:
        # A new inode each time: a conversion's stale memory map never sees the bytes change.
        dst = self.root / rel
        tmp = dst.with_name(dst.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, dst)

    def mutated(self, target: Target, recipe: Recipe) -> bytes:
        return apply_recipe(self.clean(target.mutate), recipe, self.root)

    def run(
        self, target: Target, recipe: Recipe, hard_limit: float = 30.0, to_json: bool = True
    ) -> Outcome:
        self.clean(target.mutate)
        self._write(target.mutate, self.mutated(target, recipe))
        try:
            return run_input(self.root / target.convert, hard_limit, to_json)
        finally:
            self._write(target.mutate, self.clean(target.mutate))


def pick_target(rng: random.Random, targets: list[Target], root: Path) -> Target:
    """A kind uniformly, then a target of that kind: any one 2% of the time, else smaller
    files (cheaper to convert) much more often.

    Sizes, not timings, weigh the choice so that a seed always gives the same inputs.
    """
    kinds = sorted({t.kind for t in targets})
    kind = rng.choice(kinds)
    pool = [t for t in targets if t.kind == kind]
    if rng.random() < 0.02:
        return rng.choice(pool)
    weights = [
        1.0
        / (
            (root / t.convert).stat().st_size / 2**20
            + (root / t.mutate).stat().st_size / 2**20
            + 0.05
        )
        ** 2
        for t in pool
    ]
    return rng.choices(pool, weights)[0]


def minimise(ws: Workspace, target: Target, recipe: Recipe, status: str) -> Recipe:
    """Drop edits while the input still fails the same way (recipes are short; greedy is enough)."""

    def same(r: Recipe) -> bool:
        o = ws.run(target, r)
        return o.status == status or (status == "swallowed" and bool(o.swallowed))

    i = 0
    while i < len(recipe) and len(recipe) > 1:
        trial = recipe[:i] + recipe[i + 1 :]
        if same(trial):
            recipe = trial
        else:
            i += 1
    return recipe


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- campaigns (the test's bounded run and scripts/fuzz.py) -----------------------------------

_STATE: dict[str, Any] = {}


def tmp_dir() -> str | None:
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def snapshot_examples() -> Path:
    """Copy the example files once; workers copy this snapshot (a run sees one set of files)."""
    import tempfile

    snapshot = Path(tempfile.mkdtemp(prefix="pte-fuzz-snapshot-", dir=tmp_dir()))
    _place_examples(EXAMPLES, snapshot)
    return snapshot


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def worker_init(snapshot: str, seed: int, mem_limit_mib: int) -> None:
    """Pool initialiser: a private workspace, its targets, and an address-space limit.

    It never raises: a pool replaces a worker whose initialiser fails, forever (a harness that no
    longer fit the reader once made hundreds of workers, each with its workspace, until memory ran
    out). The failure is kept and `work` raises it, so the run fails at once with its cause."""
    try:
        _init_worker(snapshot, seed, mem_limit_mib)
    except Exception:
        import traceback

        _STATE["init_error"] = traceback.format_exc()


def _init_worker(snapshot: str, seed: int, mem_limit_mib: int) -> None:
    import resource
    import tempfile

    # Inside the snapshot's folder, so removing the snapshot removes every worker's copy too.
    (Path(snapshot) / ".workers").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="worker-", dir=Path(snapshot) / ".workers"))
    ws = Workspace(root, Path(snapshot))
    targets = discover_targets(root)
    if mem_limit_mib:
        limit = mem_limit_mib * 2**20 + _vm_size()
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _STATE.update(ws=ws, targets=targets, names=ws.names(), seed=seed)


def _worker_state() -> dict[str, Any]:
    """The worker's state, for every task the pool runs; raises its initialiser's failure."""
    if "init_error" in _STATE:
        raise RuntimeError(f"the fuzz worker could not start:\n{_STATE['init_error']}")
    return _STATE


def make_input(i: int) -> tuple[Target, str, Recipe]:
    """Input `i` of the campaign: a function of the seed, `i` and the snapshot only."""
    _worker_state()
    rng = random.Random(f"{_STATE['seed']}:{i}")
    ws: Workspace = _STATE["ws"]
    target = pick_target(rng, _STATE["targets"], ws.root)
    label, recipe = mutate(rng, target, ws.clean(target.mutate), _STATE["names"])
    return target, label, recipe


def work(i: int) -> dict[str, Any]:
    target, label, recipe = make_input(i)
    ws: Workspace = _STATE["ws"]
    # Serialising the graphs (as the server does) costs as much as converting: do it for some.
    outcome = ws.run(target, recipe, hard_limit=20.0, to_json=i % 20 == 0)
    result: dict[str, Any] = {
        "i": i,
        "kind": target.kind,
        "target": target.name,
        "mutator": label.split("(")[0],
        "status": outcome.status,
        "seconds": outcome.seconds,
        "cpu": outcome.cpu_seconds,
        "rss": peak_rss_mib(),
    }
    if outcome.bad or outcome.cpu_seconds > 1.0:
        result.update(
            message=outcome.message,
            swallowed=outcome.swallowed[:3],
            recipe=recipe,
            convert=target.convert,
            mutate=target.mutate,
        )
    return result


def minimise_item(item: dict[str, Any]) -> Recipe:
    state = _worker_state()
    ws: Workspace = state["ws"]
    target = next(t for t in state["targets"] if t.name == item["target"])
    status = "swallowed" if item["swallowed"] else item["status"]
    return minimise(ws, target, item["recipe"], status)
