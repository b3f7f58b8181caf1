"""Feeding corrupted copies of real bytes to a reader, and counting what it did with them.

A corruption test must be able to fail for a reader that accepts anything. So it never just
swallows `PteFormatError`: it runs every input through `Outcomes.attempt`, then asserts how many
were rejected (all of them, or a share a lax reader would not reach) and, for the inputs that were
accepted, what the test claims of them (for instance that a cut which only removed padding decodes
exactly like the intact bytes). Any exception other than `PteFormatError` propagates and fails
the test, as it would reach a user.

`byte_edits` and `cuts_of_zeros_only` are the mutations the robustness tests share; they are
seeded, so a count measured once stays the count.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pte_adapter.errors import PteFormatError

T = TypeVar("T")


@dataclass(repr=False)  # pytest shows an assertion's message by its repr: the counts
class Outcomes(Generic[T]):
    """What a reader did with each of a set of corrupted inputs, by the input's label."""

    what: str
    rejected: list[Hashable] = field(default_factory=list)
    accepted: list[tuple[Hashable, T]] = field(default_factory=list)
    errors: list[PteFormatError] = field(default_factory=list)  # one per rejected input, in order

    def attempt(self, label: Hashable, read: Callable[..., T], *args: object) -> T | None:
        """Run `read(*args)`; a `PteFormatError` counts as rejected, a result as accepted."""
        try:
            result = read(*args)
        except PteFormatError as e:
            self.rejected.append(label)
            self.errors.append(e)
            return None
        self.accepted.append((label, result))
        return result

    @property
    def tried(self) -> int:
        return len(self.rejected) + len(self.accepted)

    @property
    def rejected_share(self) -> float:
        return len(self.rejected) / self.tried if self.tried else 0.0

    def accepted_labels(self) -> list[Hashable]:
        return [label for label, _ in self.accepted]

    def __repr__(self) -> str:
        shown = ", ".join(repr(label) for label in self.accepted_labels()[:8])
        more = " ..." if len(self.accepted) > 8 else ""
        return (
            f"{self.what}: {len(self.rejected)} of {self.tried} rejected with PteFormatError "
            f"({self.rejected_share:.1%}); accepted: [{shown}{more}]"
        )


def byte_edits(
    rng: random.Random, data: bytes, most: int = 8, span: tuple[int, int] | None = None
) -> tuple[bytes, list[tuple[int, int]]]:
    """`data` with 1 to `most` bytes set to random values at random positions in `span`
    (default: anywhere); returns the bytes and the (position, value) edits as a label."""
    lo, hi = span or (0, len(data))
    out = bytearray(data)
    edits = [(rng.randrange(lo, hi), rng.randrange(256)) for _ in range(rng.randint(1, most))]
    for pos, value in edits:
        out[pos] = value
    return bytes(out), edits


def cuts_of_zeros_only(data: bytes) -> set[int]:
    """The lengths `n` at which `data[:n]` loses nothing but zero bytes (trailing padding, or a
    string's terminator): the only cuts a reader may accept and read as the intact data."""
    return set(range(len(data.rstrip(b"\0")), len(data) + 1))
