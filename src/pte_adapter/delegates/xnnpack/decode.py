"""XNNPACK delegate payloads: `XH00` header + `XN01`/`XN00` FlatBuffer + optional constant data.

Layout (ExecuTorch `backends/xnnpack/serialization/xnnpack_graph_serialize.py`, little-endian):
  bytes 0-3   zero (so that `XH00` sits where a FlatBuffer's identifier would)
  bytes 4-7   `XH00`
  bytes 8-9   u16 header length (30)
  bytes 10-13 u32 FlatBuffer offset    bytes 14-17 u32 FlatBuffer size
  bytes 18-21 u32 constant data offset bytes 22-29 u64 constant data size
Older payloads are a bare FlatBuffer (identifier at bytes 4-7, no header).

The graph is read generically from tables generated out of the pinned schema
(`scripts/gen_xnnpack_tables.py`): every node kind's fields become attributes without a hand-written
case per kind, and a node kind newer than those tables still shows up (as `unknown_node_<tag>`).
Constant bytes are never read: only their size and where they live (a named key resolved to a `.pte`
segment or a `.ptd` file, or an offset inside the payload). The only exception is the first few
per-channel scales, which are small and say more than a count.
"""

from __future__ import annotations

import struct
from collections import Counter
from itertools import islice

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.xnnpack._generated.xnnpack_schema import (
    FILE_IDENTIFIER,
    RUNTIME_FILE_IDENTIFIER,
    TABLES,
    UNIONS,
)
from pte_adapter.delegates.xnnpack.records import (
    _GRAPH,
    _XVALUE,
    UINT64_MAX,
    Header,
    Record,
    _int,
    format_value,
    read_header,
    read_record,
    read_union,
)
from pte_adapter.delegates.xnnpack.values import (
    _Constants,
    _full_dims,
    _inner,
    _node,
    _tensor,
    _tensor_id,
    tensor_value_at,
)
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, OpNode

__all__ = [
    "UINT64_MAX",
    "_GRAPH",
    "Header",
    "Record",
    "_int",
    "decode",
    "format_value",
    "read_header",
    "read_record",
]

# Nodes one payload's graph shows, as Ethos-U's command stream is capped (a 192-layer transformer's
# largest XNNPACK partition holds a few dozen; each node costs every view work): past them the
# rest is counted, not decoded (a problem says so).
MAX_OPERATIONS = 20_000


def _open(payload: memoryview, ctx: DecodeContext) -> tuple[Header, FlatBuffer, bytes]:
    """The header and the graph FlatBuffer, its identifier checked."""
    part = f"XNNPACK payload ({ctx.delegate_id})"
    base = ctx.payload_offset or 0
    header = read_header(payload, part, base)
    fb = FlatBuffer(
        payload[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size],
        part,
        base=base + header.flatbuffer_offset,
    )
    ident = fb.identifier()
    if ident not in (FILE_IDENTIFIER, RUNTIME_FILE_IDENTIFIER):
        raise fb.error(
            f"expected FlatBuffer identifier {FILE_IDENTIFIER!r} or {RUNTIME_FILE_IDENTIFIER!r}, "
            f"found {ident!r}",
            4,
        )
    return header, fb, ident


def _constants(root: Table, header: Header, ctx: DecodeContext) -> _Constants:
    fb = root.fb
    entries: list[Record] = []
    # Each entry as `iter_tables` hands it out and `read_record` reads it: straight from the
    # buffer (`constant_entry_at`), else, the budgets restored, the checked way.
    for i, at in enumerate(root.iter_positions(_GRAPH["constant_data"].slot, "constant_data")):
        tables_left, unpack_left = fb.tables_left, fb.unpack_left
        entry = constant_entry_at(fb, at)
        if entry is None:
            fb.tables_left, fb.unpack_left = tables_left, unpack_left
            entry = read_record(fb.table_at(at, "constant_data", root, i), "ConstantDataOffset")
        entries.append(entry)
    legacy: list[tuple[int, int]] = []
    if not entries:
        base = ctx.payload_offset or 0
        for i, buf in enumerate(
            root.iter_tables(_GRAPH["constant_buffer"].slot, "constant_buffer")
        ):
            span = buf.bytes_span(TABLES["Buffer"][0].slot, f"constant_buffer[{i}]")
            # bytes_span gives file offsets; convert back to payload offsets for display
            legacy.append((span[0] - base, span[1]) if span else (0, 0))
    return _Constants(entries, legacy, header, ctx, ctx.payload_offset)


