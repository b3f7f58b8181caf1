"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from model_explorer import graph_builder as gb

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


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while the graphs are made, then as it was.

    A conversion allocates a few hundred objects per instruction and frees none of them until it
    ends, and almost none form cycles; each collection walks every object alive, so with it running
    a third to a half of the conversion went into collections that found nothing (issue 25). What
    is freed is freed by reference counting as before; the collector runs again after, what is
    left alive moved to its oldest generation (`_to_oldest_generation`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _to_oldest_generation()
            gc.enable()


def _to_oldest_generation() -> None:
    """Move what the conversion left alive to the collector's oldest generation, as it is.

    Left young, the graphs were walked by the first collection after the pause (allocations had
    counted up all along: it came at once) and again on their way to the oldest generation: 12-20
    ms on a 48-layer XNNPACK program, 3-5 % of its conversion. `freeze` then `unfreeze` moves
    every tracked object of the process there by splicing lists, without walking them, and
    restarts the young count; the next full collection looks at them as at any old object. Only
    when nothing else is frozen: `unfreeze` would release another's frozen objects too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


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
