"""Read an ETDump (`.etdp`): the events an ExecuTorch runtime recorded while it ran a program.

Format (ExecuTorch `devtools/etdump/etdump_schema_flatcc.fbs`, written by flatcc): a size-prefixed
FlatBuffer — bytes 0-3 hold the length of the buffer that follows, whose identifier is `ED00`
(ExecuTorch's Python serializer writes the same FlatBuffer without the prefix: read too).
The root holds one `RunData` per event block the runtime opened: loading a method gives a block
named "Default" (`Program::load_method`, `Method::init`), each `Method::execute` a block named
"Execute". A block's events are profile events (name, chain and instruction, or the delegate's own
debug id, start/end ticks), allocation events and debug events (intermediate values: each a
`LoggedValue`, whose tensors are references into the run's debug buffer, read by
`container/debug_buffer.py`; scalars are stored in the event itself).

The ETDump does not name the method a block ran: `join.py` finds it from the instructions.

Everything goes through the bounds-checked reader in `flatbuf.py`, whose work budget is linear in the
file size, so a corrupt or hostile file costs at most a few passes over its bytes. Any defect raises
`PteFormatError` (or its `LimitExceededError`) saying where.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Final

from pte_adapter.container import files
from pte_adapter.container._generated.etdump_schema import ENUMS, FILE_IDENTIFIER, TABLES, Field
from pte_adapter.container.flatbuf import FlatBuffer, Table
from pte_adapter.errors import LimitExceededError, PteFormatError

SIZE_PREFIX: Final = 4
# The largest ETDump this reader opens (a million events is about 100 MB): beyond that the file is
# not one a person profiles by hand, and reading it would hold that much in Python objects.
MAX_FILE_BYTES: Final = 256 << 20
# Events over all runs (a run of a large model records a few thousand); event tables may not be
# shared either (`FlatBuffer.claim`).
MAX_EVENTS: Final = 2_000_000

_ROOT = TABLES["ETDump"]
_RUN = TABLES["RunData"]
_EVENT = TABLES["Event"]
_PROFILE = TABLES["ProfileEvent"]
_ALLOC = TABLES["AllocationEvent"]
_DEBUG = TABLES["DebugEvent"]
_VALUE = TABLES["Value"]
_ALLOCATOR = TABLES["Allocator"]
_TENSOR = TABLES["Tensor"]
_TENSOR_LIST = TABLES["TensorList"]
_PROFILE_SCALARS: Final = tuple(
    _PROFILE[f]
    for f in ("chain_index", "instruction_id", "delegate_debug_id_int", "start_time", "end_time")
)
_STRUCTS: Final = {f: struct.Struct("<" + f) for f in "bBhHiIqQ"}


@dataclass(frozen=True)
class ProfileEvent:
    index: int  # position among all events of its run (profile, allocation and debug together)
    name: str  # "" when the runtime gave none (delegate events often carry only a debug id)
    chain_index: int  # -1: not an instruction of a chain (Method::execute, load events)
    instruction_id: int  # -1: none
    delegate_debug_id_int: int  # -1: none
    delegate_debug_id_str: str  # "": none
    start: int  # ticks (nanoseconds for the host runtime)
    end: int
    metadata_bytes: int = 0  # size of delegate_debug_metadata

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def is_delegate_internal(self) -> bool:
        """Logged by a delegate about its own work (XNNPACK: one per runtime operator)."""
        return self.delegate_debug_id_int != -1 or bool(self.delegate_debug_id_str)

    @property
    def label(self) -> str:
        """What the event is called: its name, else the delegate's debug id (as Inspector does)."""
        if self.name:
            return self.name
        if self.delegate_debug_id_str:
            return self.delegate_debug_id_str
        return str(self.delegate_debug_id_int)


@dataclass(frozen=True)
class AllocationEvent:
    index: int
    allocator_id: int
    size: int


# Dimensions of a logged tensor (ExecuTorch's kTensorDimensionLimit is 16); a deeper one is refused.
MAX_RANK: Final = 16


