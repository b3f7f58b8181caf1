"""Read a debug buffer: the bytes of every tensor an ExecuTorch runtime logged while it ran.

With intermediate-output logging on (`debug_buffer_size` in Python, `ETDumpGen::set_debug_buffer`
in C++), the runtime copies each logged tensor into one buffer, which it writes to its own file
beside the ETDump (`write_etdump_result_to_file(etdump, debug_buffer)`; Arm's FVP scripts decode
`debug_buffer.bin` beside `etdump.bin`). The ETDump's debug events say, for each tensor, its dtype,
sizes and the offset where its bytes start here; the bytes are dense (elements x element size).
The file has no header: its size is the buffer the runtime was given, used or not.

The file is memory-mapped, never read whole (a debug buffer of a large model can be hundreds of
MB); only the tensors compared are paged in. A tensor whose bytes do not fit (an offset or size
from another run, a truncated file) is refused with `PteFormatError` naming it: the caller turns
that into a problem on the view.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pte_adapter.container import files
from pte_adapter.container.etdump import TensorRef
from pte_adapter.errors import LimitExceededError, PteFormatError

# The largest debug buffer mapped. A runtime is given one buffer for a whole run; 4 GiB is more
# than a device running ExecuTorch has.
MAX_FILE_BYTES: Final = 4 << 30
# Elements of one logged tensor (a product of sizes from a file is checked before it is used).
MAX_ELEMENTS: Final = 1 << 32


@dataclass(frozen=True)
class DebugBuffer:
    name: str  # the file's name, for messages
    data: memoryview  # the whole file, memory-mapped (read-only)

    @property
    def size(self) -> int:
        return len(self.data)

    def tensor_bytes(self, ref: TensorRef, element_size: int) -> memoryview:
        """The bytes of one logged tensor (a zero-copy view). Raises `PteFormatError` when they
        do not lie inside the buffer."""
        numel = elements(ref)
        nbytes = numel * element_size
        if nbytes == 0:
            # Nothing was copied: the runtime logs an empty tensor (batch norm's unused saved
            # statistics, say) with offset -1.
            return self.data[0:0]
        if ref.offset < 0 or ref.offset + nbytes > self.size:
            raise PteFormatError(
                f"its {nbytes} bytes at offset {ref.offset} lie outside the {self.size}-byte "
                "debug buffer",
                part=self.name,
            )
        return self.data[ref.offset : ref.offset + nbytes]


def elements(ref: TensorRef) -> int:
    """The number of elements of a logged tensor; `PteFormatError` for a negative size or more
    than MAX_ELEMENTS."""
    numel = 1
    for size in ref.sizes:
        if size < 0:
            raise PteFormatError(f"a logged tensor has a negative size: {list(ref.sizes)}")
        numel *= size
        if numel > MAX_ELEMENTS:
            raise LimitExceededError(
                f"a logged tensor of {list(ref.sizes)}: more than {MAX_ELEMENTS} elements"
            )
    return numel


def load_debug_buffer(path: str | Path, inside: Path | None = None) -> DebugBuffer:
    """The debug buffer at `path`: a regular file (inside the folder `inside`, when given) of at
    most MAX_FILE_BYTES, memory-mapped (`container/files.py`: checked before a byte is read)."""
    path = Path(path)
    with files.open_regular(path, path.name, inside) as f:
        size = files.regular_size(f)
    if size > MAX_FILE_BYTES:
        raise LimitExceededError(f"{size} bytes (limit {MAX_FILE_BYTES}): not read", part=path.name)
    data = files.map_regular(path, path.name, inside)
    if len(data) > MAX_FILE_BYTES:  # it grew in between
        raise LimitExceededError(
            f"more than {MAX_FILE_BYTES} bytes (limit {MAX_FILE_BYTES}): not read", part=path.name
        )
    return DebugBuffer(path.name, data)
