"""What `spirv.read_spirv` learns from a SPIR-V module, and the queries the graph builder asks.

Types, constants, names and decorations by id; the `SPV_ARM_graph` graphs with their inputs,
operations and outputs; entry points. Queries never fail: an id that is not there gives None (the
consumer reports it), and constant values are expanded to at most `MAX_VALUES` elements in at most
`MAX_VISITS` steps, so composites nested (or cyclic, in a corrupt module) cannot make them costly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.program.model import NUMEL_CAP

MAX_VALUES: Final = 16  # constant elements expanded for display
MAX_VISITS: Final = 4096  # constants one value walk may visit
MAX_DEPTH: Final = 64  # nesting of composites


@dataclass
class SpirvType:
    id: int
    kind: str  # "int", "float", "bool", "void", "vector", "array", "runtime_array", "struct",
    # "pointer", "tensor", "graph", "image", "sampled_image", "function", or the opcode's name
    width: int = 0  # int/float bits
    signed: bool = False
    encoding: str = ""  # float encoding (BFloat16KHR ...), "" for IEEE
    element: int = 0  # element / component / pointee type id
    count: int = 0  # vector components; array length id; graph input count
    rank: int | None = None  # tensor rank id
    shape: int | None = None  # tensor shape id
    members: list[int] = field(default_factory=list)  # struct members; graph in/out types
    storage: str = ""  # pointer storage class


@dataclass
class SpirvConstant:
    id: int
    type: int
    kind: str  # "scalar", "bool", "composite", "null", "replicate", "spec"
    words: list[int] = field(default_factory=list)  # scalar literal words
    value: bool = False  # for "bool"
    parts: list[int] = field(default_factory=list)  # composite constituents / the replicated id


@dataclass
class ExtInst:
    """One `OpExtInst`: a TOSA operator when its set is TOSA.001000.1."""

    result_type: int
    result: int
    set: int
    number: int
    operands: list[int]
    offset: int  # absolute file offset of the instruction


@dataclass
class Graph:
    """One `OpGraphARM ... OpGraphEndARM` body (SPV_ARM_graph)."""

    id: int
    type: int
    offset: int
    inputs: list[tuple[int, int, int]] = field(default_factory=list)  # (result, type, index id)
    ops: list[ExtInst] = field(default_factory=list)
    outputs: list[tuple[int, int]] = field(default_factory=list)  # (value, index id)
    ended: bool = False
    other_instructions: int = 0  # instructions inside the body that are not graph operations


@dataclass
class EntryPoint:
    model: str  # ExecutionModel name (GLCompute ...) or "graph" for OpGraphEntryPointARM
    function: int
    name: str
    interface: list[int]


@dataclass
class SpirvModule:
    version: tuple[int, int]
    generator: int
    bound: int
    words: int
    instructions: int = 0
    capabilities: list[str] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    imports: dict[int, str] = field(default_factory=dict)  # id -> instruction set name
    names: dict[int, str] = field(default_factory=dict)
    decorations: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    types: dict[int, SpirvType] = field(default_factory=dict)
    constants: dict[int, SpirvConstant] = field(default_factory=dict)
    variables: dict[int, tuple[int, str]] = field(default_factory=dict)  # id -> (type, storage)
    graph_constants: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> (type, gcid)
    entry_points: list[EntryPoint] = field(default_factory=list)
    graph_entry_points: list[EntryPoint] = field(default_factory=list)
    execution_modes: dict[int, list[tuple[str, list[int]]]] = field(default_factory=dict)
    graphs: list[Graph] = field(default_factory=list)
    functions: int = 0
    ext_insts: int = 0  # OpExtInst anywhere (inside graphs or functions)
    opcode_counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    truncated: bool = False  # the walk stopped at an instruction it could not read

    # -- queries ----------------------------------------------------------------------------------

    def decoration(self, target: int, name: str) -> int | None:
        values = self.decorations.get(target, {}).get(name)
        return values[0] if values else None

    def scalar(self, cid: int, *, unsigned: bool = False) -> int | float | bool | None:
        """The value of a scalar constant: a float, a bool, or an int of its width, two's
        complement unless `unsigned`. TOSA's integers are signed and its SPIR-V types signless
        (signedness 0), so values are shown signed (an int8 zero point of 128 is -128); counts,
        dimensions and indices are read `unsigned`."""
        c = self.constants.get(cid)
        if c is None:
            return None
        t = self.types.get(c.type)
        if c.kind == "bool":
            return c.value
        if c.kind == "null":
            if t is not None and t.kind == "bool":
                return False
            return 0.0 if t is not None and t.kind == "float" else 0
        if c.kind not in ("scalar", "spec") or t is None or not c.words:
            return None
        raw = c.words[0] | (c.words[1] << 32 if len(c.words) > 1 else 0)
        if t.kind == "float":
            if t.width == 32:
                return float(struct.unpack("<f", struct.pack("<I", raw & 0xFFFFFFFF))[0])
            if t.width == 64:
                return float(struct.unpack("<d", struct.pack("<Q", raw))[0])
            if t.width == 16 and not t.encoding:
                return float(struct.unpack("<e", struct.pack("<H", raw & 0xFFFF))[0])
            return raw
        if t.kind == "int":
            width = t.width or 32
            if width > 64:  # a constant holds two words at most: a wider type is corrupt (and
                return None  # masking to a width of 2^31 bits would build a 256 MB integer)
            raw &= (1 << width) - 1
            if not unsigned and raw >> (width - 1):
                raw -= 1 << width
            return raw
        return None

    def integer(self, cid: int | None) -> int | None:
        """A count, dimension or index: an integer constant read unsigned."""
        if cid is None:
            return None
        v = self.scalar(cid, unsigned=True)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def element_count(self, type_id: int) -> int | None:
        """How many scalars a composite type holds (arrays, vectors, tensors), None if unknown."""
        t = self.types.get(type_id)
        if t is None:
            return None
        if t.kind == "array":
            return self.integer(t.count)
        if t.kind == "vector":
            return t.count
        if t.kind == "tensor":
            shape = self.tensor_shape(type_id)
            if shape is None:
                return None
            if 0 in shape:
                return 0
            n = 1
            for d in shape:
                n *= d
                if abs(n) > NUMEL_CAP:  # never a number of thousands of digits
                    return NUMEL_CAP
            return n
        return 1

    def values(self, cid: int, limit: int = MAX_VALUES) -> tuple[list[int | float | bool], int]:
        """Up to `limit` scalars of a constant, flattened, and how many it has in all (-1: not
        known). Null and replicated composites are expanded only up to `limit`; the walk visits at
        most `MAX_VISITS` constants, so nested (or cyclic, in a corrupt module) composites stay
        cheap."""
        budget = [MAX_VISITS]
        out = self._values(cid, limit, budget, 0)
        c = self.constants.get(cid)
        total = self.element_count(c.type) if c is not None else None
        if c is not None and c.kind in ("scalar", "bool", "spec"):
            total = 1 if out else None
        return out[:limit], -1 if total is None else total

    def _values(
        self, cid: int, limit: int, budget: list[int], depth: int
    ) -> list[int | float | bool]:
        budget[0] -= 1
        c = self.constants.get(cid)
        if c is None or budget[0] < 0 or depth > MAX_DEPTH or limit <= 0:
            return []
        if c.kind in ("scalar", "bool", "spec"):
            v = self.scalar(cid)
            return [] if v is None else [v]
        total = self.element_count(c.type) or 0
        if c.kind == "null":
            t = self.types.get(self._scalar_type(c.type))
            fill: int | float | bool = (
                False if t and t.kind == "bool" else 0.0 if t and t.kind == "float" else 0
            )
            return [fill] * min(total, limit)
        if c.kind == "replicate":
            inner = self._values(c.parts[0], limit, budget, depth + 1) if c.parts else []
            if not inner:
                return []
            reps = -(-min(total, limit) // len(inner))
            return (inner * reps)[: min(total, limit)]
        out: list[int | float | bool] = []
        for p in c.parts:
            if len(out) >= limit or budget[0] < 0:
                break
            out.extend(self._values(p, limit - len(out), budget, depth + 1))
        return out

    def _scalar_type(self, type_id: int) -> int:
        seen = 0
        t = self.types.get(type_id)
        while t is not None and t.kind in ("array", "vector", "tensor", "runtime_array"):
            seen += 1
            if seen > 64:  # a type cycle (corrupt module)
                break
            type_id = t.element
            t = self.types.get(type_id)
        return type_id

    def tensor_shape(self, type_id: int) -> list[int] | None:
        """The shape of a tensor type, when it is a constant array of integers."""
        t = self.types.get(type_id)
        if t is None or t.kind != "tensor" or t.shape is None:
            return None
        c = self.constants.get(t.shape)
        if c is None:
            return None
        if c.kind == "composite":
            dims = [self.integer(p) for p in c.parts]
            return None if any(d is None for d in dims) else [int(d or 0) for d in dims]
        rank = self.integer(t.rank)
        if c.kind in ("null", "replicate") and rank is not None and rank <= 64:
            fill = 0 if c.kind == "null" else self.integer(c.parts[0] if c.parts else None)
            return None if fill is None else [fill] * rank
        return None

    def dtype(self, type_id: int) -> str:
        """A readable element type ("int8", "float32", "bool") of a scalar or tensor type."""
        t = self.types.get(self._scalar_type(type_id))
        if t is None:
            return ""
        if t.kind == "int":
            # TOSA's integer tensors are signless in SPIR-V (signedness 0): int8, int32 ...
            return f"int{t.width}"
        if t.kind == "float":
            if t.encoding == "BFloat16KHR":
                return "bfloat16"
            if t.encoding:
                return t.encoding
            return f"float{t.width}"
        return t.kind

    def type_text(self, type_id: int) -> str:
        """What a type is, for attributes: "tensor<int8>[1, 16, 16, 8]", "uint32", "bool[4]"."""
        t = self.types.get(type_id)
        if t is None:
            return f"%{type_id}"
        if t.kind == "tensor":
            shape = self.tensor_shape(type_id)
            dims = "?" if shape is None else ", ".join(str(d) for d in shape)
            return f"tensor<{self.dtype(type_id)}>[{dims}]"
        if t.kind == "array":
            return f"{self.type_text(t.element)}[{self.integer(t.count)}]"
        if t.kind == "int":
            return f"{'int' if t.signed else 'uint'}{t.width}"
        if t.kind == "float":
            return self.dtype(type_id)
        if t.kind == "pointer":
            return f"{t.storage} {self.type_text(t.element)}*"
        return t.kind

    def id_name(self, i: int) -> str:
        return self.names.get(i) or f"%{i}"
