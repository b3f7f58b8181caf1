"""Boards as data, the user's own sizes, and whether a deployment map fits.

The board presets are the Corstone FVPs Arm's ExecuTorch examples run on, with the memory map of
the linker scripts of Arm's bare-metal runner in ExecuTorch (github.com/pytorch/executorch, main
at commit cff6f4dd32e630945b7188512c1f2b4f102b05ad, version.txt 1.5.0, the line the pinned
executorch 1.5.1 was released from):

- examples/arm/executor_runner/Corstone-300.ld (Ethos-U55/U65 builds): `SRAM (rw) : ORIGIN =
  0x31000000, LENGTH = 0x00200000` and `DDR (rwx) : ORIGIN = 0x70000000, LENGTH = 0x60000000`;
- examples/arm/executor_runner/Corstone-320.ld (Ethos-U85 builds): `SRAM (rw) : ORIGIN =
  0x31000000, LENGTH = 0x00400000` and `DDR (rw) : ORIGIN = 0x70000000, LENGTH = 0x10000000`.

Both put the program (`network_model_sec`) and the method allocator pool in DDR, the temp
allocator (`.bss.tensor_arena`) in SRAM for Shared_Sram and Sram_Only and in DDR for
Dedicated_Sram (backends/arm/scripts/corstone_utils.cmake), the fast scratch
(`.bss.ethosu_scratch`) and the planned fast memory (`.fast_memory`) in SRAM. Their QSPI flash is
not used by the runner, so a preset has no flash: what the map puts in flash goes to DDR, where
the runner puts the program.

A board's regions are "sram", "dram" and "flash"; a map region the board lacks goes to the next
one that can hold it: flash to DRAM, then SRAM; DRAM to SRAM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from pte_adapter.analysis.deployment import REGION_NAMES, DeploymentMap
from pte_adapter.backends import ARM_RUNNER, Runner
from pte_adapter.program.delegate_graph import DRAM, OFF_CHIP_FLASH, ON_CHIP_FLASH, SRAM
from pte_adapter.wording import bytes_short

FLASH = "flash"
BOARD_REGIONS = (SRAM, DRAM, FLASH)
BOARD_REGION_NAMES = {SRAM: "SRAM", DRAM: "DRAM", FLASH: "flash"}
# Map region -> the board regions that may hold it, first choice first.
HOMES = {
    SRAM: (SRAM,),
    DRAM: (DRAM, SRAM),
    ON_CHIP_FLASH: (FLASH, DRAM, SRAM),
    OFF_CHIP_FLASH: (FLASH, DRAM, SRAM),
}
_SOURCE = (
    "ExecuTorch examples/arm/executor_runner/{ld} (commit cff6f4dd32e6, version 1.5.0): "
    "SRAM LENGTH {sram:#x}, DDR LENGTH {dram:#x}"
)


@dataclass(frozen=True)
class Board:
    name: str
    regions: dict[str, int]  # "sram", "dram", "flash" -> bytes
    source: str
    # The runner whose pools a program without one of its own is mapped with on this board (the
    # Corstone presets: Arm's; the user's own sizes: Arm's too).
    runner: Runner = ARM_RUNNER


BOARDS = {
    "corstone-300": Board(
        "corstone-300",
        {SRAM: 0x00200000, DRAM: 0x60000000},
        _SOURCE.format(ld="Corstone-300.ld", sram=0x00200000, dram=0x60000000),
    ),
    "corstone-320": Board(
        "corstone-320",
        {SRAM: 0x00400000, DRAM: 0x10000000},
        _SOURCE.format(ld="Corstone-320.ld", sram=0x00400000, dram=0x10000000),
    ),
}

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
MAX_SIZE = 2**64  # bytes: a 64-bit address space
_SIZE = re.compile(r"\s*(0x[0-9a-fA-F]+|\d+(?:\.\d+)?|\.\d+)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes from `64KiB`, `2MiB`, `1.5MB` (KB, MB, GB: powers of 1000; KiB, MiB, GiB and K, M,
    G: powers of 1024), `0x200000` or plain bytes. Raises ValueError saying what is accepted."""
    m = _SIZE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS or (m.group(1).startswith("0x") and unit):
        raise ValueError(
            f"size {text!r} is not understood: give bytes (65536, 0x10000) or a number with a "
            "unit (64KiB, 2MiB, 1.5MB)"
        )
    number = m.group(1)
    shown = repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"
    too_large = ValueError(f"size {shown} is more than {MAX_SIZE} bytes (16 EiB): no memory is")
    if len(number.partition(".")[0]) > 40:  # Python parses no more than 4,300 digits anyway
        raise too_large
    if len(number) > 80:
        raise ValueError(f"size {shown} has more digits than a size in bytes needs")
    # Exact: a float would round a size past 2^53 (and overflow past 10^308).
    value = int(number, 16) if number.startswith("0x") else Fraction(number) * _UNITS[unit]
    if value.denominator != 1:
        raise ValueError(f"size {shown} is not a whole number of bytes")
    if value > MAX_SIZE:
        raise too_large
    return int(value)


