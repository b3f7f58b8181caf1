"""A bare payload file (a `.tosa`) shown as graphs, one per block, in its backend's colour."""

from __future__ import annotations

from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.backends import Backend
from pte_adapter.delegates import hooks
from pte_adapter.render.model_explorer import build_graphs
from pte_adapter.render.plan.program import views_plan


def payload_file_graphs(path: Path, backend: Backend) -> list[gb.Graph]:
    """The graphs of a file in `backend`'s payload format (its `file_reader` hook)."""
    views = hooks.read_file(backend, path)  # a PteFormatError naming the file, never another
    return build_graphs(views_plan(views, backend.colour))
