"""A bounds-checked SPIR-V reader for the modules inside VGF files.

SPIR-V (Khronos, "SPIR-V Specification" §2.3-2.4): a header of five 32-bit words (magic
0x07230203, version, generator, id bound, schema), then instructions, each a word holding
(word count << 16 | opcode) followed by its operands. Strings are nul-terminated UTF-8 packed into
words.

What is decoded: capabilities, extensions, imported instruction sets, entry points and execution
modes (compute shaders), names, decorations, the types (scalars, arrays, pointers, and the
`SPV_ARM_tensors` tensor types), constants (scalars, composites, null, replicated composites), the
`SPV_ARM_graph` structure (graph constants, graph entry points, graphs with their inputs,
operations and outputs) and every `OpExtInst`. Everything else is skipped by its word count.

Bad bytes (a truncated header, an instruction that runs past the end, a word count of zero, an id
outside the bound, a string without its nul) raise `PteFormatError` with the byte offset. Facts that
do not fit together (a type that names an undeclared id, a shape that is not a constant) are not
errors here: the consumers report them as problems. Work is linear in the module's size: every
loop walks instructions or operands that are in the bytes, and values are expanded only up to
`MAX_VALUES` elements.
"""

from __future__ import annotations

import array
from typing import Final

from pte_adapter.delegates.vgf._generated import spirv_tables as T
from pte_adapter.delegates.vgf.spirv_model import (
    MAX_VALUES,
    EntryPoint,
    ExtInst,
    Graph,
    SpirvConstant,
    SpirvModule,
    SpirvType,
)
from pte_adapter.errors import PteFormatError

__all__ = [
    "MAX_VALUES",
    "EntryPoint",
    "ExtInst",
    "Graph",
    "SpirvConstant",
    "SpirvModule",
    "SpirvType",
    "byte_runs",
    "read_spirv",
]

HEADER_WORDS: Final = 5


class _Words:
    """The module's words, and reads that fail with the byte offset of what is missing."""

    def __init__(self, data: memoryview, part: str, base: int) -> None:
        self.part = part
        self.base = base
        if len(data) % 4:
            raise PteFormatError(
                f"a SPIR-V module is whole 32-bit words; this one has {len(data)} bytes",
                part=part,
                offset=base,
            )
        words = array.array("I")
        if words.itemsize != 4:  # pragma: no cover - every platform Python runs on has 4
            words = array.array("L")
        words.frombytes(data)
        # The magic read backwards: the module's byte order is not this machine's.
        if len(words) >= 1 and words[0] == 0x03022307:
            words.byteswap()
        self.w = words
        self.n = len(words)

    def error(self, what: str, word: int) -> PteFormatError:
        return PteFormatError(what, part=self.part, offset=self.base + 4 * word)

    def string(self, start: int, end: int, what: str) -> tuple[str, int]:
        """A nul-terminated literal string in words [start, end); returns it and the next word."""
        raw = bytearray()
        for i in range(start, end):
            word = self.w[i]
            for shift in (0, 8, 16, 24):
                b = (word >> shift) & 0xFF
                if b == 0:
                    return raw.decode("utf-8", errors="replace"), i + 1
                raw.append(b)
        raise self.error(f"{what}: string without its terminating nul", start)


def read_spirv(data: memoryview, part: str, base: int = 0, *, strict: bool = True) -> SpirvModule:
    """Decode one module. `base` is the absolute file offset of its first byte (for messages).

    A bad header always raises `PteFormatError`. With `strict=False` an instruction that cannot be
    read ends the walk instead: what came before it is returned, with the error in `problems` and
    `truncated` set, so that a corrupt module still shows its first operations."""
    ws = _Words(data, part, base)
    w = ws.w
    if ws.n < HEADER_WORDS:
        raise ws.error(f"a SPIR-V module starts with {HEADER_WORDS} header words; found {ws.n}", 0)
    if w[0] != T.MAGIC:
        raise ws.error(f"expected SPIR-V magic {T.MAGIC:#010x}, found {w[0]:#010x}", 0)
    mod = SpirvModule(
        version=((w[1] >> 16) & 0xFF, (w[1] >> 8) & 0xFF),
        generator=w[2],
        bound=w[3],
        words=ws.n,
    )
    if mod.bound > ws.n * 4:  # each id needs at least one word to be defined
        mod.problems.append(f"the id bound {mod.bound} is larger than the module could define")
    counts: dict[int, int] = {}
    try:
        _walk(mod, ws, counts)
    except PteFormatError as e:
        if strict:
            raise
        mod.problems.append(str(e))
        mod.truncated = True
    mod.opcode_counts = {T.OPCODE_NAMES.get(k, f"op{k}"): v for k, v in sorted(counts.items())}
    return mod


