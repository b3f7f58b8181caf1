"""Structure-aware fuzzing of Vulkan and Core ML payloads (issue 44): where their structure is, and
the mutator that aims at it.

Byte flips rarely make the structures that multiply a reader's or a view's work: one table shared
by thousands of vector entries, one value named by every call, a list that holds itself, a count
of billions, folders whose children are each other's. `payload_structure` finds, in a clean payload,
the positions such edits need (Vulkan: the chain's and the values' table offsets, every call's
argument ids, every value list's items, every tensor's dimensions, the vector lengths; Core ML:
the numbers of the folder index, the length varints and tags of the model specification); the
mutator `m_structure` makes one of those edits, as "set" edits of a recipe (`fuzz_recipes.py`), so
a failure is replayed from the clean example like any other.
"""

from __future__ import annotations

import random
import re
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fuzz_targets import Target

MAX_POSITIONS = 512  # per group: enough to aim anywhere, small enough to keep targets light
_NUMBER = re.compile(rb"[0-9]+")


def payload_structure(kind: str, data: bytes, lo: int, hi: int) -> dict[str, list[Any]]:
    """The structure of the payload at [lo, hi) of the file `data`, in file positions; {} for a
    kind without one, or a payload the readers refuse."""
    from pte_adapter.errors import PteFormatError

    try:
        if kind == "vulkan":
            return _vulkan(data, lo, hi)
        if kind == "coreml":
            return _coreml(data, lo, hi)
    except PteFormatError:
        return {}
    return {}


def _u32(data: bytes | memoryview, pos: int) -> int:
    return int(struct.unpack_from("<I", data, pos)[0])


def _vulkan(data: bytes, lo: int, hi: int) -> dict[str, list[Any]]:
    from pte_adapter.container.flatbuf import FlatBuffer
    from pte_adapter.delegates.vulkan._generated.vulkan_schema import TABLES, UNIONS
    from pte_adapter.delegates.vulkan.records import GRAPH, read_header

    def slot(table: str, name: str) -> int:
        return next(f.slot for f in TABLES[table] if f.name == name)

    header = read_header(memoryview(data)[lo:hi], "fuzz target", lo)
    start = lo + header.flatbuffer_offset
    fb = FlatBuffer(data[start : start + header.flatbuffer_size], "fuzz target", base=start)
    root = fb.root()
    out: dict[str, list[Any]] = {
        k: [] for k in ("chain", "values", "args", "items", "dims", "lists", "lengths")
    }
    for name in ("chain", "values"):
        pos = root._ref(GRAPH[name].slot, name)
        if pos:
            out["lengths"].append(start + pos)
            for i in range(min(_u32(fb.data, pos), MAX_POSITIONS)):
                elem = pos + 4 + 4 * i
                out[name].append([start + elem, start + elem + _u32(fb.data, elem)])

    def elements(table: Any, field: int, size: int, into: str) -> None:
        pos = table._ref(field, into)
        if pos:
            out["lengths"].append(start + pos)
            n = min(_u32(fb.data, pos), MAX_POSITIONS)
            out[into] += [start + pos + 4 + size * i for i in range(n)]

    for call in root.iter_tables(GRAPH["chain"].slot, "chain"):
        elements(call, slot("OperatorCall", "args"), 4, "args")
    union = slot("VkValue", "value")
    for i, value in enumerate(root.iter_tables(GRAPH["values"].slot, "values")):
        tag, sub = value.union(union, "value")
        member = UNIONS["GraphTypes"].get(tag)
        if sub is None:
            continue
        if member == "ValueList":
            out["lists"].append(i)
            elements(sub, slot("ValueList", "items"), 4, "items")
        elif member == "VkTensor":
            elements(sub, slot("VkTensor", "dims"), 4, "dims")
    return {k: v[:MAX_POSITIONS] for k, v in out.items() if v}


