"""What every command shares: the exit codes, the usage error, the `--etrecord` help and the
`-o` output file and every other file a command writes (`--node-data`, `--npu-overlay`: checked
before any work, written never through a symlink).

Exit codes: 0 ok; 1 a `check` limit was exceeded, `diff --fail-on-regression` found a regression,
or `fit` found that the program does not fit;
2 bad command line (including `check` with no limit or an unknown `--method`, and a `-o`,
`--node-data` or `--npu-overlay` file that cannot be written); 3 the file is missing, unreadable or
not a valid `.pte` (one line on stderr says what and where); 4 internal error.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_BAD_FILE = 3
EXIT_INTERNAL = 4

ETRECORD_HELP = (
    "the program's ETRecord (default: the one beside it: <stem>.etrecord, <stem>_etrecord.bin "
    "or etrecord.bin); its layers are shown only if it belongs to the program"
)


class UsageError(Exception):
    """A mistake on the command line found after parsing (exit 2)."""


def output_path(output: str, example_name: str, option: str = "-o") -> Path:
    """The path given to `option` (`-o`, `--node-data`, ...), once it is known to name a file in
    an existing folder (else `UsageError`, whose message shows `example_name` as a file name to
    give)."""
    out = Path(output)
    if out.is_dir():
        raise UsageError(
            f"{option} {out}: is a directory; give a file name, e.g. {out / example_name}"
        )
    if not out.parent.is_dir():
        raise UsageError(f"{option} {out}: the folder {out.parent} does not exist")
    return out


_WRITE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def write_output(out: Path, text: str, option: str = "-o") -> None:
    """Write `text` to `out`, a new or a regular file: never through a symlink (the default
    `report.html` of a folder someone else made may point anywhere), never into a FIFO or a device
    (opened without blocking, then refused). Raises `UsageError` with one line saying why not."""
    try:
        fd = os.open(out, _WRITE_FLAGS, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.EEXIST and out.is_symlink()):
            raise UsageError(
                f"{option} {out}: is a symlink; not written through it (remove it first)"
            ) from e
        raise UsageError(f"{option} {out}: cannot write: {e.strerror or e}") from e
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{option} {out}: not a regular file; not written")
        try:
            f.write(text)
        except OSError as e:
            raise UsageError(f"{option} {out}: cannot write: {e.strerror or e}") from e
