"""pte_adapter: open an ExecuTorch `.pte` and show everything inside it.

import pte_adapter
program = pte_adapter.load("model.pte")       # typed model, delegates decoded
result = pte_adapter.analyse(program)         # partitions, layers, reasons, estimates, once
numbers = pte_adapter.summarize(program)      # what `pte-adapter summary --json` prints
pte_adapter.report("model.pte").save("report.html")   # one self-contained HTML file
gap = pte_adapter.open_analysis("int8.pte", numerics=pte_adapter.NumericsOptions(
    reference=Path("float.pte"))).numerics       # the numeric gap of a recorded run
"""

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
]
