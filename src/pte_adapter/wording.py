"""How every view writes a number for people: bytes, shapes, counts and signed changes.

One spelling per kind of value, on the ground floor so that every layer may use it (a decoder's
problem text, an analysis's error, a report's table): the same byte count reads the same in
`summary`, `fit`, the HTML report and Model Explorer's attributes. Measured times are worded by
`render/time_text.py` (they carry the profile's unit and clock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def bytes_short(n: int) -> str:
    """`147.0 KiB`, `512 B`: binary units, one decimal."""
    for unit, size in _UNITS:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def bytes_text(n: int | None) -> str:
    """`147.0 KiB (150528 B)`: the short form with the exact count; `512 B`; `?` for unknown."""
    if n is None:
        return "?"
    short = bytes_short(n)
    return short if n < 1024 else f"{short} ({n} B)"


def signed_bytes(change: int, minus: str = "-") -> str:
    """`+1.2 KiB (1234 B)`, `-512 B`, `0 B`: a change in bytes (`minus`: "−" where the text
    around it uses the typographic sign)."""
    if change == 0:
        return "0 B"
    return ("+" if change > 0 else minus) + bytes_text(abs(change))


def shape_text(sizes: Iterable[object]) -> str:
    """`[1, 3, 224, 224]`: a shape as every view writes it."""
    return "[" + ", ".join(map(str, sizes)) + "]"


def counts_text(c: Mapping[str, int]) -> str:
    """`{"a": 1, "b": 3}` -> "b ×3, a ×1" (most frequent first)."""
    return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def plural(n: int, word: str, words: str | None = None) -> str:
    """`1 tensor`, `3 tensors` (`words`: the plural when it is not `word` + "s")."""
    return f"{n} {word if n == 1 else words or word + 's'}"