def board_for(name: str | None, sizes: dict[str, int | None]) -> Board | None:
    """The board to check against: a preset, the user's sizes overriding (or replacing) its
    regions; None when neither is given. Raises ValueError naming the known boards."""
    given = {k: v for k, v in sizes.items() if v is not None}
    if name is None:
        if not given:
            return None
        return Board("your sizes", given, "given on the command line")
    board = BOARDS.get(name.lower())
    if board is None:
        raise ValueError(f"unknown board {name!r}; known boards: {', '.join(sorted(BOARDS))}")
    if not given:
        return board
    return Board(
        board.name,
        {**board.regions, **given},
        board.source + "; overridden: " + ", ".join(f"{k} {v}" for k, v in given.items()),
    )


@dataclass(frozen=True)
class RegionFit:
    region: str  # a board region
    capacity: int
    used: int  # exact figures only
    estimated: int  # estimated figures placed here beside them (not in `used`)
    items: tuple[tuple[str, str, int], ...]  # (key, map region, bytes), exact and estimated

    @property
    def overflow(self) -> int:
        return max(self.used - self.capacity, 0)


@dataclass
class FitResult:
    board: Board
    regions: list[RegionFit]
    unplaced: list[str] = field(default_factory=list)  # map items the board has no room kind for

    @property
    def ok(self) -> bool:
        return not self.unplaced and all(r.overflow == 0 for r in self.regions)

    def overflows(self) -> list[str]:
        """One line per region that overflows: by how much, and what is in it."""
        lines = list(self.unplaced)
        for r in self.regions:
            if r.overflow:
                what = ", ".join(f"{k} {n}" for k, _, n in r.items)
                lines.append(
                    f"{BOARD_REGION_NAMES[r.region]} overflows by {r.overflow} bytes "
                    f"({bytes_short(r.overflow)}): {r.used} bytes needed, {r.capacity} on "
                    f"{self.board.name} ({what})"
                )
        return lines


def fit(dmap: DeploymentMap, board: Board) -> FitResult:
    """Place every item of the map in the board's regions and compare with their sizes."""
    placed: dict[str, list[tuple[str, str, int, bool]]] = {r: [] for r in board.regions}
    unplaced = []
    for item in dmap.items:
        home = next((r for r in HOMES[item.region] if r in board.regions), None)
        if home is None:
            unplaced.append(
                f"{item.what} ({item.bytes} bytes, {REGION_NAMES[item.region]}): "
                f"{board.name} has no memory for it"
            )
            continue
        placed[home].append((item.key, item.region, item.bytes, item.exact))
    regions = [
        RegionFit(
            r,
            board.regions[r],
            sum(n for _, _, n, exact in placed[r] if exact),
            sum(n for _, _, n, exact in placed[r] if not exact),
            tuple((k, mr, n) for k, mr, n, _ in placed[r]),
        )
        for r in BOARD_REGIONS
        if r in board.regions
    ]
    return FitResult(board, regions, unplaced)
