"""One error family for every malformed input.

A message always says which part of which file, at what byte offset, what was expected and what was
found, so that a user can act on it (and a developer can find the bytes with a hex viewer).
"""

from __future__ import annotations


class PteFormatError(Exception):
    """The bytes do not form what they claim to be (a `.pte`, `.ptd`, or a delegate payload)."""

    def __init__(self, what: str, *, part: str = "", offset: int | None = None) -> None:
        self.what = what
        self.part = part
        self.offset = offset
        where = part
        if offset is not None:
            where = f"{where} at byte {offset}" if where else f"at byte {offset}"
        super().__init__(f"{where}: {what}" if where else what)


class LimitExceededError(PteFormatError):
    """A count or length in the file is larger than the reader is willing to walk."""