def _walk(mod: SpirvModule, ws: _Words, counts: dict[int, int]) -> None:
    w = ws.w
    graph: Graph | None = None
    pos = HEADER_WORDS
    while pos < ws.n:
        head = w[pos]
        count, op = head >> 16, head & 0xFFFF
        if count == 0:
            raise ws.error(f"instruction {T.OPCODE_NAMES.get(op, op)} has a word count of 0", pos)
        end = pos + count
        if end > ws.n:
            raise ws.error(
                f"instruction {T.OPCODE_NAMES.get(op, op)} of {count} words runs past the end "
                f"of the module ({ws.n} words)",
                pos,
            )
        mod.instructions += 1
        counts[op] = counts.get(op, 0) + 1
        operands = w[pos + 1 : end]
        # Result ids are checked against the bound: consumers index by them.
        result_at = (1 if op in T.HAS_RESULT_TYPE else 0) if op in T.HAS_RESULT else None
        if result_at is not None:
            if result_at >= len(operands):
                raise ws.error(f"{T.OPCODE_NAMES.get(op, op)} has no result id", pos)
            rid = operands[result_at]
            if rid == 0 or rid >= mod.bound:
                raise ws.error(
                    f"{T.OPCODE_NAMES.get(op, op)} defines id {rid}, outside the bound {mod.bound}",
                    pos,
                )
        graph = _instruction(mod, ws, op, operands, pos, graph)
        pos = end
    if graph is not None and not graph.ended:
        mod.problems.append(f"graph %{graph.id} has no OpGraphEndARM")


def _need(ws: _Words, operands: array.array[int], n: int, op: int, pos: int) -> None:
    if len(operands) < n:
        raise ws.error(
            f"{T.OPCODE_NAMES.get(op, op)} needs {n} operand words, has {len(operands)}", pos
        )


def _instruction(
    mod: SpirvModule,
    ws: _Words,
    op: int,
    o: array.array[int],
    pos: int,
    graph: Graph | None,
) -> Graph | None:
    """Record one instruction; returns the graph being read (None outside a graph body)."""
    if op in _TYPE_OPS:
        _type(mod, ws, op, o, pos)
    elif op in _CONSTANT_OPS:
        _constant(mod, ws, op, o, pos)
    elif op in _GRAPH_BODY_OPS:
        return _graph_body(mod, ws, op, o, pos, graph)
    elif not _declaration(mod, ws, op, o, pos) and graph is not None and op in T.OPCODE_NAMES:
        graph.other_instructions += 1
    return graph


