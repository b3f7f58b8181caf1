"""Where named data lives: the `.pte`'s own segments, or a `.ptd` file beside it.

Keys are looked up in the program's `named_data` first, then in every `.ptd` in the `.pte`'s folder
(ExecuTorch writes `<tag>.ptd` there). `.ptd` files are opened lazily and only memory-mapped, so a
folder of large weight files costs nothing until a key is asked for. Only that one folder is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pte_adapter.container.pte import PteFile, Span, map_file
from pte_adapter.errors import PteFormatError

if TYPE_CHECKING:  # the `.ptd` reader is imported when there is one beside the `.pte`
    from pte_adapter.container.ptd import PtdFile


@dataclass(frozen=True)
class Located:
    """Bytes found for a key, and where they came from."""

    data: memoryview
    source: str  # file name
    span: Span  # absolute, in `source`


class DataSources:
    def __init__(self, pte: PteFile, named: dict[str, int], folder: Path | None) -> None:
        self.pte = pte
        self.named = named  # key -> segment index in the .pte
        self.folder = folder
        self._ptds: list[PtdFile] | None = None
        self.ptd_problems: list[str] = []

    @property
    def ptd_files(self) -> list[PtdFile]:
        if self._ptds is None:
            self._ptds = []
            if self.folder is not None and self.folder.is_dir():
                for p in sorted(self.folder.glob("*.ptd")):
                    from pte_adapter.container.ptd import PtdFile

                    try:
                        self._ptds.append(PtdFile(map_file(p, inside=self.folder), p.name))
                    except (PteFormatError, OSError) as e:
                        self.ptd_problems.append(f"{p.name}: {e}")
        return self._ptds

    def searched(self) -> str:
        """A sentence for 'not found' messages: which files were searched."""
        names = [p.name for p in self.ptd_files]
        where = f"the .pte's named data and {len(names)} .ptd file(s) beside it"
        return f"{where} ({', '.join(names)})" if names else f"{where} (none found)"

    def find(self, key: str) -> Located | None:
        if key in self.named:
            idx = self.named[key]
            if 0 <= idx < len(self.pte.segments):
                span = self.pte.segments[idx]
                return Located(self.pte.view(span, f"named data {key!r}"), self.pte.name, span)
            raise PteFormatError(
                f"named data {key!r} points at segment {idx}; the program has "
                f"{len(self.pte.segments)} segments",
                part=self.pte.name,
            )
        for ptd in self.ptd_files:
            entry = ptd.entries.get(key)
            if entry is not None:
                return Located(ptd.view(entry.span, f"tensor {key!r}"), ptd.name, entry.span)
        return None

    def locate(self, key: str) -> tuple[str, Span] | None:
        """Where a key's bytes are, without touching them."""
        found = self.find(key)
        return None if found is None else (found.source, found.span)
