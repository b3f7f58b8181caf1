"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter import no_cycle_collection
from pte_adapter.analysis.program_analysis import ProgramAnalysis
from pte_adapter.api import open_analysis
from pte_adapter.api.sidefiles import ETRECORD_SUFFIXES
from pte_adapter.backends import for_file
from pte_adapter.delegates.registry import artifact_folders
from pte_adapter.render.model_explorer import build_graphs
from pte_adapter.render.payload_file import payload_file_graphs
from pte_adapter.render.plan.graph import ProgramPlan
from pte_adapter.render.plan.program import program_plan


@dataclass(frozen=True)
class Conversion:
    """What converting a file made: its graphs and, for a program, the analysis and the plan they
    were drawn from and the folders, other than the file's own and those directly in it, that its
    delegates name for their side files (`Backend.artifact_folders`; the adapter's cache watches
    them too)."""

    graphs: list[gb.Graph]
    folders: tuple[Path, ...] = ()
    analysis: ProgramAnalysis | None = None
    plan: ProgramPlan | None = None


def convert(
    path: Path, open_program: Callable[[Path], ProgramAnalysis] = open_analysis
) -> Conversion:
    """A program's graphs (opened and analysed by `open_program`: by default with the ETDump
    beside it, whose measured time goes on the graphs); a bare payload file's (a `.tosa`); an
    ETRecord's (`.etrecord`, or a `.bin` that is one: `api/etrecord_view.py`)."""
    with no_cycle_collection():
        return _convert(path, open_program)


def convert_path(path: str | Path) -> list[gb.Graph]:
    """The graphs `convert` makes of the file at `path`."""
    return convert_with_folders(Path(path))[0]


def convert_with_folders(path: Path) -> tuple[list[gb.Graph], tuple[Path, ...]]:
    """The graphs and the folders `convert` found (what the adapter's cache keeps and watches).

    The program, its analysis and the plan are let go before the collector runs again: the first
    collection after the pause walks every object the conversion left alive (issue 36)."""
    with no_cycle_collection():
        made = _convert(path, open_analysis)
        graphs, folders = made.graphs, made.folders
        del made
    return graphs, folders


def _convert(path: Path, open_program: Callable[[Path], ProgramAnalysis]) -> Conversion:
    backend = for_file(path.suffix)
    if backend is not None:
        return Conversion(payload_file_graphs(path, backend))
    if path.suffix in ETRECORD_SUFFIXES:  # imported here: a server opening programs never pays
        from pte_adapter.api.etrecord_view import open_etrecord_file
        from pte_adapter.render.plan.etrecord_graph import etrecord_plan

        return Conversion(build_graphs(etrecord_plan(open_etrecord_file(path))))
    result = open_program(path)
    plan = program_plan(result)
    return Conversion(build_graphs(plan.graphs), artifact_folders(result.program), result, plan)
