"""pte_adapter: open an ExecuTorch `.pte` and show everything inside it.

import pte_adapter
program = pte_adapter.load("model.pte")       # typed model, delegates decoded
result = pte_adapter.analyse(program)         # partitions, layers, reasons, estimates, once
numbers = pte_adapter.summarize(program)      # what `pte-adapter summary --json` prints
pte_adapter.report("model.pte").save("report.html")   # one self-contained HTML file
pte_adapter.visualize("model.pte")            # it and its ETRecord side by side, synced
gap = pte_adapter.open_analysis("int8.pte", numerics=pte_adapter.NumericsOptions(
    reference=Path("float.pte"))).numerics       # the numeric gap of a recorded run
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a block makes many objects and frees almost none,
    then as it was; here because the package's own import is the first such block.

    A conversion allocates a few hundred objects per instruction and frees none of them until it
    ends, and almost none form cycles; each collection walks every object alive, so with it running
    a third to a half of the conversion went into collections that found nothing (issue 25); an
    import is the same (a sixth of the package's, issue 49). What is freed is freed by reference
    counting as before; the collector runs again after, what is left alive moved to its oldest
    generation (`_to_oldest_generation`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _to_oldest_generation()
            gc.enable()


def _to_oldest_generation() -> None:
    """Move what the block left alive to the collector's oldest generation, as it is.

    Left young, the graphs were walked by the first collection after the pause (allocations had
    counted up all along: it came at once) and again on their way to the oldest generation: 12-20
    ms on a 48-layer XNNPACK program, 3-5 % of its conversion. `freeze` then `unfreeze` moves
    every tracked object of the process there by splicing lists, without walking them, and
    restarts the young count; the next full collection looks at them as at any old object. Only
    when nothing else is frozen: `unfreeze` would release another's frozen objects too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


with no_cycle_collection():
    from pte_adapter.api import (
        Report,
        Summary,
        analyse,
        load,
        load_bytes,
        open_analysis,
        report,
        summarize,
    )
    from pte_adapter.errors import PteFormatError

if TYPE_CHECKING:
    from pte_adapter.api import NumericsOptions
    from pte_adapter.explorer.visualize import Visualization


def __getattr__(name: str) -> Any:
    """`NumericsOptions`, imported on first use with the numeric gap's modules (`api/numerics.py`):
    a program opened without them does not pay for them (issue 49)."""
    if name == "NumericsOptions":
        from pte_adapter.api import NumericsOptions

        globals()[name] = NumericsOptions
        return NumericsOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = [
    "NumericsOptions",
    "PteFormatError",
    "Report",
    "Summary",
    "__version__",
    "analyse",
    "load",
    "load_bytes",
    "open_analysis",
    "report",
    "summarize",
    "visualize",
]


def visualize(program: str | Path, **options: Any) -> Visualization:
    """The program and its ETRecord side by side in Model Explorer, synced: select a node on one
    side and what it became (or came from) is selected on the other (`explorer/visualize.py`;
    options: `etrecord`, `to`, `method`, `host`, `port`, `open_browser`, `block`). Needs Model
    Explorer only, never torch."""
    from pte_adapter.explorer.visualize import visualize as run

    return run(program, **options)