def _graph(
    root: Table, consts: _Constants, problems: list[str]
) -> tuple[DelegateGraph, Counter[str]]:
    graph = DelegateGraph(name="XNNPACK graph")
    fb = root.fb
    for i, at in enumerate(root.iter_positions(_GRAPH["xvalues"].slot, "xvalues")):
        tables_left, unpack_left = fb.tables_left, fb.unpack_left
        info = tensor_value_at(fb, at, root.pos, i, consts)
        if info is None:  # read again the checked way, as `iter_tables(once=True)` gives it
            fb.tables_left, fb.unpack_left = tables_left, unpack_left
            t = fb.table_at(at, "xvalues", root, i)
            fb.claim("xvalues", at, root.pos, i)
            union = read_union(t, _XVALUE["xvalue_union"])  # an XValue is its union alone
            info = _tensor(union, consts, problems)
            if info is None:
                continue
            if "dims" in _inner(union).counts:
                info.shape = _full_dims(t)
        if info.id in graph.tensors:
            problems.append(f"xvalues[{i}] reuses value id {info.id}")
        graph.tensors[info.id] = info
    kinds: Counter[str] = Counter()
    total = root.vector_len(_GRAPH["xnodes"].slot)
    if total > MAX_OPERATIONS:
        problems.append(
            f"{total} nodes: more than {MAX_OPERATIONS}; the first {MAX_OPERATIONS} are shown and "
            "counted"
        )
    xnodes = root.iter_tables(_GRAPH["xnodes"].slot, "xnodes", once=True)
    for i, t in enumerate(islice(xnodes, MAX_OPERATIONS)):
        node = _xnode(i, t, problems)
        kinds[node.kind] += 1
        for tid in node.inputs + node.outputs:
            if tid not in graph.tensors:
                problems.append(f"XNode {i} ({node.kind}) refers to undefined value {tid}")
        graph.nodes.append(node)
    graph.inputs = [_tensor_id(v) for v in root.ints(_GRAPH["input_ids"].slot, "I", "input_ids")]
    graph.outputs = [_tensor_id(v) for v in root.ints(_GRAPH["output_ids"].slot, "I", "output_ids")]
    for tid in graph.inputs + graph.outputs:
        if tid not in graph.tensors:
            problems.append(f"graph input/output {tid} is not a defined value")
    return graph, kinds


def _xnode(index: int, t: Table, problems: list[str]) -> OpNode:
    """XNode `index` (`t`), as `read_record(t, "XNode")` reads it."""
    node = _known_xnode(index, t, problems)
    if node is not None:
        return node
    fields = read_record(t, "XNode").fields
    return _node(
        index,
        fields.get("xnode_union"),
        fields.get("debug_handle"),
        fields.get("output_min_max"),
        problems,
    )


def _known_xnode(index: int, t: Table, problems: list[str]) -> OpNode | None:
    """XNode `index` read without its own record when it has an operation of a known kind, no
    `output_min_max`, and its fields lie inside the buffer (nothing but its operation's table
    can then fail a check, and that is read as the record reads it); else None, nothing read."""
    offsets = t.offsets
    fb = t.fb
    if not (
        len(offsets) > _XNODE_HANDLE
        and offsets[_XNODE_UNION]
        and offsets[_XNODE_UNION + 1]
        and not (len(offsets) > _XNODE_MIN_MAX and offsets[_XNODE_MIN_MAX])
        and t.pos + t.reach + 8 <= fb.size
    ):
        return None
    member = _XNODE_KINDS.get(fb.data[t.pos + offsets[_XNODE_UNION]])
    if member is None:
        return None
    sub = t.table(_XNODE_UNION + 1, "xnode_union")
    assert sub is not None  # its offset is not 0: a table, or an error
    union = member[0], read_record(sub, member[1])
    off = offsets[_XNODE_HANDLE]
    handle = _U32.unpack_from(fb.data, t.pos + off)[0] if off else 0
    return _node(index, union, handle, None, problems)


