"""Read a TOSA 1.x flatbuffer into a small typed model.

Everything goes through the bounds-checked `pte_adapter.container.flatbuf` reader, addressed by the field
slots the generator took from the pinned schemas (`_generated/tosa_schema.py`). Constant tensor data is never
copied: a tensor records only where its bytes are and how many there are (small constants, such as
RESCALE multipliers and zero points, also get their values, because those make a quantized graph
readable).

TOSA 0.x graphs use the same file identifier with a different operator enum and table layout, so a
graph is accepted only when its version says 1.x; anything else is a `PteFormatError` that names
the version, rather than a graph of wrong operator names.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from itertools import islice
from typing import Final

from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.delegates.tosa._generated import tosa_schema as T
from pte_adapter.program.model import saturating_numel

IDENTIFIER: Final = b"TOSA"

# Minor versions of TOSA 1 whose schema this reader was generated from.
KNOWN_MINORS: Final = (0, 1)

# Readable dtype names: the schema's names, lower-cased, except that floating-point types use the
# names the rest of the adapter (and PyTorch) use, so a TOSA tensor and a Vela tensor compare.
_FLOAT_NAMES: Final = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16"}

# struct formats for reading a few elements of a constant (bf16 handled separately).
_ELEMENT_FORMATS: Final = {
    "BOOL": "?",
    "INT8": "b",
    "INT16": "h",
    "INT32": "i",
    "INT64": "q",
    "FP32": "f",
    "FP16": "e",
    "SHAPE": "q",  # TOSA 1.0 shape values are 64-bit
}

# Constants with at most this many elements get their values shown.
SMALL_CONSTANT_ELEMENTS: Final = 16
# Operators one block shows, as Ethos-U's command stream is capped (a MobileNetV2 holds a few
# hundred; each costs every view work): past them the rest is counted, not read (a problem).
MAX_OPERATORS: Final = 20_000

_SCALAR_FORMATS: Final = {
    "bool": "B",
    "byte": "b",
    "ubyte": "B",
    "int8": "b",
    "uint8": "B",
    "short": "h",
    "int16": "h",
    "ushort": "H",
    "uint16": "H",
    "int": "i",
    "int32": "i",
    "uint": "I",
    "uint32": "I",
    "long": "q",
    "int64": "q",
    "ulong": "Q",
    "uint64": "Q",
    "float": "f",
    "float32": "f",
    "double": "d",
    "float64": "d",
}

_CONTROL_FLOW_FIELDS: Final = {
    "COND_IF": ("then_graph", "else_graph"),
    "WHILE_LOOP": ("cond_graph", "body_graph"),
}


def tosa_dtype_name(code: int) -> str:
    name = T.DTYPE_NAMES.get(code)
    if name is None:
        return f"dtype_{code}"
    return _FLOAT_NAMES.get(name, name.lower())


@dataclass
class TosaVersion:
    major: int
    minor: int
    patch: int
    draft: bool

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}{' (draft)' if self.draft else ''}"


@dataclass
class TosaTensor:
    name: str
    shape: list[int] | None  # None when unranked
    dtype: str  # readable name, see tosa_dtype_name
    tosa_dtype: str  # the schema's name, e.g. "INT8", "FP32", "SHAPE"
    data_size: int = 0  # bytes of inline constant data
    data_offset: int | None = None  # absolute offset of those bytes (buffer base included)
    values: list[int] | list[float] | None = None  # small constants only
    variable: bool = False
    variable_name: str = ""
    unranked: bool = False
    external_offset: int = 0  # >2 GB models keep data outside the flatbuffer
    external_size: int = 0
    is_shape: bool = False  # declared in the block's `shapes`, not `tensors`


@dataclass
class TosaOperator:
    index: int
    code: int
    kind: str  # Op enum name, or OP_<n> for a value this reader does not know
    attrs: dict[str, str]
    inputs: list[str]
    outputs: list[str]
    location: str | None = None
    # Control flow: (attribute field, block/region name it names), e.g. ("then_graph", "cond_true").
    block_refs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class TosaBlock:
    region: str
    name: str
    operators: list[TosaOperator]
    tensors: dict[str, TosaTensor]
    inputs: list[str]
    outputs: list[str]


@dataclass
class TosaModel:
    version: TosaVersion
    blocks: list[TosaBlock]  # main block first
    software_version: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def main(self) -> TosaBlock:
        return self.blocks[0]


def read_tosa(
    data: memoryview | bytes | bytearray, part: str = "TOSA graph", *, base: int = 0
) -> TosaModel:
    """Parse a TOSA flatbuffer. Raises `PteFormatError` (only) for bytes that are not TOSA 1.x."""
    fb = FlatBuffer(data, part, base=base)
    root = fb.root(IDENTIFIER)
    version = _read_version(root)
    problems: list[str] = []
    if version.major != 1:
        if version.major == 0:
            raise fb.error(
                f"TOSA {version} graph: 0.x graphs use a different operator set and are not "
                "supported (this reader reads TOSA 1.0 and 1.1)",
                0,
            )
        raise fb.error(
            f"TOSA {version} graph: unsupported version (this reader reads 1.0 and 1.1)", 0
        )
    if version.minor not in KNOWN_MINORS:
        problems.append(
            f"TOSA {version} is newer than the schemas this reader knows (1.0, 1.1); "
            "unknown operators and fields are shown by number"
        )
    known_ops = _known_op_count(version)
    sw = ""
    sw_table = root.table(T.SLOTS["TosaGraph"]["software_version"], "software_version")
    if sw_table is not None:
        s = T.SLOTS["SoftwareVersion"]
        sw = ".".join(str(sw_table.int(s[k], default=-1)) for k in ("_major", "_minor", "_micro"))
        modifier = sw_table.string(s["_modifier"], "_modifier")
        if modifier:
            sw += f"-{modifier}"
    blocks: list[TosaBlock] = []
    rs = T.SLOTS["TosaRegion"]
    for r_i, region in enumerate(
        root.iter_tables(T.SLOTS["TosaGraph"]["regions"], "regions", once=True)
    ):
        rname = region.string(rs["name"], "name") or f"region{r_i}"
        for b_i, block in enumerate(region.iter_tables(rs["blocks"], "blocks", once=True)):
            blocks.append(_read_block(block, rname, b_i, known_ops, version, problems))
    if not blocks:
        raise fb.error("TOSA graph has no basic block", 0)
    main_at = next((i for i, b in enumerate(blocks) if b.region == "main"), 0)
    blocks.insert(0, blocks.pop(main_at))
    return TosaModel(version, blocks, sw, problems)


def _read_version(root: Table) -> TosaVersion:
    vt = root.table(T.SLOTS["TosaGraph"]["version"], "version")
    if vt is None:
        raise root.fb.error("TosaGraph.version is required but absent", root.pos)
    s = T.SLOTS["Version"]
    return TosaVersion(
        vt.int(s["_major"], default=-1),
        vt.int(s["_minor"], default=-1),
        vt.int(s["_patch"], default=-1),
        vt.bool(s["_draft"], default=True),
    )


def _known_op_count(version: TosaVersion) -> int:
    """How many Op enum values the schema of `version` defines (newest known for newer minors)."""
    label = f"{version.major}.{version.minor}"
    return T.OP_COUNT_BY_SCHEMA.get(label, max(T.OP_COUNT_BY_SCHEMA.values()))


def _read_block(
    block: Table, region: str, index: int, known_ops: int, version: TosaVersion, problems: list[str]
) -> TosaBlock:
    s = T.SLOTS["TosaBasicBlock"]
    name = block.string(s["name"], "name") or f"{region}.block{index}"
    tensors: dict[str, TosaTensor] = {}
    for t in block.iter_tables(s["tensors"], "tensors"):
        tensor = _read_tensor(t)
        tensors.setdefault(tensor.name, tensor)
    for sh in block.iter_tables(s["shapes"], "shapes"):
        shape = _read_shape(sh)
        tensors.setdefault(shape.name, shape)
    total = block.vector_len(s["operators"])
    if total > MAX_OPERATORS:
        problems.append(
            f"block {name}: {total} operators, more than {MAX_OPERATORS}; the first "
            f"{MAX_OPERATORS} are shown and counted"
        )
    operators = [
        _read_operator(op, i, tensors, known_ops, version, problems, name)
        for i, op in enumerate(
            islice(block.iter_tables(s["operators"], "operators", once=True), MAX_OPERATORS)
        )
    ]
    return TosaBlock(
        region,
        name,
        operators,
        tensors,
        block.strings(s["inputs"], "inputs"),
        block.strings(s["outputs"], "outputs"),
    )


def _read_tensor(t: Table) -> TosaTensor:
    s = T.SLOTS["TosaTensor"]
    code = t.int(s["type"], "I")
    tosa_dtype = T.DTYPE_NAMES.get(code, f"DTYPE_{code}")
    unranked = t.bool(s["is_unranked"])
    shape = None if unranked else t.ints(s["shape"], "i", "shape")
    tensor = TosaTensor(
        name=t.string(s["name"], "name") or "",
        shape=shape,
        dtype=tosa_dtype_name(code),
        tosa_dtype=tosa_dtype,
        variable=t.bool(s["variable"]),
        variable_name=t.string(s["variable_name"], "variable_name") or "",
        unranked=unranked,
        external_offset=t.int(s["offset"], "Q"),
        external_size=t.int(s["size"], "Q"),
    )
    _attach_data(t, s["data"], tensor)
    return tensor


def _read_shape(t: Table) -> TosaTensor:
    s = T.SLOTS["TosaShape"]
    rank = t.int(s["rank"], "I")
    tensor = TosaTensor(
        name=t.string(s["name"], "name") or "",
        shape=[rank],
        dtype="shape",
        tosa_dtype="SHAPE",
        is_shape=True,
    )
    _attach_data(t, s["data"], tensor)
    return tensor


def _attach_data(t: Table, slot: int, tensor: TosaTensor) -> None:
    span = t.bytes_span(slot, "data")
    # Writers emit an empty data vector for every non-constant tensor.
    if span is None or span[1] == 0:
        return
    tensor.data_offset, tensor.data_size = span
    fmt = _ELEMENT_FORMATS.get(tensor.tosa_dtype)
    if fmt is None:
        return
    width = struct.calcsize(fmt)
    count = tensor.data_size // width
    if tensor.shape is not None and not tensor.is_shape:
        # Data is padded (force_align: 8), so the shape, not the byte count, says how many values.
        count = min(count, _numel(tensor.shape))
    if 0 < count <= SMALL_CONSTANT_ELEMENTS:
        start = tensor.data_offset - t.fb.base
        tensor.values = list(struct.unpack_from(f"<{count}{fmt}", t.fb.data, start))


def _numel(shape: list[int]) -> int:
    return saturating_numel(shape)  # a corrupt shape must not build a huge integer


def _read_operator(
    op: Table,
    index: int,
    tensors: dict[str, TosaTensor],
    known_ops: int,
    version: TosaVersion,
    problems: list[str],
    block: str,
) -> TosaOperator:
    s = T.SLOTS["TosaOperator"]
    code = op.int(s["op"], "I")
    kind = T.OP_NAMES.get(code, f"OP_{code}")
    attrs: dict[str, str] = {}
    where = f"block {block!r} operator {index}"
    if code not in T.OP_NAMES:
        problems.append(f"{where}: unknown TOSA operator {code}")
    elif code >= known_ops:
        attrs["schema_note"] = (
            f"{kind} is not part of the TOSA {version.major}.{version.minor} schema"
        )
        problems.append(f"{where}: {attrs['schema_note']}")
    inputs = op.strings(s["inputs"], "inputs")
    outputs = op.strings(s["outputs"], "outputs")
    tag, attr_table = op.union(s["attribute"], "attribute")
    block_refs: list[tuple[str, str]] = []
    if tag:
        spec = T.ATTRIBUTE_TABLES.get(tag)
        if spec is None:
            attrs["attribute"] = f"unknown attribute kind {tag}"
        else:
            table_name, fields = spec
            # The Attribute union lists one table per operator, in operator order.
            if tag != code:
                attrs["attribute_kind"] = table_name
            if attr_table is not None:
                first_input = tensors.get(inputs[0]) if inputs else None
                element = first_input.tosa_dtype if first_input is not None else ""
                attrs.update(_decode_attribute(attr_table, fields, element))
                for key in _CONTROL_FLOW_FIELDS.get(kind, ()):
                    target = attrs.get(key)
                    if target:
                        block_refs.append((key, target))
    location = None
    loc = op.table(s["location"], "location")
    if loc is not None:
        location = loc.string(T.SLOTS["OpLocation"]["text"], "text")
    return TosaOperator(index, code, kind, attrs, inputs, outputs, location, block_refs)


def _decode_attribute(
    table: Table, fields: tuple[tuple[str, str], ...], element: str
) -> dict[str, str]:
    """Turn an attribute table into readable name -> value strings, by the schema's field types."""
    out: dict[str, str] = {}
    for slot, (name, ftype) in enumerate(fields):
        if ftype.startswith("["):
            inner = ftype[1:-1]
            if not table.has(slot):
                continue
            if inner in ("ubyte", "byte"):
                out[name] = _format_raw_value(table, slot, name, element)
            elif inner == "string":
                out[name] = repr(table.strings(slot, name))
            else:
                fmt = _SCALAR_FORMATS.get(inner) or _SCALAR_FORMATS.get(
                    T.ENUM_BASE_TYPES.get(inner, ""), ""
                )
                if not fmt:
                    out[name] = f"<{ftype}>"
                    continue
                out[name] = str(table.scalars(slot, fmt, name))
        elif ftype == "string":
            value = table.string(slot, name)
            if value is not None:
                out[name] = value
        elif ftype in _SCALAR_FORMATS:
            fmt = _SCALAR_FORMATS[ftype]
            if fmt == "B" and ftype == "bool":
                out[name] = str(table.bool(slot)).lower()
            elif fmt in "fd":
                out[name] = repr(table.float(slot, fmt))
            else:
                out[name] = str(table.int(slot, fmt))
        elif ftype in T.ENUM_BASE_TYPES:
            fmt = _SCALAR_FORMATS.get(T.ENUM_BASE_TYPES[ftype], "I")
            number = table.int(slot, fmt)
            if ftype == "DType":
                out[name] = tosa_dtype_name(number)
            else:
                out[name] = T.ENUM_NAMES.get(ftype, {}).get(number, str(number))
        else:
            out[name] = f"<{ftype}>"
    return out


def _format_raw_value(table: Table, slot: int, name: str, element: str) -> str:
    """A [ubyte] attribute (CLAMP min/max, CUSTOM payload): values in the input's element type."""
    raw = table.bytes_view(slot, name)
    if raw is None:
        return ""
    fmt = _ELEMENT_FORMATS.get(element)
    if element == "BF16" and len(raw) % 2 == 0 and len(raw) <= 64:
        halves = struct.unpack_from(f"<{len(raw) // 2}H", raw)
        vals: list[float] | list[int] = [
            struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves
        ]
        return _join(vals)
    if fmt is not None:
        width = struct.calcsize(fmt)
        if len(raw) % width == 0 and 0 < len(raw) // width <= SMALL_CONSTANT_ELEMENTS:
            return _join(list(struct.unpack_from(f"<{len(raw) // width}{fmt}", raw)))
    head = bytes(raw[:32]).hex(" ")
    return f"{len(raw)} bytes: {head}{' ...' if len(raw) > 32 else ''}"


def _join(values: list[int] | list[float] | list[bool]) -> str:
    text = [repr(v) if isinstance(v, float) else str(v) for v in values]
    return text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"
