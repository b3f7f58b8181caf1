"""Path -> Model Explorer graphs, for the adapter and the `export` command alike."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from model_explorer import graph_builder as gb

from pte_adapter.api import open_analysis
from pte_adapter.backends import for_file
from pte_adapter.delegates.arm.artifacts import is_folder_inside, spec_folders
from pte_adapter.render.model_explorer import program_graphs
from pte_adapter.render.payload_file import payload_file_graphs


def convert_path(path: str | Path) -> list[gb.Graph]:
    """A program's graphs, with the measured time of the ETDump beside it; a bare payload file's
    (a `.tosa`) graphs."""
    return convert_with_folders(Path(path))[0]


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while the graphs are made, then as it was.

    A conversion allocates a few hundred objects per instruction and frees none of them until it
    ends, and almost none form cycles; each collection walks every object alive, so with it running
    a third to a half of the conversion went into collections that found nothing (issue 25). What
    is freed is freed by reference counting as before; the collector runs again after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def convert_with_folders(path: Path) -> tuple[list[gb.Graph], tuple[Path, ...]]:
    """`convert_path`'s graphs and the folders, other than the file's own and those directly in
    it, that its delegates' debug artifacts were looked for in (the cache watches them too)."""
    with no_cycle_collection():
        return _convert(path)


def _convert(path: Path) -> tuple[list[gb.Graph], tuple[Path, ...]]:
    backend = for_file(path.suffix)
    if backend is not None:
        return payload_file_graphs(path, backend), ()
    result = open_analysis(path)
    folders: dict[Path, None] = {}
    for method in result.program.methods:
        for delegate in method.delegates:
            for folder in spec_folders(path, delegate.spec("debug_artifact_path")):
                if is_folder_inside(folder, path.parent):  # the only ones read
                    folders[folder] = None
    return program_graphs(result), tuple(folders)
