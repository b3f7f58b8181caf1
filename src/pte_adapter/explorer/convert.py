"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.api import open_analysis
from pte_adapter.backends import for_file
from pte_adapter.render.model_explorer import program_graphs
from pte_adapter.render.payload_file import payload_file_graphs


def convert_path(path: str | Path) -> list[gb.Graph]:
    """A program's graphs, with the measured time of the ETDump beside it; a bare payload file's
    (a `.tosa`) graphs."""
    p = Path(path)
    backend = for_file(p.suffix)
    if backend is not None:
        return payload_file_graphs(p, backend)
    return program_graphs(open_analysis(p))
