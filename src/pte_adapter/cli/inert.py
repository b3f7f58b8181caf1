"""Terminal output that a file cannot command: every control character is written as `\\uXXXX`.

Names in a `.pte` (operators, compile specs, methods, file names beside it) are printed by every
text command. A terminal acts on some characters: ESC starts a sequence that can set the window
title, write into the clipboard (OSC 52) or move the cursor; CR and BS overwrite what was printed;
BEL rings; C1 controls (U+0080-U+009F) are the same sequences in one character; bidirectional
overrides reorder what is shown. `inert_output()` wraps stdout and stderr for the length of a
command so that each of those reaches the terminal as the six visible characters `\\u001b`
(newline and tab pass as they are). The spelling is JSON's own escape, so `--json` output stays
valid JSON that decodes to the same strings. Files the commands write (the HTML report, exported
graphs) are not terminal output and are left as they are.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

_CONTROLS = [
    *range(0x00, 0x20),
    0x7F,
    *range(0x80, 0xA0),
    *range(0x202A, 0x202F),  # bidirectional embeddings and overrides
    *range(0x2066, 0x206A),  # bidirectional isolates
]
ESCAPES = {c: f"\\u{c:04x}" for c in _CONTROLS if chr(c) not in "\n\t"}


def inert(text: str) -> str:
    """`text` with every control character but newline and tab written as `\\uXXXX`."""
    return text.translate(ESCAPES)


class InertStream:
    """A text stream that writes through `inert` to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(inert(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno ...
        return getattr(self._stream, name)


@contextlib.contextmanager
def inert_output() -> Iterator[None]:
    """stdout and stderr wrapped by `InertStream` for the length of the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout = InertStream(saved[0])
    sys.stderr = InertStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