@dataclass(frozen=True)
class TensorRef:
    """A logged tensor: its dtype, sizes and where its bytes start in the debug buffer (the bytes
    are `elements x element size` from there, dense: `container/debug_buffer.py`)."""

    scalar_type: int  # ScalarType value (`scalar_type_name` names it)
    sizes: tuple[int, ...]
    offset: int  # in the debug buffer; as recorded (it may be negative or past the end)
    strides: tuple[int, ...] = ()

    @property
    def dtype(self) -> str:
        return scalar_type_name(self.scalar_type)


@dataclass(frozen=True)
class LoggedValue:
    """What one debug event logged: a tensor or a list of them (in the debug buffer), or a
    scalar (in the ETDump itself)."""

    kind: str  # its ValueType: "Tensor", "TensorList", "Int", "Bool", "Float", "Double", ...
    tensors: tuple[TensorRef, ...] = ()
    scalar: int | float | bool | str | None = None
    # Logged as one of the method's outputs at the end of the run (`Value.output`), not as an
    # instruction's.
    is_output: bool = False


@dataclass(frozen=True)
class DebugEvent:
    index: int
    name: str
    chain_index: int
    instruction_id: int
    delegate_debug_id_int: int
    delegate_debug_id_str: str
    value_type: str  # the ValueType of its entry ("Tensor", "Int", ...); "" when absent
    # Its `Value` table, read into a LoggedValue on first use (`value`): a view that compares no
    # numbers (the measured-time overlay) never pays for the tensors' sizes and offsets.
    entry: Table | None = field(default=None, compare=False, repr=False)

    @cached_property
    def value(self) -> LoggedValue | None:
        """What it logged; raises `PteFormatError` when its table is malformed."""
        return _read_value(self.value_type, self.entry) if self.entry is not None else None

    @property
    def is_delegate_internal(self) -> bool:
        """Logged by a delegate about its own work, with its own debug id."""
        return self.delegate_debug_id_int != -1 or bool(self.delegate_debug_id_str)


def scalar_type_name(tag: int) -> str:
    """`FLOAT`, `CHAR`, ... (the ScalarType enum's names); `ScalarType_<n>` for another value."""
    return ENUMS["ScalarType"].get(tag, f"ScalarType_{tag}")


@dataclass
class RunData:
    index: int  # position in the file
    name: str  # "Execute", "Default", ...
    bundled_input_index: int
    allocators: list[str] = field(default_factory=list)
    profile_events: list[ProfileEvent] = field(default_factory=list)
    allocation_events: list[AllocationEvent] = field(default_factory=list)
    debug_events: list[DebugEvent] = field(default_factory=list)
    empty_events: int = 0  # Event tables with none of the three members set


@dataclass
class ETDump:
    name: str
    size: int
    version: int
    runs: list[RunData]


def _num(t: Table, spec: Field) -> int:
    """An integer scalar field, with the schema's default when absent."""
    return int(t.scalar(spec.slot, spec.fmt, int(spec.default)))


def _nums(t: Table, specs: tuple[Field, ...]) -> list[int]:
    """Several integer scalar fields of one table from its vtable's offsets (`Table.offsets`).

    An ETDump holds hundreds of thousands of events, each with half a dozen scalars: reading
    them one `Table.scalar` call at a time dominated the read. The checks are those of
    `Table._field`: a field starts after the table's header and lies inside the buffer (`table_at`
    has already checked that the whole vtable is in the buffer)."""
    fb = t.fb
    offsets = t.offsets
    n = len(offsets)
    out: list[int] = []
    for spec in specs:
        off = offsets[spec.slot] if spec.slot < n else 0
        if off == 0:
            out.append(int(spec.default))
            continue
        if off < 4:
            raise fb.error(f"{t.what}: field {spec.name} overlaps the table header", t.pos)
        reader = _STRUCTS[spec.fmt]
        pos = t.pos + off
        if pos + reader.size > fb.size:
            raise fb.error(f"{t.what}: field {spec.name} runs past the end of the buffer", pos)
        out.append(int(reader.unpack_from(fb.data, pos)[0]))
    return out