def _coreml(data: bytes, lo: int, hi: int) -> dict[str, list[Any]]:
    from pte_adapter.delegates.coreml.decode import MANIFEST
    from pte_adapter.delegates.coreml.filetree import read_file_tree

    tree = read_file_tree(memoryview(data)[lo:hi], "fuzz target", lo)
    index = lo + tree.index_offset
    numbers = _NUMBER.finditer(data, index, hi)  # positions in the file, as the edits want
    out: dict[str, list[Any]] = {
        "numbers": [[m.start(), m.end() - m.start()] for m in numbers][:MAX_POSITIONS],
        "tags": [],
        "lengths": [],
    }
    for f in tree.files:
        if f.path.endswith(".mlmodel"):
            _wire(data, lo + f.offset, lo + f.offset + f.size, out, 0)
        elif f.path == MANIFEST:
            out["manifest"] = [[lo + f.offset, f.size]]
    return {k: v[:MAX_POSITIONS] for k, v in out.items() if v}


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    value = 0
    for i in range(10):
        if pos + i >= end:
            return None
        b = data[pos + i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value, pos + i + 1
    return None


def _message_ends(data: bytes, pos: int, end: int) -> bool:
    """Whether [pos, end) reads as a whole protobuf message (without a schema)."""
    while pos < end:
        key = _varint(data, pos, end)
        if key is None or key[0] >> 3 == 0:
            return False
        pos, wire = key[1], key[0] & 7
        if wire == 0:
            got = _varint(data, pos, end)
            if got is None:
                return False
            pos = got[1]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            got = _varint(data, pos, end)
            if got is None or got[1] + got[0] > end:
                return False
            pos = got[1] + got[0]
        else:
            return False
    return pos == end


def _wire(data: bytes, pos: int, end: int, out: dict[str, list[Any]], depth: int) -> None:
    """The tags and length varints of the message at [pos, end), and of the messages inside it
    (any length-delimited field that reads as one), up to 12 deep."""
    while pos < end and len(out["tags"]) < MAX_POSITIONS:
        key = _varint(data, pos, end)
        if key is None:
            return
        tag_at, (value, pos) = pos, key
        wire = value & 7
        if wire == 2:
            got = _varint(data, pos, end)
            if got is None or got[1] + got[0] > end:
                return
            out["tags"].append(tag_at)
            out["lengths"].append([pos, got[1] - pos])
            body, stop = got[1], got[1] + got[0]
            if depth < 12 and got[0] and _message_ends(data, body, stop):
                _wire(data, body, stop, out, depth + 1)
            pos = stop
        elif wire == 0:
            got = _varint(data, pos, end)
            if got is None:
                return
            pos = got[1]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            return


# -- the mutator -------------------------------------------------------------------------------

_HUGE = (0x7FFF_FFFF, 0xFFFF_FFFF, 0x1000_0000, 0x0100_0000)


def _set_u32(pos: int, value: int) -> list[Any]:
    return ["set", pos, struct.pack("<I", value & 0xFFFF_FFFF).hex()]


def _vulkan_edit(rng: random.Random, s: dict[str, list[Any]]) -> list[list[Any]]:
    choices = [k for k in ("share", "refs", "nest", "dims", "count") if _usable(k, s)]
    if not choices:
        return []
    what = rng.choice(choices)
    if what == "share":  # a run of the chain's (or values') entries pointing at one table
        elements = s[rng.choice([k for k in ("chain", "values") if s.get(k)])]
        target = rng.choice(elements)[1]
        first = rng.randrange(len(elements))
        run = elements[first : first + rng.choice([2, 16, len(elements)])]
        return [_set_u32(elem, target - elem) for elem, _ in run]
    if what == "refs":  # many arguments naming one value (a list, the first tensor, none)
        value = rng.choice([*s.get("lists", []), 0, 1, 0x7FFF_FFFF, -1])
        args = rng.sample(s["args"], min(len(s["args"]), rng.choice([2, 16, 512])))
        return [_set_u32(a, value) for a in args]
    if what == "nest":  # a list's items naming lists (itself among them)
        lists = s["lists"]
        items = rng.sample(s["items"], min(len(s["items"]), rng.choice([1, 8, 512])))
        return [_set_u32(i, rng.choice(lists)) for i in items]
    if what == "dims":  # dimensions whose product has thousands of digits
        dims = rng.sample(s["dims"], min(len(s["dims"]), rng.choice([1, 4, 512])))
        return [_set_u32(d, rng.choice([0xFFFF_FFFF, 0x8000_0000, 0])) for d in dims]
    pos = rng.choice(s["lengths"])  # "count": a vector claiming more elements
    return [_set_u32(pos, rng.choice(_HUGE))]


def _usable(what: str, s: dict[str, list[Any]]) -> bool:
    return {
        "share": bool(s.get("chain") or s.get("values")),
        "refs": bool(s.get("args")),
        "nest": bool(s.get("lists") and s.get("items")),
        "dims": bool(s.get("dims")),
        "count": bool(s.get("lengths")),
    }[what]


def _coreml_edit(rng: random.Random, s: dict[str, list[Any]], data: bytes) -> list[list[Any]]:
    what = rng.choice([k for k in ("numbers", "lengths", "tags") if s.get(k)] or ["none"])
    if what == "numbers":  # index numbers (child indices, offsets, sizes, kinds), same length
        edits = []
        for pos, n in rng.sample(s["numbers"], min(len(s["numbers"]), rng.choice([1, 4, 32]))):
            other = rng.choice(s["numbers"])
            digits = rng.choice(
                [
                    "9" * n,
                    "0" * n,
                    "1".rjust(n, "0")[-n:],
                    data[other[0] : other[0] + other[1]].decode()[:n].rjust(n, "1"),
                ]
            )
            # The index is written backwards: its digits too.
            edits.append(["set", pos, digits[::-1].encode().hex()])
        return edits
    if what == "lengths":  # a length varint claiming more (or less) than its message holds
        pos, n = rng.choice(s["lengths"])
        value = rng.choice([0x7F, 0, 1, data[pos] + 1, data[pos] ^ 0x40]) & 0x7F
        return [["set", pos + n - 1, f"{value:02x}"]]
    if what == "tags":  # a field read as another (an operation, a function, a block)
        pos = rng.choice(s["tags"])
        return [["set", pos, f"{rng.choice([0x1A, 0x12, 0x0A, 0x22, 0xB2]):02x}"]]
    return []


def m_structure(
    rng: random.Random, t: Target, data: bytes, names: list[tuple[str, int]]
) -> list[list[Any]]:
    """One structure-aware edit of a Vulkan or Core ML payload (`t.structure`); for any other
    target (or one without structure), a vector length inflated at a recorded position."""
    if t.kind == "vulkan" and t.structure:
        edits = _vulkan_edit(rng, t.structure)
    elif t.kind == "coreml" and t.structure:
        edits = _coreml_edit(rng, t.structure, data)
    else:
        edits = []
    if edits:
        return edits
    if not t.lengths:
        return []
    return [_set_u32(rng.choice(t.lengths), rng.choice(_HUGE))]