def _declaration(mod: SpirvModule, ws: _Words, op: int, o: array.array[int], pos: int) -> bool:
    """Module-level facts: capabilities, names, decorations, entry points, variables ... False
    for an instruction this reader skips."""
    end = pos + 1 + len(o)
    if op == T.OP_CAPABILITY:
        _need(ws, o, 1, op, pos)
        mod.capabilities.append(T.CAPABILITY_NAMES.get(o[0], f"Capability({o[0]})"))
    elif op == T.OP_EXTENSION:
        mod.extensions.append(ws.string(pos + 1, end, "OpExtension")[0])
    elif op == T.OP_EXT_INST_IMPORT:
        _need(ws, o, 2, op, pos)
        mod.imports[o[0]] = ws.string(pos + 2, end, "OpExtInstImport")[0]
    elif op == T.OP_NAME:
        _need(ws, o, 2, op, pos)
        mod.names[o[0]] = ws.string(pos + 2, end, "OpName")[0]
    elif op == T.OP_DECORATE:
        _need(ws, o, 2, op, pos)
        deco = T.DECORATION_NAMES.get(o[1], f"Decoration({o[1]})")
        mod.decorations.setdefault(o[0], {})[deco] = list(o[2:])
    elif op == T.OP_ENTRY_POINT:
        _need(ws, o, 3, op, pos)
        name, nxt = ws.string(pos + 3, end, "OpEntryPoint")
        model = T.EXECUTION_MODEL_NAMES.get(o[0], f"ExecutionModel({o[0]})")
        mod.entry_points.append(EntryPoint(model, o[1], name, list(ws.w[nxt:end])))
    elif op in (T.OP_EXECUTION_MODE, T.OP_EXECUTION_MODE_ID):
        _need(ws, o, 2, op, pos)
        mode = T.EXECUTION_MODE_NAMES.get(o[1], f"ExecutionMode({o[1]})")
        mod.execution_modes.setdefault(o[0], []).append((mode, list(o[2:])))
    elif op == T.OP_VARIABLE:
        _need(ws, o, 3, op, pos)
        mod.variables[o[1]] = (o[0], T.STORAGE_CLASS_NAMES.get(o[2], str(o[2])))
    elif op == T.OP_GRAPH_CONSTANT_ARM:
        _need(ws, o, 3, op, pos)
        mod.graph_constants[o[1]] = (o[0], o[2])
    elif op == T.OP_GRAPH_ENTRY_POINT_ARM:
        _need(ws, o, 2, op, pos)
        name, nxt = ws.string(pos + 2, end, "OpGraphEntryPointARM")
        mod.graph_entry_points.append(EntryPoint("graph", o[0], name, list(ws.w[nxt:end])))
    elif op == T.OP_FUNCTION:
        mod.functions += 1
    else:
        return False
    return True


def _graph_body(
    mod: SpirvModule, ws: _Words, op: int, o: array.array[int], pos: int, graph: Graph | None
) -> Graph | None:
    """`OpGraphARM` ... `OpGraphEndARM` and the operations (`OpExtInst`) in between."""
    if op == T.OP_GRAPH_ARM:
        _need(ws, o, 2, op, pos)
        if graph is not None and not graph.ended:
            mod.problems.append(f"graph %{graph.id} has no OpGraphEndARM before graph %{o[1]}")
        graph = Graph(id=o[1], type=o[0], offset=ws.base + 4 * pos)
        mod.graphs.append(graph)
    elif op == T.OP_EXT_INST:
        _need(ws, o, 4, op, pos)
        mod.ext_insts += 1
        if graph is not None:
            graph.ops.append(ExtInst(o[0], o[1], o[2], o[3], list(o[4:]), ws.base + 4 * pos))
    elif graph is None:
        mod.problems.append(f"{T.OPCODE_NAMES.get(op, op)} outside a graph")
    elif op == T.OP_GRAPH_INPUT_ARM:
        _need(ws, o, 3, op, pos)
        graph.inputs.append((o[1], o[0], o[2]))
    elif op == T.OP_GRAPH_SET_OUTPUT_ARM:
        _need(ws, o, 2, op, pos)
        graph.outputs.append((o[0], o[1]))
    elif op == T.OP_GRAPH_END_ARM:
        graph.ended = True
        return None
    return graph


