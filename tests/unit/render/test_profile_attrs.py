"""Measured time on the Model Explorer graphs of a `.pte` with its ETDump beside it.

Expected values: ExecuTorch's Inspector over the same `.etdp`. A corrupt or foreign ETDump must
not stop the `.pte` from opening."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.plan.measured import PROBLEM_KEY
from tests.support.examples import EXAMPLES
from tests.support.groups import group_names
from tests.support.profiles import inspector, node_ids


@cache
def _perf(stem: str) -> dict[tuple[str, int], list[float]]:
    ins = inspector(EXAMPLES / f"{stem}.etdp")
    out: dict[tuple[str, int], list[float]] = {}
    for b in ins.event_blocks:
        for e in b.events:
            if e.perf_data is not None and not e.is_delegated_op:
                out.setdefault((e.name, e._instruction_id), []).extend(e.perf_data.raw)
    return out


def _forward(path: Path) -> Any:
    return next(g for g in convert_path(path) if g.id == "forward")


def _attrs(node: Any) -> dict[str, str]:
    return {a.key: a.value for a in node.attrs}


def test_xnnpack_partition_and_method_attributes() -> None:
    g = _forward(EXAMPLES / "mv2_xnnpack_int8.pte")
    perf = _perf("mv2_xnnpack_int8")
    call = perf[("DELEGATE_CALL", 0)]
    nodes = {n.id: n for n in g.nodes}
    attrs = _attrs(nodes[node_ids(EXAMPLES / "mv2_xnnpack_int8.pte")[0]])
    assert attrs["measured median"] == f"{np.median(call):.3f} ms"
    assert attrs["measured min / max"] == f"{min(call):.3f} / {max(call):.3f} ms"
    assert attrs["measured runs"] == f"{len(call)} runs, {len(call)} calls"
    group = g.groupNodeAttributes[group_names(EXAMPLES / "mv2_xnnpack_int8.pte")["forward"][0]]
    assert group["measured time"].startswith(f"median {np.median(call):.3f} ms")
    assert "operators logged" in group["measured inside the delegate"]
    execute = perf[("Method::execute", 0)]
    top = g.groupNodeAttributes[""]
    assert top["measured latency"].startswith(f"median {np.median(execute):.3f} ms")
    assert top["measured split"].startswith("delegates ")
    assert top["measured profile"] == f"mv2_xnnpack_int8.etdp, {len(execute)} runs"


def test_every_profiled_instruction_has_attributes() -> None:
    g = _forward(EXAMPLES / "undelegated.pte")
    perf = _perf("undelegated")
    nodes = {n.id: n for n in g.nodes}
    ops = {iid: v for (name, iid), v in perf.items() if name == "OPERATOR_CALL"}
    ids = node_ids(EXAMPLES / "undelegated.pte")
    assert len(ops) == 25
    for iid, values in ops.items():
        assert _attrs(nodes[ids[iid]])["measured median"] == f"{np.median(values):.3f} ms"
    assert (
        "measured time"
        in g.groupNodeAttributes[group_names(EXAMPLES / "undelegated.pte")["forward"][0]]
    )


def test_no_etdump_adds_nothing() -> None:
    g = _forward(EXAMPLES / "mv2_ethosu55.pte")
    assert not any(a.key.startswith("measured") for n in g.nodes for a in n.attrs)
    assert not any(k.startswith("measured") for k in g.groupNodeAttributes[""])


def test_bad_or_foreign_etdump_never_stops_the_pte(tmp_path: Path) -> None:
    pte = tmp_path / "undelegated.pte"
    shutil.copy(EXAMPLES / "undelegated.pte", pte)
    etdp = tmp_path / "undelegated.etdp"
    etdp.write_bytes((EXAMPLES / "undelegated.etdp").read_bytes()[:200])
    g = _forward(pte)
    assert len(g.nodes) > 25
    assert "undelegated.etdp" in g.groupNodeAttributes[""][PROBLEM_KEY]
    shutil.copy(EXAMPLES / "mv2_xnnpack_fp32.etdp", etdp)
    g = _forward(pte)
    assert "another program" in g.groupNodeAttributes[""][PROBLEM_KEY]
    assert not any(a.key.startswith("measured ") for n in g.nodes for a in n.attrs)