def constant_entry_at(fb: FlatBuffer, at: int) -> Record | None:
    """The ConstantDataOffset at `at` as `read_record` reads it (its offset, size and named
    key), when every check `Table` makes passes; else None, nothing read (as `tensor_value_at`)."""
    fields = fb.direct_fields(at)
    if fields is None:
        return None
    fields += _NO_FIELDS
    data, size = fb.data, fb.size
    key: str | None = None
    off = fields[_KEY]
    if off:  # `Table.string`: its checks, then the bytes charged
        vec = at + off + _U32.unpack_from(data, at + off)[0]
        if vec >= size or vec % 4 or vec + 4 > size:
            return None
        n = _U32.unpack_from(data, vec)[0]
        if n > size - vec - 4 or fb.unpack_left - n < 0:
            return None
        fb.unpack_left -= n
        key = bytes(data[vec + 4 : vec + 4 + n]).decode("utf-8", errors="replace")
    entry = Record("ConstantDataOffset")
    off, n = fields[_OFFSET], fields[_SIZE]
    entry.fields["offset"] = _U64.unpack_from(data, at + off)[0] if off else 0
    entry.fields["size"] = _U64.unpack_from(data, at + n)[0] if n else 0
    entry.fields["named_key"] = key
    return entry


# ConstantDataOffset's fields, in the order `read_record` reads them (a schema that changes them
# fails here, at import).
_OFFSET, _SIZE, _KEY = (f.slot for f in TABLES["ConstantDataOffset"])
assert [(f.name, f.fmt) for f in TABLES["ConstantDataOffset"]] == [
    ("offset", "Q"),
    ("size", "Q"),
    ("named_key", ""),
]
_NO_FIELDS = (0, 0, 0)
_U64 = struct.Struct("<Q")
_XNODE = {f.name: f for f in TABLES["XNode"]}
_XNODE_UNION = _XNODE["xnode_union"].slot
_XNODE_HANDLE = _XNODE["debug_handle"].slot
_XNODE_MIN_MAX = _XNODE["output_min_max"].slot
_XNODE_KINDS = UNIONS[_XNODE["xnode_union"].ref]
_U32 = struct.Struct("<I")


def _summary(
    root: Table,
    ident: bytes,
    header: Header,
    graph: DelegateGraph,
    kinds: Counter[str],
    consts: _Constants,
) -> dict[str, str]:
    kinds_text = ", ".join(
        f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    external = sum(consts.external_files.values())
    summary = {
        "format": f"XNNPACK {ident.decode()}"
        + (" (XH00 header)" if header.flatbuffer_offset else ""),
        "version": root.string(_GRAPH["version"].slot, "version") or "",
        "nodes": str(len(graph.nodes)),
        "node_kinds": kinds_text,
        "values": str(len(graph.tensors)),
        "inputs": str(len(graph.inputs)),
        "outputs": str(len(graph.outputs)),
        "num_externs": str(root.int(_GRAPH["num_externs"].slot, "I")),
    }
    if consts.total_bytes or consts.named or consts.in_payload or external:
        summary["constant_bytes"] = str(consts.total_bytes)
        summary["constants_named"] = str(consts.named)
        summary["constants_in_payload"] = str(consts.in_payload)
        summary["constants_external"] = (
            f"{external} in " + ", ".join(sorted(consts.external_files)) if external else "0"
        )
    else:  # a graph of activations only (an add, a reshape): one line, not four zeros
        summary["constants"] = "none"
    if header.constant_size:
        summary["payload_constant_block"] = (
            f"{header.constant_size} bytes at +{header.constant_offset}"
        )
    if consts.missing:
        summary["constants_missing"] = str(len(consts.missing))
    return summary


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    header, fb, ident = _open(payload, ctx)
    root = fb.root()
    problems: list[str] = []
    consts = _constants(root, header, ctx)
    graph, kinds = _graph(root, consts, problems)
    summary = _summary(root, ident, header, graph, kinds, consts)
    if consts.missing:
        problems.append(ctx.missing_constants(consts.missing))
    graph.attrs = dict(summary)
    stats: dict[str, int | float | str] = {
        "xnn_nodes": len(graph.nodes),
        "xnn_values": len(graph.tensors),
        "constant_bytes": consts.total_bytes,
        "external_constants": sum(consts.external_files.values()),
    }
    for k, n in kinds.items():
        stats[f"kind:{k}"] = n
    return DecodedDelegate(
        graphs=[graph],
        summary=summary,
        num_inputs=len(graph.inputs),
        num_outputs=len(graph.outputs),
        inner_op_count=len(graph.nodes),
        stats=stats,
        problems=problems,
        output_quant=[
            graph.tensors[t].quant if t in graph.tensors else None for t in graph.outputs
        ],
    )