_GRAPH_BODY_OPS: Final = frozenset(
    {
        T.OP_GRAPH_ARM,
        T.OP_GRAPH_INPUT_ARM,
        T.OP_GRAPH_SET_OUTPUT_ARM,
        T.OP_GRAPH_END_ARM,
        T.OP_EXT_INST,
    }
)
_TYPE_OPS: Final = frozenset(
    {
        T.OP_TYPE_VOID,
        T.OP_TYPE_BOOL,
        T.OP_TYPE_INT,
        T.OP_TYPE_FLOAT,
        T.OP_TYPE_VECTOR,
        T.OP_TYPE_ARRAY,
        T.OP_TYPE_RUNTIME_ARRAY,
        T.OP_TYPE_STRUCT,
        T.OP_TYPE_POINTER,
        T.OP_TYPE_IMAGE,
        T.OP_TYPE_SAMPLED_IMAGE,
        T.OP_TYPE_FUNCTION,
        T.OP_TYPE_TENSOR_ARM,
        T.OP_TYPE_GRAPH_ARM,
    }
)
_CONSTANT_OPS: Final = frozenset(
    {
        T.OP_CONSTANT_TRUE,
        T.OP_CONSTANT_FALSE,
        T.OP_CONSTANT,
        T.OP_CONSTANT_COMPOSITE,
        T.OP_CONSTANT_NULL,
        T.OP_CONSTANT_COMPOSITE_REPLICATE_EXT,
        T.OP_SPEC_CONSTANT_TRUE,
        T.OP_SPEC_CONSTANT_FALSE,
        T.OP_SPEC_CONSTANT,
        T.OP_SPEC_CONSTANT_COMPOSITE,
    }
)
_SIMPLE_TYPES: Final = {
    T.OP_TYPE_VOID: "void",
    T.OP_TYPE_BOOL: "bool",
    T.OP_TYPE_IMAGE: "image",
    T.OP_TYPE_SAMPLED_IMAGE: "sampled_image",
    T.OP_TYPE_FUNCTION: "function",
}


def _type(mod: SpirvModule, ws: _Words, op: int, o: array.array[int], pos: int) -> None:
    _need(ws, o, 1, op, pos)
    tid = o[0]
    if op in _SIMPLE_TYPES:
        mod.types[tid] = SpirvType(tid, _SIMPLE_TYPES[op])
    elif op == T.OP_TYPE_INT:
        _need(ws, o, 3, op, pos)
        mod.types[tid] = SpirvType(tid, "int", width=o[1], signed=bool(o[2]))
        if o[1] > 64:  # a constant of it holds at most two words: its values are not read
            mod.problems.append(f"OpTypeInt %{tid} is {o[1]} bits wide (at most 64 are read)")
    elif op == T.OP_TYPE_FLOAT:
        _need(ws, o, 2, op, pos)
        enc = T.FPENCODING_NAMES.get(o[2], f"FPEncoding({o[2]})") if len(o) > 2 else ""
        mod.types[tid] = SpirvType(tid, "float", width=o[1], encoding=enc)
    elif op == T.OP_TYPE_VECTOR:
        _need(ws, o, 3, op, pos)
        mod.types[tid] = SpirvType(tid, "vector", element=o[1], count=o[2])
    elif op == T.OP_TYPE_ARRAY:
        _need(ws, o, 3, op, pos)
        mod.types[tid] = SpirvType(tid, "array", element=o[1], count=o[2])
    elif op == T.OP_TYPE_RUNTIME_ARRAY:
        _need(ws, o, 2, op, pos)
        mod.types[tid] = SpirvType(tid, "runtime_array", element=o[1])
    elif op == T.OP_TYPE_STRUCT:
        mod.types[tid] = SpirvType(tid, "struct", members=list(o[1:]))
    elif op == T.OP_TYPE_POINTER:
        _need(ws, o, 3, op, pos)
        storage = T.STORAGE_CLASS_NAMES.get(o[1], str(o[1]))
        mod.types[tid] = SpirvType(tid, "pointer", element=o[2], storage=storage)
    elif op == T.OP_TYPE_TENSOR_ARM:
        _need(ws, o, 2, op, pos)
        mod.types[tid] = SpirvType(
            tid,
            "tensor",
            element=o[1],
            rank=o[2] if len(o) > 2 else None,
            shape=o[3] if len(o) > 3 else None,
        )
    elif op == T.OP_TYPE_GRAPH_ARM:
        _need(ws, o, 2, op, pos)
        mod.types[tid] = SpirvType(tid, "graph", count=o[1], members=list(o[2:]))


