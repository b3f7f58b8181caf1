"""Fuzz recipes: the mutators, and the one function that applies a recipe to clean bytes.

A mutation is a *recipe*: a JSON-able list of edits applied to the clean file, e.g.
`[["set", 4096, "ffffffff"]]`, `[["truncate", 1000]]`, `[["splice", "other.pte", 800, 1200]]`.
Recipes are what `tests/support/fuzz_regressions/*.json` store, so a crash is replayed from a real
example without committing the corrupted bytes. Each mutator aims at a target's regions and the
FlatBuffer fields recorded for it (`fuzz_targets.py`).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.examples import EXAMPLES
from tests.support.fuzz_structure import m_structure
from tests.support.fuzz_targets import Target

# ["set", offset, hex] | ["xor", offset, hex] | ["truncate", n] | ["splice", name, cut, other_cut]
# | ["delete", offset, n] | ["insert", offset, hex] | ["fill", offset, count, hex]
Edit = list[Any]
Recipe = list[Edit]

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
    ("structure", m_structure),  # shared tables, repeated references, nesting, huge counts
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