def _text(t: Table, spec: Field) -> str:
    return t.string(spec.slot, spec.name) or ""


def read_etdump(data: bytes | bytearray | memoryview, name: str = "<etdump>") -> ETDump:
    """Parse an ETDump. Raises `PteFormatError` when the bytes are not one."""
    data = memoryview(data).cast("B")
    size = len(data)
    if size > MAX_FILE_BYTES:
        raise PteFormatError(f"ETDump of {size} bytes is larger than {MAX_FILE_BYTES}", part=name)
    if size < SIZE_PREFIX + 8:
        raise PteFormatError(f"too small for an ETDump ({size} bytes)", part=name, offset=0)
    if bytes(data[4:8]) == FILE_IDENTIFIER:
        # No size prefix: as ExecuTorch's Python serializer (`serialize_to_etdump_flatcc`)
        # writes one; the runtime's writer always prefixes it. (A prefixed file would need a
        # root offset of 808 MB to show the identifier here.)
        return _read_root(FlatBuffer(data, name), name, size)
    length = int.from_bytes(data[:SIZE_PREFIX], "little")
    if length > size - SIZE_PREFIX or length < 8:
        raise PteFormatError(
            f"size prefix says {length} bytes follow, but {size - SIZE_PREFIX} do",
            part=name,
            offset=0,
        )
    fb = FlatBuffer(data[SIZE_PREFIX : SIZE_PREFIX + length], name, base=SIZE_PREFIX)
    if fb.identifier() != FILE_IDENTIFIER:
        raise PteFormatError(
            f"not an ETDump: expected identifier {FILE_IDENTIFIER!r}, found {fb.identifier()!r}"
            " (an ETDump is size-prefixed: the identifier sits at bytes 8-11)",
            part=name,
            offset=SIZE_PREFIX + 4,
        )
    return _read_root(fb, name, size)


def _read_root(fb: FlatBuffer, name: str, size: int) -> ETDump:
    root = fb.root(FILE_IDENTIFIER)
    version = root.int(_ROOT["version"].slot, _ROOT["version"].fmt)
    run_tables = root.iter_tables(_ROOT["run_data"].slot, "run_data", once=True)
    runs = []
    events = 0
    for i, t in enumerate(run_tables):
        events += t.vector_len(_RUN["events"].slot)
        if events > MAX_EVENTS:
            raise LimitExceededError(
                f"more than {MAX_EVENTS} events (limit {MAX_EVENTS})", part=name
            )
        runs.append(_read_run(i, t))
    return ETDump(name, size, version, runs)


def load_etdump(path: str | Path, inside: Path | None = None) -> ETDump:
    """The ETDump at `path`: a regular file (inside the folder `inside`, when given) of at most
    MAX_FILE_BYTES, checked before a byte is read (`container/files.py`)."""
    path = Path(path)
    data = files.read_regular(path, MAX_FILE_BYTES, path.name, inside)
    return read_etdump(data, path.name)


def _read_run(index: int, t: Table) -> RunData:
    run = RunData(index, _text(t, _RUN["name"]), _num(t, _RUN["bundled_input_index"]))
    run.allocators = [
        _text(a, _ALLOCATOR["name"]) for a in t.iter_tables(_RUN["allocators"].slot, "allocators")
    ]
    for i, ev in enumerate(t.iter_tables(_RUN["events"].slot, "events", once=True)):
        profile = ev.table(_EVENT["profile_event"].slot, "profile_event")
        if profile is not None:
            run.profile_events.append(_read_profile(i, profile))
            continue
        alloc = ev.table(_EVENT["allocation_event"].slot, "allocation_event")
        if alloc is not None:
            run.allocation_events.append(
                AllocationEvent(
                    i, _num(alloc, _ALLOC["allocator_id"]), _num(alloc, _ALLOC["allocation_size"])
                )
            )
            continue
        debug = ev.table(_EVENT["debug_event"].slot, "debug_event")
        if debug is not None:
            run.debug_events.append(_read_debug(i, debug))
            continue
        run.empty_events += 1
    return run


