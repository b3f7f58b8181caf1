"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.api import open_analysis
from pte_adapter.backends import for_file
from pte_adapter.render.model_explorer import program_graphs
from pte_adapter.render.payload_file import payload_file_graphs
from pte_adapter.render.profile_attrs import annotate_graphs


def convert_path(path: str | Path) -> list[gb.Graph]:
    p = Path(path)
    backend = for_file(p.suffix)
    if backend is not None:
        return payload_file_graphs(p, backend)
    result = open_analysis(p)
    graphs = program_graphs(result)
    # Measured time from the ETDump beside the program (render/profile_attrs.py).
    annotate_graphs(graphs, result)
    return graphs
