"""A bare payload file (a `.tosa`) shown as graphs, one per block, in its backend's colour."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.backends import Backend
from pte_adapter.delegates.registry import hook
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.render.model_explorer import build_graphs
from pte_adapter.render.plan.program import views_plan


def payload_file_graphs(path: Path, backend: Backend) -> list[gb.Graph]:
    """The graphs of a file in `backend`'s payload format (its `file_reader` hook)."""
    assert backend.file_reader is not None
    try:
        views: list[DelegateGraph] = hook(backend.file_reader)(path)
    except OSError as e:  # missing, a folder, unreadable: the same error a .pte gives
        raise PteFormatError(f"cannot open: {e.strerror or e}", part=str(path)) from e
    return build_graphs(views_plan(views, backend.colour))
