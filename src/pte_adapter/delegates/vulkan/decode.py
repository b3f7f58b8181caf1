"""Vulkan delegate payloads (ExecuTorch's GPU backend, e.g. on Arm Mali): `VH00` header + `VK00`
FlatBuffer (`VkGraph`) + a raw bytes block.

Layout (ExecuTorch `backends/vulkan/serialization/vulkan_graph_serialize.py`, little-endian):
  bytes 0-3   zero (so that `VH00` sits where a FlatBuffer's identifier would)
  bytes 4-7   `VH00`
  bytes 8-9   u16 header length (30)
  bytes 10-13 u32 FlatBuffer offset    bytes 14-17 u32 FlatBuffer size
  bytes 18-21 u32 raw bytes offset     bytes 22-29 u64 raw bytes size
Each part is padded to 16 bytes. The FlatBuffer holds a table of values (tensors, ints, doubles,
bools, strings, lists, value lists, symbolic ints, nulls), a chain of operator calls whose
arguments are value ids (one per schema argument of the operator, then its output), the graph's
input and output ids, and one `VkBytes` per constant: an offset into the raw bytes block, or a key
of named data (ExecuTorch 1.5.1 writes every non-empty constant as named data).

Tables (slots, union tags, enums, defaults) are generated from the pinned schema
(`scripts/gen_vulkan_schema.py`); the names of each operator's arguments from the pinned operator
registry (`scripts/gen_vulkan_rules.py`). Constant bytes are never read, only their size and where
they are.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vulkan.graphs import (
    ConstantCounts,
    VkGraphFacts,
    build_graph,
)
from pte_adapter.delegates.vulkan.records import (
    GRAPH,
    Header,
    VkBytesRef,
    check_identifier,
    graph_enum,
    read_bytes_ref,
    read_call,
    read_header,
    read_value,
)
from pte_adapter.errors import LimitExceededError
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph

__all__ = ["decode", "read_data_refs", "read_graph"]

# What one payload may hold (a MobileNetV2 holds a few hundred values and a hundred calls; every
# value and call costs each view work: a call drawn in Model Explorer about 0.1 ms). Calls past
# the cap are counted, not decoded (a problem says so), as Ethos-U's command stream does; a
# payload of more values is refused, as the calls name them by index.
MAX_OPERATIONS = 10_000
MAX_VALUES = 50_000


def _root(payload: memoryview, part: str, base: int) -> tuple[Header, Table]:
    header = read_header(payload, part, base)
    start = header.flatbuffer_offset
    fb = FlatBuffer(payload[start : start + header.flatbuffer_size], part, base=base + start)
    check_identifier(fb.identifier(), part, base + start + 4)
    return header, fb.root()


def read_data_refs(
    payload: memoryview, part: str, base: int
) -> tuple[Header, list[VkBytesRef], list[VkBytesRef]]:
    """The header and where the constants and shaders are, without the values and calls (what
    the payload's layout needs: reading the whole graph again doubled `size` on a big one)."""
    header, root = _root(payload, part, base)
    constants = [read_bytes_ref(t) for t in root.iter_tables(GRAPH["constants"].slot, "constants")]
    shaders = [read_bytes_ref(t) for t in root.iter_tables(GRAPH["shaders"].slot, "shaders")]
    return header, constants, shaders


def read_graph(payload: memoryview, part: str, base: int) -> VkGraphFacts:
    """Every part of the payload, bounds-checked (`PteFormatError` with the part and offset)."""
    header, root = _root(payload, part, base)
    start = header.flatbuffer_offset
    n_values = root.vector_len(GRAPH["values"].slot)
    if n_values > MAX_VALUES:
        raise LimitExceededError(
            f"{n_values} values (limit {MAX_VALUES})", part=part, offset=base + start
        )
    values = root.iter_tables(GRAPH["values"].slot, "values")
    calls = root.iter_tables(GRAPH["chain"].slot, "chain")
    return VkGraphFacts(
        header=header,
        version=root.string(GRAPH["version"].slot, "version") or "",
        values=[read_value(i, t) for i, t in enumerate(values)],
        chain=[read_call(t) for t in islice(calls, MAX_OPERATIONS)],
        input_ids=root.ints(GRAPH["input_ids"].slot, GRAPH["input_ids"].fmt, "input_ids"),
        output_ids=root.ints(GRAPH["output_ids"].slot, GRAPH["output_ids"].fmt, "output_ids"),
        constants=[
            read_bytes_ref(t) for t in root.iter_tables(GRAPH["constants"].slot, "constants")
        ],
        shaders=[read_bytes_ref(t) for t in root.iter_tables(GRAPH["shaders"].slot, "shaders")],
        storage_type_override=graph_enum(root, "storage_type_override"),
        memory_layout_override=graph_enum(root, "memory_layout_override"),
        chain_total=root.vector_len(GRAPH["chain"].slot),
    )


def _counts_text(kinds: Counter[str]) -> str:
    return ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _io_bytes(facts: VkGraphFacts, ids: list[int]) -> int | None:
    """Bytes of the graph's inputs or outputs as the CPU hands them over (staging dtype)."""
    total = 0
    for vid in ids:
        t = facts.values[vid].tensor if 0 <= vid < len(facts.values) else None
        n = t.nbytes if t is not None else None
        if n is None:
            return None
        total += n
    return total


def _summary(
    facts: VkGraphFacts, graph: DelegateGraph, kinds: Counter[str], counts: ConstantCounts
) -> dict[str, str]:
    external = sum(counts.external_files.values())
    summary = {
        "format": "Vulkan VK00 (VH00 header)",
        "version": facts.version,
        "operators": str(len(facts.chain)),
        "operator_kinds": _counts_text(kinds),
        "values": str(len(facts.values)),
        "value_kinds": _counts_text(Counter(v.kind for v in facts.values)),
        "tensors": str(sum(v.tensor is not None for v in facts.values)),
        "inputs": str(len(graph.inputs)),
        "outputs": str(len(graph.outputs)),
        "constants": str(len(facts.constants)),
        "constant_bytes": str(counts.total_bytes),
        "constants_named": str(counts.named),
        "constants_in_payload": str(counts.in_payload),
        "constants_external": (
            f"{external} in " + ", ".join(sorted(counts.external_files)) if external else "0"
        ),
        "shaders": str(len(facts.shaders)),
        "raw_bytes": f"{facts.header.bytes_size} bytes at +{facts.header.bytes_offset}",
        "storage_type_override": facts.storage_type_override,
        "memory_layout_override": facts.memory_layout_override,
    }
    if counts.missing:
        summary["constants_missing"] = str(len(counts.missing))
    return summary


def _stats(
    facts: VkGraphFacts, kinds: Counter[str], counts: ConstantCounts
) -> dict[str, int | float | str]:
    """The partition's numbers for `summary --json`, `diff` and analysis."""
    stats: dict[str, int | float | str] = {
        "vk_ops": len(facts.chain),
        "vk_op_counts": _counts_text(kinds),
        "vk_values": len(facts.values),
        "vk_tensors": sum(v.tensor is not None for v in facts.values),
        "vk_constants": len(facts.constants),
        "constant_bytes": counts.total_bytes,
        "external_constants": sum(counts.external_files.values()),
        "vk_shaders": len(facts.shaders),
    }
    for key, ids in (("vk_input_bytes", facts.input_ids), ("vk_output_bytes", facts.output_ids)):
        n = _io_bytes(facts, ids)
        if n is not None:
            stats[key] = n
    return stats


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"Vulkan payload ({ctx.delegate_id})"
    facts = read_graph(payload, part, ctx.payload_offset or 0)
    problems: list[str] = []
    if facts.chain_total > len(facts.chain):
        problems.append(
            f"{facts.chain_total} operator calls: more than {MAX_OPERATIONS}; the first "
            f"{MAX_OPERATIONS} are shown and counted"
        )
    graph, kinds, counts = build_graph(facts, ctx, problems)
    summary = _summary(facts, graph, kinds, counts)
    if counts.missing:
        problems.append(ctx.missing_constants(counts.missing))
    graph.attrs = dict(summary)
    return DecodedDelegate(
        graphs=[graph],
        summary=summary,
        num_inputs=len(graph.inputs),
        num_outputs=len(graph.outputs),
        inner_op_count=len(graph.nodes),
        stats=_stats(facts, kinds, counts),
        problems=problems,
    )
