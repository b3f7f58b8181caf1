"""The ETRecord's graphs as the adapter reads them (torch-free) are the graphs torch rebuilds.

For every example ETRecord (`examples/*.etrecord`, `*_etrecord.bin`) and every graph in it (the
exported program, the edge program, each graph-map entry), the nodes of
`container/etrecord_graphs.py` are ExecuTorch's `parse_etrecord`'s FX nodes: the same names in the
same order, the same kinds (placeholder, call_function, get_attr, output), the same operators, the
same debug handles, and every edge: the nodes each node reads.

One difference is allowed, and checked to be only that: an operator torch cannot find when it
reads the file (a backend's custom operator whose library is not loaded, `cortex_m::` here) gets
a made-up target and name from ExecuTorch's deserializer; the adapter keeps the recorded ones.
"""

from __future__ import annotations

import logging
import operator
import warnings
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.container.etrecord_graphs import read_etrecord_graphs
from tests.support.examples import EXAMPLES

ETRECORDS = sorted([*EXAMPLES.glob("*.etrecord"), *EXAMPLES.glob("*_etrecord.bin")])


def _torch_graphs(path: Path) -> list[tuple[str, Any]]:
    from executorch.devtools.etrecord import parse_etrecord

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            record = parse_etrecord(str(path))
        finally:
            logging.disable(logging.NOTSET)
    out = []
    if record.exported_program is not None:
        out.append(("exported_program", record.exported_program))
    edge = record.edge_dialect_program
    for method, ep in edge.items() if isinstance(edge, dict) else [("forward", edge)]:
        out.append((f"edge_dialect_exported_program/{method}", ep))
    out += list((record.graph_map or {}).items())
    return out


def _target(node: Any) -> str | None:
    """torch's operator in the adapter's spelling; None for one torch could not find."""
    t = node.target
    if node.op != "call_function":
        return None
    if t is operator.getitem:
        return "getitem"
    name = getattr(t, "__name__", "")
    if name == "fake_op" or name.startswith("torch.ops."):  # ExecuTorch's stand-in
        return None
    if type(t).__name__ == "EdgeOpOverload":
        return str(t.__name__)
    if type(t).__name__ in ("OpOverload", "HigherOrderOperator") or "higher_order" in str(type(t)):
        text = str(t)
        return text if type(t).__name__ == "OpOverload" else f"higher_order.{t.name()}"
    if getattr(t, "__module__", "") == "executorch.exir.memory":
        return f"memory.{name}"
    return name


@pytest.mark.parametrize("path", ETRECORDS, ids=lambda p: p.name)
def test_graphs_are_torchs(path: Path) -> None:
    ours = read_etrecord_graphs(path)
    theirs = _torch_graphs(path)
    assert [
        g.part.replace("edge_dialect_exported_program", "edge_dialect_exported_program/forward", 1)
        if g.part == "edge_dialect_exported_program"
        else g.part
        for g in ours.graphs
    ] == [p for p, _ in theirs]
    made_up = 0
    for graph, (part, ep) in zip(ours.graphs, theirs, strict=True):
        fx = list(ep.graph_module.graph.nodes)
        assert len(graph.nodes) == len(fx), part
        names: dict[str, str] = {}  # torch's name -> ours, where torch made one up
        for mine, node in zip(graph.nodes, fx, strict=True):
            assert mine.op == node.op, (part, mine.name, node.name)
            expected = _target(node)
            if node.op == "call_function" and expected is None:
                made_up += 1
                names[node.name] = mine.name
                continue
            assert mine.name == node.name, part
            if expected is not None:
                assert mine.target == expected, (part, mine.name)
            handle = node.meta.get("debug_handle")
            if node.op == "call_function" and mine.target != "getitem":
                assert mine.debug_handle == (handle if isinstance(handle, int) else None), (
                    part,
                    mine.name,
                )
        for mine, node in zip(graph.nodes, fx, strict=True):
            reads = [names.get(a.name, a.name) for a in node.all_input_nodes]
            assert list(dict.fromkeys(mine.args)) == reads, (part, mine.name)
    # Made-up names only where torch lacks the operator (the Arm bundle's cortex_m kernels).
    assert made_up == 0 or path.name == "bundle_ethosu55_etrecord.bin"
