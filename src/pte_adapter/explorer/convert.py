"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.api import load
from pte_adapter.render.model_explorer import program_graphs


def convert_path(path: str | Path) -> list[gb.Graph]:
    p = Path(path)
    if p.suffix.lower() == ".tosa":
        from pte_adapter.render.tosa_file import tosa_file_graphs

        return tosa_file_graphs(p)
    program = load(p)
    graphs = program_graphs(program)
    etdump = p.with_suffix(".etdp")
    if etdump.is_file():
        # Measured time from the ETDump beside the program (render/profile_attrs.py).
        from pte_adapter.render.profile_attrs import annotate_graphs

        annotate_graphs(graphs, program, etdump)
    return graphs
