"""Opening a file of a stranger's folder: one regular file, sized before it is read, kept inside
the folder it was found in.

Every side file (`.ptd`, ETRecord, ETDump, `.tosa`, `debug.json`, Arm's partition report) is
found by its name in a folder the user did not write, so its name may be anything: a FIFO (a read
would block forever), a device (`/dev/zero` never ends), a directory, a symlink to a file
elsewhere on the machine, a name the system refuses (`ENAMETOOLONG`, `ELOOP`, `EACCES`). Each
reader goes through here:

- `probe` says whether something goes by that name (a failed look-up is a `PteFormatError`, so a
  caller turns it into a problem on the view, never an exception);
- `open_regular` resolves symlinks and refuses a target outside `inside` (the program's folder),
  refuses anything but a regular file before opening it (a FIFO or a device is never opened),
  opens without blocking and checks again on the open descriptor (the name may have been swapped);
- `read_regular` then reads at most `limit` bytes, refusing a larger file before reading any;
- `map_regular` memory-maps instead (the `.pte` and `.ptd`: only what is shown is paged in).

A refusal never quotes the bytes of the file it refused.
"""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path
from typing import BinaryIO

from pte_adapter.errors import LimitExceededError, PteFormatError

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _cannot(e: OSError, part: str) -> PteFormatError:
    return PteFormatError(f"cannot open: {e.strerror or type(e).__name__}", part=part)


def probe(path: Path, part: str | None = None) -> bool:
    """Whether anything goes by this name (a dangling symlink counts: reading it says why not).
    Raises `PteFormatError` when the name cannot even be looked up (too long, a symlink loop, a
    folder that may not be searched)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the name
        if isinstance(e, OSError):
            raise _cannot(e, part or path.name) from e
        raise PteFormatError("cannot open: the name holds a NUL byte", part=part or "") from e
    return True


def inside_folder(path: Path, folder: Path) -> bool:
    """Whether `path`, its symlinks resolved, lies in `folder` (also resolved)."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _check_regular(st: os.stat_result, part: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise PteFormatError(f"not read: it is {_kind(st.st_mode)}, not a regular file", part=part)


def open_regular(path: Path, part: str | None = None, inside: Path | None = None) -> BinaryIO:
    """An open, non-blocking binary file object on the regular file at `path` (module docstring).
    Raises `PteFormatError` naming `part` (default: the file's name) for anything else."""
    part = part or path.name
    try:
        if inside is not None and not inside_folder(path, inside):
            raise PteFormatError(
                "not read: a symlink leads outside the program's folder", part=part
            )
        _check_regular(os.stat(path), part)
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        raise _cannot(e, part) from e
    except ValueError as e:
        raise PteFormatError("cannot open: the name holds a NUL byte", part=part) from e
    try:
        _check_regular(os.fstat(fd), part)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def regular_size(f: BinaryIO) -> int:
    """The size of an open regular file (`open_regular`), in bytes."""
    return os.fstat(f.fileno()).st_size


def read_regular(
    path: Path, limit: int, part: str | None = None, inside: Path | None = None
) -> bytes:
    """The bytes of the regular file at `path`, refused before reading when it has more than
    `limit`; a file that grows while read is cut at `limit + 1` bytes and refused."""
    part = part or path.name
    with open_regular(path, part, inside) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise LimitExceededError(f"{size} bytes (limit {limit}): not read", part=part)
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise _cannot(e, part) from e
    if len(data) > limit:
        raise LimitExceededError(f"more than {limit} bytes (limit {limit}): not read", part=part)
    return data


def map_regular(path: Path, part: str | None = None, inside: Path | None = None) -> memoryview:
    """The regular file at `path` memory-mapped read-only (an empty file gives an empty view)."""
    with open_regular(path, part, inside) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return memoryview(b"")
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise PteFormatError(f"cannot map: {e}", part=part or path.name) from e
    return memoryview(mapped)


# Values one stranger's JSON file may make the parser build (a real ETRecord's edge graph has about
# one comma or bracket per 23 bytes: MobileNetV2's, 1.5 MB, has 68,000; this allows ~70 MB of it).
MAX_JSON_VALUES = 3_000_000


def json_values(data: bytes) -> int:
    """An upper bound of the values `json.loads(data)` would build: each comma, `[` and `{` plus
    one (those inside strings count too), counted at memchr speed before parsing. A part of a few
    KB zipped made of `[],` would otherwise build tens of millions of objects."""
    return data.count(b",") + data.count(b"[") + data.count(b"{") + 1
