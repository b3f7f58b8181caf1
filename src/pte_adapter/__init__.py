"""pte_adapter: open an ExecuTorch `.pte` and show everything inside it.

import pte_adapter
program = pte_adapter.load("model.pte")       # typed model, delegates decoded
"""

from pte_adapter.api import load, load_bytes
from pte_adapter.errors import PteFormatError

__version__ = "0.1.0"
__all__ = ["PteFormatError", "__version__", "load", "load_bytes"]
