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
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Importing the package makes tens of thousands of objects and frees almost none, so the cycle
# collector's runs meanwhile find nothing: paused (a sixth of the import, 15 ms; issue 49), then
# what was made joins its oldest generation without a walk, as after a conversion
# (`explorer/convert.py: no_cycle_collection`, which `main.py` uses for the rest).
_collecting = gc.isenabled()
gc.disable()
try:
    from pte_adapter.api import (
        NumericsOptions,
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
finally:
    if _collecting:
        if gc.get_freeze_count() == 0:  # `unfreeze` would release another's frozen objects
            gc.freeze()
            gc.unfreeze()
        gc.enable()
del _collecting

if TYPE_CHECKING:
    from pte_adapter.explorer.visualize import Visualization

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
