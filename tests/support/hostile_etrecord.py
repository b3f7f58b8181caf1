"""The hostile corpus's cases of the ETRecord's graphs (issue 45): what Model Explorer opens when
it is given an ETRecord, and what `pte-adapter sync` walks. Registered in `hostile.py`'s `CASES`
(which imports this module) like its own; built on its Arm example and ETRecord helpers."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.support.hostile import _copy_arm, _etrecord_parts, _write_etrecord, case


@case
def case_etrecord_names_repeated(folder: Path, scale: int) -> Path:
    """5 x scale edge nodes named alike: ids a mapping cannot address (refused in one line)."""
    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    nodes = edge["graph_module"]["graph"]["nodes"]
    for node in nodes[: 5 * scale]:
        node["outputs"] = [{"as_tensor": {"name": "same"}}]
    _write_etrecord(pte, handles, edge)
    return pte


@case
def case_etrecord_provenance_bomb(folder: Path, scale: int) -> Path:
    """An exported program recorded beside the edge program, and an edge node's `from_node` a
    chain 2000 x scale levels deep: what `sync` walks to carry debug handles back."""
    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    depth = 2000 * scale
    text = '[{"name": "n", "graph_id": 0, "from_node": ' * depth + "[]" + "}]" * depth
    edge["graph_module"]["graph"]["nodes"][0]["metadata"]["from_node"] = text
    _write_etrecord(pte, handles, edge)
    with zipfile.ZipFile(pte.with_suffix(".etrecord"), "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("exported_program", json.dumps(edge))
    return pte
