"""A bare `.tosa` file shown as graphs (one per block)."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.backends import backend_colour
from pte_adapter.errors import PteFormatError
from pte_adapter.render.model_explorer import delegate_graph


def tosa_file_graphs(path: Path) -> list[gb.Graph]:
    from pte_adapter.delegates.tosa import read_tosa_file

    try:
        views = read_tosa_file(path)
    except OSError as e:  # missing, a folder, unreadable: the same error a .pte gives
        raise PteFormatError(f"cannot open: {e.strerror or e}", part=str(path)) from e
    ids = {v.name: v.name for v in views}
    return [delegate_graph(v, v.name, ids, backend_colour("TOSABackend")) for v in views]
