"""The hostile corpus's ETRecord cases: the program's ETRecord bent (one handle repeated, JSON
bloat) as the numeric gap and the mapping read it (issue 44), and the ETRecord's graphs as Model
Explorer opens them and `pte-adapter sync` walks them (issue 45). Registered in `hostile.py`'s
`CASES` (which imports this module) like its own; built on its Arm example and ETRecord helpers."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.support.examples import EXAMPLES
from tests.support.hostile import (
    ARM,
    _copy_arm,
    _etrecord_parts,
    _rewrite_zip,
    _write_etrecord,
    case,
)


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


@case
def case_etrecord_one_handle(folder: Path, scale: int) -> Path:
    """The ETRecord's first delegate call lists one handle 1500 x scale times, and as many edge
    nodes carry it (the join was handles x nodes)."""
    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    n = 1500 * scale
    handles["forward"]["1"] = [5] * n
    nodes = edge["graph_module"]["graph"]["nodes"]
    carrier = next(x for x in nodes if x["metadata"].get("debug_handle") == "5")
    nodes += [{**carrier, "name": f"{carrier['name']}_{i}"} for i in range(n)]
    _write_etrecord(pte, handles, edge)
    return pte


@case
def case_etrecord_handle_repeated(folder: Path, scale: int) -> Path:
    """One handle listed 100,000 x scale times by one instruction, 900 nodes carrying it (under
    the per-handle cap: only deduplication keeps this linear)."""
    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    handles["forward"]["1"] = [5] * (100_000 * scale)
    nodes = edge["graph_module"]["graph"]["nodes"]
    carrier = next(x for x in nodes if x["metadata"].get("debug_handle") == "5")
    nodes += [{**carrier, "name": f"{carrier['name']}_{i}"} for i in range(900)]
    _write_etrecord(pte, handles, edge)
    return pte


@case
def case_etrecord_json_bloat(folder: Path, scale: int) -> Path:
    """An edge-program part padded with 500,000 x scale empty lists (a few KB zipped)."""
    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    edge["padding"] = [[]] * (500_000 * scale)
    _write_etrecord(pte, handles, edge)
    return pte


@case
def case_etrecord_json_values(folder: Path, scale: int) -> Path:
    """An edge-program part padded with 400,000 x scale small numbers: inflating only a few times
    (so the inflation cap lets it through), with a value per two bytes (10 x: over the value cap)."""
    import random

    pte = _copy_arm(folder)
    handles, edge = _etrecord_parts()
    digits = random.Random(33).choices("0123456789", k=400_000 * scale)
    text = json.dumps(edge)[:-1] + ', "padding": [' + ",".join(digits) + "]}"
    parts = {
        "debug_handle_map": json.dumps(handles).encode(),
        "edge_dialect_exported_program/forward": text.encode(),
    }
    _rewrite_zip(EXAMPLES / f"{ARM}.etrecord", pte.with_suffix(".etrecord"), parts)
    return pte
