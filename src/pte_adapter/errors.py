"""One error family for every malformed input.

A message always says which part of which file, at what byte offset, what was expected and what was
found, so that a user can act on it (and a developer can find the bytes with a hex viewer).
"""

from __future__ import annotations

from typing import TypeVar


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


_E = TypeVar("_E", bound=BaseException)


def detached(error: _E) -> _E:
    """`error`, to keep on an object that outlives the `except` block that caught it: without its
    traceback, nor those of the errors it was raised from. A traceback's frames hold the locals of
    every call it passed, among them the object it is kept on: the two would form a cycle that
    only Python's cycle collector frees, with everything the reading made (a server converting
    file after file with a corrupt ETDump beside it grew by half a megabyte per file, issue 44).
    Raise a kept error again as `copy.copy(error)`, which has no traceback to keep."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
    return error
