"""ExecuTorch's Inspector reading the example ETDumps, and where the adapter draws each instruction.

The profile tests (unit, oracle, e2e) compare the adapter's measured times with Inspector's reading
of the same `.etdp`, keyed by the node id the renderer gives each instruction.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pte_adapter


def node_ids(path: Path, method: str = "forward") -> list[str]:
    """The renderer's node id of each instruction of `method` (its role id)."""
    from pte_adapter.analysis.partitions import partition_method
    from pte_adapter.analysis.roles import instruction_role_ids

    m = next(m for m in pte_adapter.load(path).methods if m.name == method)
    return instruction_role_ids(m, partition_method(m))


@cache
def inspector(etdump: Path) -> Any:
    """ExecuTorch's Inspector on `etdump` (read once per session; tests only read it)."""
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Output Buffer not found": no debug buffer is kept
        return Inspector(etdump_path=str(etdump))