def _constant(mod: SpirvModule, ws: _Words, op: int, o: array.array[int], pos: int) -> None:
    _need(ws, o, 2, op, pos)
    tid, cid = o[0], o[1]
    if op in (T.OP_CONSTANT_TRUE, T.OP_CONSTANT_FALSE):
        mod.constants[cid] = SpirvConstant(cid, tid, "bool", value=op == T.OP_CONSTANT_TRUE)
    elif op in (T.OP_SPEC_CONSTANT_TRUE, T.OP_SPEC_CONSTANT_FALSE):
        mod.constants[cid] = SpirvConstant(cid, tid, "bool", value=op == T.OP_SPEC_CONSTANT_TRUE)
    elif op in (T.OP_CONSTANT, T.OP_SPEC_CONSTANT):
        _need(ws, o, 3, op, pos)
        kind = "scalar" if op == T.OP_CONSTANT else "spec"
        mod.constants[cid] = SpirvConstant(cid, tid, kind, words=list(o[2:4]))
    elif op in (T.OP_CONSTANT_COMPOSITE, T.OP_SPEC_CONSTANT_COMPOSITE):
        mod.constants[cid] = SpirvConstant(cid, tid, "composite", parts=list(o[2:]))
    elif op == T.OP_CONSTANT_NULL:
        mod.constants[cid] = SpirvConstant(cid, tid, "null")
    elif op == T.OP_CONSTANT_COMPOSITE_REPLICATE_EXT:
        _need(ws, o, 3, op, pos)
        mod.constants[cid] = SpirvConstant(cid, tid, "replicate", parts=[o[2]])


# -- where the bytes go (for `pte-adapter size`) ----------------------------------------------------

_METADATA_KIND: Final = "spirv_metadata"


def _byte_kind(op: int, in_function: bool) -> str:
    if in_function:
        return "spirv_shader_code"
    if op in _CONSTANT_OPS:
        return "spirv_constant"
    if op in _TYPE_OPS or op == T.OP_TYPE_VOID:
        return "spirv_type"
    if op in (T.OP_GRAPH_CONSTANT_ARM, T.OP_VARIABLE):
        return "spirv_type"  # declarations of what a graph or shader binds
    if op in _GRAPH_OPS:
        return "spirv_graph"
    return _METADATA_KIND


_GRAPH_OPS: Final = frozenset(
    {
        T.OP_GRAPH_ENTRY_POINT_ARM,
        T.OP_GRAPH_ARM,
        T.OP_GRAPH_INPUT_ARM,
        T.OP_GRAPH_SET_OUTPUT_ARM,
        T.OP_GRAPH_END_ARM,
        T.OP_EXT_INST,
    }
)

# What each kind of byte run is, for `size`.
SPAN_NAMES: Final = {
    "spirv_header": "SPIR-V header",
    "spirv_metadata": "SPIR-V capabilities, names, decorations",
    "spirv_type": "SPIR-V types and variables",
    "spirv_constant": "SPIR-V inline constants",
    "spirv_graph": "SPIR-V graph operations",
    "spirv_shader_code": "SPIR-V shader functions",
}


def byte_runs(data: memoryview, part: str, base: int = 0) -> list[tuple[str, int, int]]:
    """(kind, absolute offset, size) runs covering the module: its header, then consecutive
    instructions of one kind merged. Raises `PteFormatError` where `read_spirv` would."""
    ws = _Words(data, part, base)
    if ws.n < HEADER_WORDS or ws.w[0] != T.MAGIC:
        raise ws.error("not a SPIR-V module (no header or wrong magic)", 0)
    runs: list[tuple[str, int, int]] = [("spirv_header", base, 4 * HEADER_WORDS)]
    pos = HEADER_WORDS
    in_function = False
    while pos < ws.n:
        count, op = ws.w[pos] >> 16, ws.w[pos] & 0xFFFF
        if count == 0 or pos + count > ws.n:
            raise ws.error(f"instruction {T.OPCODE_NAMES.get(op, op)} has a bad word count", pos)
        if op == T.OP_FUNCTION:
            in_function = True
        kind = _byte_kind(op, in_function)
        if op == T.OP_FUNCTION_END:
            in_function = False
        start = base + 4 * pos
        last = runs[-1]
        if last[0] == kind and last[1] + last[2] == start:
            runs[-1] = (kind, last[1], last[2] + 4 * count)
        else:
            runs.append((kind, start, 4 * count))
        pos += count
    return runs
