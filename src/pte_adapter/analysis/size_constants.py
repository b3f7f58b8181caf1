"""Constants, one entry each, for `pte-adapter size`: the program's constant buffers (made by
`size.py` while it lays out the file) and the constants inside delegate payloads, found in the
decoded delegate graphs."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import Program
from pte_adapter.wording import shape_text


@dataclass
class ConstantEntry:
    """One constant buffer of the program and the tensors/instructions that use it."""

    name: str
    nbytes: int  # bytes of tensor data (the buffer's alignment padding is not counted)
    where: str  # "constant_segment[3]", "inline constant_buffer[2]", "mutable_segment 0[1]"
    offset: int | None
    tensors: list[str]  # "forward value 12: [32, 3, 3, 3] int8"
    readers: list[str]  # "forward #3 aten::convolution.out"
    owner: str = "program"  # or the delegate that holds it: "forward delegate 1 (EthosUBackend)"


def delegate_constants(program: Program) -> list[ConstantEntry]:
    """Constants inside delegate payloads, from the decoded delegate graphs: each operation's own
    constant streams (an Ethos-U operation's weights and scales) and each constant tensor (XNNPACK,
    TOSA, VGF) with the operations that read it. Views from side files are not the payload's."""
    # Delegates that share a payload share its decoded graphs (`api.decode_all`): their constants
    # are the same bytes, listed once under the first of them.
    owners: dict[tuple[int, ...], list[str]] = {}
    graphs: dict[tuple[int, ...], list[DelegateGraph]] = {}
    for m in program.methods:
        for d in m.delegates:
            mine = [g for g in d.decoded.graphs if g.from_payload]
            key = tuple(id(g) for g in mine)
            owners.setdefault(key, []).append(f"{m.name} delegate {d.index} ({d.id})")
            graphs.setdefault(key, mine)
    out: list[ConstantEntry] = []
    for key, names in owners.items():
        owner = names[0]
        if len(names) > 1:
            owner += f" and {len(names) - 1} more delegates sharing its payload"
        for g in graphs[key]:
            out.extend(_graph_constants(g, owner))
    return out


def _graph_constants(g: DelegateGraph, owner: str) -> list[ConstantEntry]:
    out: list[ConstantEntry] = []
    readers: dict[str, list[str]] = defaultdict(list)
    for node in g.nodes:
        if node.constant_bytes:
            out.append(
                ConstantEntry(
                    f"{node.label} weights and scales",
                    node.constant_bytes,
                    "weight_data",
                    None,
                    [],
                    [node.id],
                    owner,
                )
            )
        for tid in dict.fromkeys(node.inputs):
            readers[tid].append(f"{node.label} {node.id}")
    for t in g.tensors.values():
        if not t.constant_bytes:
            continue
        shape = shape_text(t.shape or [])
        out.append(
            ConstantEntry(
                f"{t.name or t.id}: {shape} {t.dtype}",
                t.constant_bytes,
                t.attrs.get("data", g.name),  # where it is stored, as the decoder words it
                None,
                [],
                readers.get(t.id, []),
                owner,
            )
        )
    return out