def _read_profile(index: int, t: Table) -> ProfileEvent:
    chain, instruction, delegate_id, start, end = _nums(t, _PROFILE_SCALARS)
    return ProfileEvent(
        index=index,
        name=_text(t, _PROFILE["name"]),
        chain_index=chain,
        instruction_id=instruction,
        delegate_debug_id_int=delegate_id,
        delegate_debug_id_str=_text(t, _PROFILE["delegate_debug_id_str"]),
        start=start,
        end=end,
        metadata_bytes=t.vector_len(
            _PROFILE["delegate_debug_metadata"].slot, 1, "delegate_debug_metadata"
        ),
    )


def _read_debug(index: int, t: Table) -> DebugEvent:
    value_type = ""
    entry = t.table(_DEBUG["debug_entry"].slot, "debug_entry")
    if entry is not None:
        spec = _VALUE["val"]
        tag = _num(entry, spec)
        value_type = ENUMS[spec.ref].get(tag, f"ValueType_{tag}")
    return DebugEvent(
        index=index,
        name=_text(t, _DEBUG["name"]),
        chain_index=_num(t, _DEBUG["chain_index"]),
        instruction_id=_num(t, _DEBUG["instruction_id"]),
        delegate_debug_id_int=_num(t, _DEBUG["delegate_debug_id_int"]),
        delegate_debug_id_str=_text(t, _DEBUG["delegate_debug_id_str"]),
        value_type=value_type,
        entry=entry,
    )


_SCALARS: Final = {
    "Int": ("int_value", "Int", "int_val"),
    "Bool": ("bool_value", "Bool", "bool_val"),
    "Float": ("float_value", "Float", "float_val"),
    "Double": ("double_value", "Double", "double_val"),
}


def _read_value(kind: str, entry: Table) -> LoggedValue:
    """A debug event's `Value`: its tensors' references, or its scalar."""
    output = entry.table(_VALUE["output"].slot, "output")
    is_output = output is not None and bool(_num(output, TABLES["Bool"]["bool_val"]))
    tensors: tuple[TensorRef, ...] = ()
    scalar: int | float | bool | str | None = None
    if kind == "Tensor":
        one = entry.table(_VALUE["tensor"].slot, "tensor")
        tensors = (_read_tensor(one),) if one is not None else ()
    elif kind == "TensorList":
        tl = entry.table(_VALUE["tensor_list"].slot, "tensor_list")
        if tl is not None:
            tensors = tuple(
                _read_tensor(x) for x in tl.iter_tables(_TENSOR_LIST["tensors"].slot, "tensors")
            )
    elif kind in _SCALARS:
        field_name, table_name, value_name = _SCALARS[kind]
        holder = entry.table(_VALUE[field_name].slot, field_name)
        if holder is not None:
            spec = TABLES[table_name][value_name]
            raw = holder.scalar(spec.slot, spec.fmt, spec.default)
            scalar = bool(raw) if kind == "Bool" else raw
    return LoggedValue(kind, tensors, scalar, is_output)


def _read_tensor(t: Table) -> TensorRef:
    sizes = t.ints(_TENSOR["sizes"].slot, "q", "sizes")
    if len(sizes) > MAX_RANK:
        raise t.fb.error(f"a logged tensor of {len(sizes)} dimensions (limit {MAX_RANK})", t.pos)
    strides = t.ints(_TENSOR["strides"].slot, "q", "strides")[:MAX_RANK]
    return TensorRef(
        scalar_type=_num(t, _TENSOR["scalar_type"]),
        sizes=tuple(sizes),
        offset=_num(t, _TENSOR["offset"]),
        strides=tuple(strides),
    )
