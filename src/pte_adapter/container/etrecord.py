"""A bounded, torch-free reader for the JSON parts of an ExecuTorch ETRecord.

An ETRecord (`<stem>.etrecord`, written by `ETRecord.save`) is a zip. Only its JSON parts are read:

- `ETRECORD_V0`: empty marker file; without it this is not an ETRecord.
- `debug_handle_map`: `{method: {instruction id: debug handle | [debug handles]}}`. The instruction
  id is the instruction's index within its chain; a delegate call lists every handle it absorbed.
- `delegate_map`: `{method: {instruction id: {"name": backend id, "delegate_map": ...}}}`.
- `edge_dialect_exported_program/<method>` (older files: one `edge_dialect_exported_program`, the
  `forward` method): torch.export's JSON serialisation of the edge graph before delegation. Each
  node has a `target` and string `metadata`: `debug_handle`, `nn_module_stack`
  (`key,path,class;key,path,class;...`, outermost module first), `stack_trace`, `torch_fn`; its
  `inputs` and `outputs` name tensors (`as_tensor`, `as_tensors`: the graph's dataflow), whose
  `sizes` the graph's `tensor_values` hold (kept when all static). The graph's `signature` names
  the method's inputs (`user_input`, in order; the rest are weights, buffers and constants) and
  its `outputs` the tensors it returns.
  Its `from_node` metadata (a JSON text: the chain of nodes it was made from, each with its
  graph's `graph_id`) gives the name of the node it came from in the ATen graph
  (`exported_program`, whose graph id the part `export_graph_id` holds): the name ExecuTorch's
  Inspector gives its rows (`conv2d_1`), read when asked by the one provenance reader the
  ETRecord's graphs use too (`export_json.provenance`: the Inspector's walk, bounded).

Parts named `*_state_dict`, `*_constants`, `*_example_inputs`, `reference_outputs` and
`representative_inputs` are pickles or torch archives: never opened. The work is bounded: the
number of zip entries, the bytes of each JSON part after decompression (a zip bomb stops at the
limit, whatever the header claims), the values all JSON parts may build (counted before parsing:
`container/files.py`), JSON nesting (Python's parser raises RecursionError, caught), the number of
graph nodes, and each debug handle's nodes (`MAX_NODES_PER_HANDLE`). Anything malformed raises `PteFormatError` naming the part.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import IO, Any, TypeVar

from pte_adapter.container import files
from pte_adapter.container.export_json import (
    arguments,
    graph_io,
    number_args,
    output_shapes,
    provenance,
    static_shapes,
    tensor_names,
)
from pte_adapter.errors import LimitExceededError, PteFormatError

IDENTIFIER = "ETRECORD_V0"
DEBUG_HANDLE_MAP = "debug_handle_map"
DELEGATE_MAP = "delegate_map"
EDGE_PROGRAM = "edge_dialect_exported_program"
EXPORTED_PROGRAM = "exported_program"  # the ATen graph torch.export made
EXPORT_GRAPH_ID = "export_graph_id"  # its graph id, the key of its nodes in `from_node` chains

MAX_ENTRIES = 10_000  # zip members; a real ETRecord has ~4 per recorded graph
MAX_JSON_PART = 64 << 20  # bytes of one JSON part after decompression
MAX_JSON_TOTAL = 256 << 20  # bytes of all JSON parts read
MAX_NODES = 1_000_000  # graph nodes over all methods
# Bytes a JSON part may inflate to: 1 MiB, plus 64 per zipped byte (ETRecord.save's parts inflate
# 2-37 times; a part of repeated nodes made to be parsed slowly, 150-450 times). Work stays linear
# in the file's size: a few KB zipped cannot become seconds of parsing.
MAX_INFLATED_FLOOR = 1 << 20
MAX_INFLATION = 64
# Nodes of one debug handle: a handle marks one node of the exported graph, and the edge nodes it
# was decomposed into share it (a handful; an instruction's join walks them all).
MAX_NODES_PER_HANDLE = 1_000
MAX_STACK_TEXT = 64 << 10  # characters of one stack trace kept

_PICKLED_SUFFIXES = ("_state_dict", "_constants", "_example_inputs")


@dataclass
class FxNode:
    """One node of the recorded edge graph (what the adapter needs of it)."""

    name: str
    target: str  # "aten.avg_pool3d.default" (edge dialect prefix removed), or as recorded
    debug_handle: int | None
    module_stack: list[tuple[str, str]]  # (fully qualified path, class), outermost first
    stack_trace: str = ""
    torch_fn: str = ""
    # The static sizes of each tensor it outputs (an output with a symbolic size is left out).
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    # Its `from_node` text (searched only when asked: `aten_name`, `origin`) and the ATen graph's
    # id (the part `export_graph_id`), so a view that names no row pays nothing for them.
    provenance: str = field(default="", repr=False)
    export_graph: int | None = field(default=None, repr=False)
    # The tensors it reads and writes, by name (the graph's edges).
    inputs: tuple[str, ...] = field(default=(), repr=False)
    outputs: tuple[str, ...] = field(default=(), repr=False)
    # Each argument that is a number (`as_float`, `as_int`), else None, in argument order: a
    # quantize node's scale and zero point.
    numbers: tuple[float | int | None, ...] = field(default=(), repr=False)

    @cached_property
    def aten_name(self) -> str:
        """The node it came from in the ATen graph (`conv2d_1`: the Inspector's name for it when
        the ETRecord holds that graph); "" when its provenance does not reach it."""
        return _provenance(self.provenance, self.export_graph)[0]

    @cached_property
    def origin(self) -> str:
        """The first node of its provenance: for a quantize/dequantize node, the node whose
        output it quantizes (`relu_1`); "" when not recorded."""
        return _provenance(self.provenance, self.export_graph)[1]

    @property
    def module(self) -> tuple[str, str] | None:
        """The innermost module the node came from."""
        return self.module_stack[-1] if self.module_stack else None


@dataclass
class EtRecordMethod:
    name: str
    debug_handles: dict[int, list[int]]  # instruction id (within its chain) -> debug handles
    delegates: dict[int, str]  # delegate instruction id -> backend id
    nodes: list[FxNode] = field(default_factory=list)
    nodes_by_handle: dict[int, list[FxNode]] = field(default_factory=dict)
    user_inputs: tuple[str, ...] = ()  # the method's inputs' tensor names, in order
    graph_outputs: tuple[str, ...] = ()  # the tensors the method returns, by name


@dataclass
class EtRecord:
    source: str  # file name, for messages
    methods: dict[str, EtRecordMethod]
    # It holds the ATen graph (`exported_program`): the Inspector then names its rows after it.
    has_exported_program: bool = False
    path: Path | None = None  # where it was read from, when read from a file


def read_etrecord(
    file: str | Path | IO[bytes], name: str | None = None, inside: Path | None = None
) -> EtRecord:
    """Read an ETRecord from a path (a regular file, inside the folder `inside` when given:
    `container/files.py`) or a binary file object; raise PteFormatError if malformed."""
    record = read_zip(file, read_record, name, inside)
    if isinstance(file, (str, Path)):
        record.path = Path(file)
    return record


T = TypeVar("T")


def read_zip(
    file: str | Path | IO[bytes],
    reader: Callable[[zipfile.ZipFile, str], T],
    name: str | None = None,
    inside: Path | None = None,
) -> T:
    """`reader(zip, label)` on the ETRecord at `file` (a path: a regular file, inside `inside`
    when given; or a binary file object), every failure of the zip or its JSON a PteFormatError."""
    label = name or (Path(file).name if isinstance(file, (str, Path)) else "<etrecord>")
    if isinstance(file, (str, Path)):
        with files.open_regular(Path(file), label, inside) as f:
            return read_zip(f, reader, label)
    try:
        with zipfile.ZipFile(file) as zf:
            return reader(zf, label)
    except PteFormatError:
        raise
    except RecursionError as e:
        raise PteFormatError("JSON nested too deeply", part=label) from e
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        EOFError,
        OSError,
        NotImplementedError,
        RuntimeError,
        ValueError,
        UnicodeDecodeError,
    ) as e:
        # BadZipFile covers truncation, bad CRCs and bad headers; RuntimeError an encrypted
        # member; ValueError malformed JSON (json.JSONDecodeError) and zipfile's own checks.
        raise PteFormatError(
            f"not a readable ETRecord zip: {type(e).__name__}: {e}", part=label
        ) from e


class JsonBudget:
    """What the JSON parts read from one ETRecord have cost so far (its limits are the module's)."""

    def __init__(self) -> None:
        self.json_bytes = 0
        self.json_values = 0  # an upper bound, counted before each part is parsed
        self.nodes = 0
        self.docs: dict[str, Any] = {}  # each part parsed once, by entry name


def read_record(zf: zipfile.ZipFile, label: str, budget: JsonBudget | None = None) -> EtRecord:
    """The ETRecord in an open zip (`budget`: what other parts read from it have cost)."""
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise LimitExceededError(f"{len(infos)} zip entries (limit {MAX_ENTRIES})", part=label)
    by_name = {i.filename: i for i in infos}
    if IDENTIFIER not in by_name:
        raise PteFormatError(f"not an ETRecord: no {IDENTIFIER!r} entry in the zip", part=label)
    if DEBUG_HANDLE_MAP not in by_name:
        raise PteFormatError(
            f"no {DEBUG_HANDLE_MAP!r} entry (the ETRecord was saved without its "
            "ExecuTorch program)",
            part=label,
        )
    budget = budget or JsonBudget()
    handle_doc = json_object(
        read_json_part(zf, by_name[DEBUG_HANDLE_MAP], label, budget), f"{label}:{DEBUG_HANDLE_MAP}"
    )
    delegate_doc: dict[str, Any] = {}
    if DELEGATE_MAP in by_name:
        delegate_doc = json_object(
            read_json_part(zf, by_name[DELEGATE_MAP], label, budget), f"{label}:{DELEGATE_MAP}"
        )

    export_graph = export_graph_id(zf, by_name, label, budget)
    methods: dict[str, EtRecordMethod] = {}
    for method_name, raw in handle_doc.items():
        part = f"{label}:{DEBUG_HANDLE_MAP}[{method_name!r}]"
        handles = {
            _int_key(k, part): _handle_list(v, f"{part}[{k}]")
            for k, v in json_object(raw, part).items()
        }
        dpart = f"{label}:{DELEGATE_MAP}[{method_name!r}]"
        delegates: dict[int, str] = {}
        for k, v in json_object(delegate_doc.get(method_name, {}), dpart).items():
            backend = json_object(v, f"{dpart}[{k}]").get("name")
            if not isinstance(backend, str):
                raise PteFormatError(f"delegate entry {k} has no backend name", part=dpart)
            delegates[_int_key(k, dpart)] = backend
        methods[method_name] = EtRecordMethod(method_name, handles, delegates)

    for info in infos:
        edge_method = _edge_method(info.filename)
        if edge_method is None or edge_method not in methods:
            continue
        counted = info.filename in budget.docs  # its nodes were counted when first read
        doc = read_json_part(zf, info, label, budget)
        part = f"{label}:{info.filename}"
        _read_graph(methods[edge_method], doc, part, budget, counted, export_graph)
    return EtRecord(label, methods, EXPORTED_PROGRAM in by_name)


def export_graph_id(
    zf: zipfile.ZipFile, by_name: dict[str, zipfile.ZipInfo], label: str, budget: JsonBudget
) -> int | None:
    """The exported program's graph id (the part `export_graph_id`), None when not recorded."""
    if EXPORT_GRAPH_ID not in by_name:
        return None
    raw = read_json_part(zf, by_name[EXPORT_GRAPH_ID], label, budget)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _read_graph(
    method: EtRecordMethod,
    doc: Any,
    part: str,
    budget: JsonBudget,
    counted: bool,
    export_graph: int | None,
) -> None:
    """The method's recorded graph: its nodes, indexed by debug handle, and its inputs and
    outputs."""
    method.nodes = _graph_nodes(doc, part, budget, counted, export_graph)
    method.user_inputs, method.graph_outputs = graph_io(doc)
    for node in method.nodes:
        if node.debug_handle is not None:
            same = method.nodes_by_handle.setdefault(node.debug_handle, [])
            same.append(node)
            if len(same) > MAX_NODES_PER_HANDLE:
                raise LimitExceededError(
                    f"more than {MAX_NODES_PER_HANDLE} graph nodes carry debug handle "
                    f"{node.debug_handle} (limit {MAX_NODES_PER_HANDLE})",
                    part=part,
                )


def _edge_method(filename: str) -> str | None:
    if filename == EDGE_PROGRAM:
        return "forward"  # the single-method layout of older ETRecords
    prefix = EDGE_PROGRAM + "/"
    if filename.startswith(prefix) and not filename.endswith(_PICKLED_SUFFIXES):
        return filename[len(prefix) :]
    return None


def read_json_part(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, budget: JsonBudget
) -> Any:
    """One JSON part, bounded (module docstring); a part read before with this budget is not
    read again."""
    if info.filename in budget.docs:
        return budget.docs[info.filename]
    part = f"{label}:{info.filename}"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise PteFormatError(f"unsupported zip compression {info.compress_type}", part=part)
    inflated = MAX_INFLATED_FLOOR + MAX_INFLATION * info.compress_size
    limit = min(MAX_JSON_PART, MAX_JSON_TOTAL - budget.json_bytes, inflated)
    why = (
        f" from {info.compress_size} zipped bytes (more than {MAX_INFLATION} times: not read)"
        if limit == inflated
        else ""
    )
    if info.file_size > limit:
        raise LimitExceededError(f"{info.file_size} bytes of JSON (limit {limit}){why}", part=part)
    with zf.open(info) as f:
        data = f.read(limit + 1)  # the header may lie: never decompress past the limit
    if len(data) > limit:
        raise LimitExceededError(f"more than {limit} bytes of JSON{why}", part=part)
    budget.json_bytes += len(data)
    budget.json_values += files.json_values(data)
    if budget.json_values > files.MAX_JSON_VALUES:
        raise LimitExceededError(
            f"more than {files.MAX_JSON_VALUES} JSON values (commas and brackets) in the JSON "
            "parts read so far: not parsed",
            part=part,
        )
    try:
        doc = json.loads(data)
    except RecursionError as e:
        raise PteFormatError("JSON nested too deeply", part=part) from e
    except ValueError as e:  # JSONDecodeError, bad UTF-8
        raise PteFormatError(f"not JSON: {e}", part=part) from e
    budget.docs[info.filename] = doc
    return doc


def json_object(v: Any, part: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise PteFormatError(f"expected a JSON object, found {type(v).__name__}", part=part)
    return v


def _int_key(k: str, part: str) -> int:
    try:
        value = int(k)
    except ValueError:
        raise PteFormatError(f"instruction id {k[:40]!r} is not an integer", part=part) from None
    if not 0 <= value < 1 << 31:
        raise PteFormatError(f"instruction id {value} out of range", part=part)
    return value


def _handle_list(v: Any, part: str) -> list[int]:
    items = v if isinstance(v, list) else [v]
    out = []
    for h in items:
        # JSON `true` is a Python bool, which is an int: refuse it explicitly.
        if isinstance(h, bool) or not isinstance(h, int):
            raise PteFormatError(f"debug handle {str(h)[:40]!r} is not an integer", part=part)
        out.append(h)
    return list(dict.fromkeys(out))  # a handle listed twice is one handle


def _graph_nodes(
    doc: Any,
    part: str,
    budget: JsonBudget,
    counted: bool = False,
    export_graph: int | None = None,
) -> list[FxNode]:
    graph = json_object(
        json_object(json_object(doc, part).get("graph_module"), f"{part}:graph_module").get(
            "graph"
        ),
        f"{part}:graph",
    )
    raw_nodes = graph.get("nodes")
    if not isinstance(raw_nodes, list):
        raise PteFormatError("graph has no node list", part=part)
    budget.nodes += 0 if counted else len(raw_nodes)
    if budget.nodes > MAX_NODES:
        raise LimitExceededError(f"{budget.nodes} graph nodes (limit {MAX_NODES})", part=part)
    tensors = graph.get("tensor_values")
    shapes = static_shapes(tensors if isinstance(tensors, dict) else {})
    nodes = []
    for i, raw in enumerate(raw_nodes):
        npart = f"{part}:node {i}"
        node = json_object(raw, npart)
        meta = node.get("metadata") or {}
        meta = json_object(meta, npart)
        nodes.append(
            FxNode(
                name=json_str(node.get("name"), npart),
                target=edge_target(json_str(node.get("target"), npart)),
                debug_handle=debug_handle_of(meta.get("debug_handle"), npart),
                module_stack=parse_module_stack(json_str(meta.get("nn_module_stack", ""), npart)),
                stack_trace=json_str(meta.get("stack_trace", ""), npart)[:MAX_STACK_TEXT],
                torch_fn=json_str(meta.get("torch_fn", ""), npart),
                output_shapes=output_shapes(node.get("outputs"), shapes),
                provenance=_text_of(meta.get("from_node")),
                export_graph=export_graph,
                inputs=tensor_names(arguments(node.get("inputs"))),
                numbers=number_args(arguments(node.get("inputs"))),
                outputs=tensor_names(node.get("outputs")),
            )
        )
    return nodes


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _provenance(text: str, export_graph: int | None) -> tuple[str, str]:
    """(`aten_name`, `origin`) of a node from its `from_node` text (FxNode): the first node of
    the chain in the ATen graph, and the chain's last. Unreadable provenance names nothing (the
    ETRecord's graphs, which read it for a mapping, say why)."""
    try:
        chain = [link.rpartition(".") for link in provenance(text, "from_node")]
    except PteFormatError:
        return "", ""
    graph = None if export_graph is None else str(export_graph)
    aten = next((name for name, _, graph_id in chain if graph_id == graph), "")
    return aten, chain[-1][0] if chain else ""


def json_str(v: Any, part: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise PteFormatError(f"expected a string, found {type(v).__name__}", part=part)
    return v


def debug_handle_of(v: Any, part: str) -> int | None:
    if v is None or v == "":
        return None
    if isinstance(v, str) and v.lstrip("-").isdigit() and len(v) < 20:
        return int(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise PteFormatError(f"debug handle {str(v)[:40]!r} is not an integer", part=part)


_EDGE_PREFIX = "executorch.exir.dialects.edge.ops."


def edge_target(target: str) -> str:
    return target[len(_EDGE_PREFIX) :] if target.startswith(_EDGE_PREFIX) else target


def _split_top_level(text: str) -> list[str]:
    """Split at commas that are not inside (...) or [...] (module keys can hold both)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def parse_module_stack(text: str) -> list[tuple[str, str]]:
    """`key,path,class;key,path,class` -> [(path, class), ...]; malformed entries are skipped."""
    return list(_module_stack(text)) if text else []


@lru_cache(maxsize=4096)  # a graph's nodes share a few hundred stacks: each is parsed once
def _module_stack(text: str) -> tuple[tuple[str, str], ...]:
    stack = []
    for item in text.split(";"):
        parts = _split_top_level(item) if "(" in item or "[" in item else item.split(",")
        if len(parts) == 3:
            stack.append((parts[1], parts[2]))
    return tuple(stack)
