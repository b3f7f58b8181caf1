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
  `outputs` name tensors whose `sizes` the graph's `tensor_values` hold (kept when all static).
  Its `from_node` metadata (a JSON text: the chain of nodes it was made from, each with its
  graph's `graph_id`) gives the name of the node it came from in the ATen graph
  (`exported_program`, whose graph id the part `export_graph_id` holds): the name ExecuTorch's
  Inspector gives its rows (`conv2d_1`), read with one bounded pattern search, never parsed.

Parts named `*_state_dict`, `*_constants`, `*_example_inputs`, `reference_outputs` and
`representative_inputs` are pickles or torch archives: never opened. The work is bounded: the
number of zip entries, the bytes of each JSON part after decompression (a zip bomb stops at the
limit, whatever the header claims), the values all JSON parts may build (counted before parsing:
`container/files.py`), JSON nesting (Python's parser raises RecursionError, caught), the number of
graph nodes, and each debug handle's nodes (`MAX_NODES_PER_HANDLE`). Anything malformed raises `PteFormatError` naming the part.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any

from pte_adapter.container import files
from pte_adapter.errors import LimitExceededError, PteFormatError

IDENTIFIER = "ETRECORD_V0"
DEBUG_HANDLE_MAP = "debug_handle_map"
DELEGATE_MAP = "delegate_map"
EDGE_PROGRAM = "edge_dialect_exported_program"
ATEN_PROGRAM = "exported_program"
EXPORT_GRAPH_ID = "export_graph_id"

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
MAX_PROVENANCE_TEXT = 64 << 10  # characters of one `from_node` text searched
# One entry of a `from_node` chain as torch writes it (`NodeSource.to_dict`, keys in this order).
_PROVENANCE = re.compile(
    r'"name": "([^"\\]{1,256})", "target": "[^"\\]*", "graph_id": (-?\d{1,20})'
)

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


@dataclass
class EtRecord:
    source: str  # file name, for messages
    methods: dict[str, EtRecordMethod]
    # It holds the ATen graph (`exported_program`): the Inspector then names its rows after it.
    has_aten_graph: bool = False
    path: Path | None = None  # where it was read from, when read from a file


def read_etrecord(
    file: str | Path | IO[bytes], name: str | None = None, inside: Path | None = None
) -> EtRecord:
    """Read an ETRecord from a path (a regular file, inside the folder `inside` when given:
    `container/files.py`) or a binary file object; raise PteFormatError if malformed."""
    label = name or (Path(file).name if isinstance(file, (str, Path)) else "<etrecord>")
    if isinstance(file, (str, Path)):
        with files.open_regular(Path(file), label, inside) as f:
            record = read_etrecord(f, label)
        record.path = Path(file)
        return record
    try:
        with zipfile.ZipFile(file) as zf:
            return _read(zf, label)
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


class _Budget:
    def __init__(self) -> None:
        self.json_bytes = 0
        self.json_values = 0  # an upper bound, counted before each part is parsed
        self.nodes = 0


def _read(zf: zipfile.ZipFile, label: str) -> EtRecord:
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
    budget = _Budget()
    handle_doc = _dict(
        _json(zf, by_name[DEBUG_HANDLE_MAP], label, budget), f"{label}:{DEBUG_HANDLE_MAP}"
    )
    delegate_doc: dict[str, Any] = {}
    if DELEGATE_MAP in by_name:
        delegate_doc = _dict(
            _json(zf, by_name[DELEGATE_MAP], label, budget), f"{label}:{DELEGATE_MAP}"
        )

    export_graph = None
    if EXPORT_GRAPH_ID in by_name:
        raw_id = _json(zf, by_name[EXPORT_GRAPH_ID], label, budget)
        export_graph = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
    methods: dict[str, EtRecordMethod] = {}
    for method_name, raw in handle_doc.items():
        part = f"{label}:{DEBUG_HANDLE_MAP}[{method_name!r}]"
        handles = {
            _int_key(k, part): _handle_list(v, f"{part}[{k}]") for k, v in _dict(raw, part).items()
        }
        dpart = f"{label}:{DELEGATE_MAP}[{method_name!r}]"
        delegates: dict[int, str] = {}
        for k, v in _dict(delegate_doc.get(method_name, {}), dpart).items():
            backend = _dict(v, f"{dpart}[{k}]").get("name")
            if not isinstance(backend, str):
                raise PteFormatError(f"delegate entry {k} has no backend name", part=dpart)
            delegates[_int_key(k, dpart)] = backend
        methods[method_name] = EtRecordMethod(method_name, handles, delegates)

    for info in infos:
        edge_method = _edge_method(info.filename)
        if edge_method is None or edge_method not in methods:
            continue
        doc = _json(zf, info, label, budget)
        method = methods[edge_method]
        method.nodes = _graph_nodes(doc, f"{label}:{info.filename}", budget, export_graph)
        for node in method.nodes:
            if node.debug_handle is not None:
                same = method.nodes_by_handle.setdefault(node.debug_handle, [])
                same.append(node)
                if len(same) > MAX_NODES_PER_HANDLE:
                    raise LimitExceededError(
                        f"more than {MAX_NODES_PER_HANDLE} graph nodes carry debug handle "
                        f"{node.debug_handle} (limit {MAX_NODES_PER_HANDLE})",
                        part=f"{label}:{info.filename}",
                    )
    return EtRecord(label, methods, ATEN_PROGRAM in by_name)


def _edge_method(filename: str) -> str | None:
    if filename == EDGE_PROGRAM:
        return "forward"  # the single-method layout of older ETRecords
    prefix = EDGE_PROGRAM + "/"
    if filename.startswith(prefix) and not filename.endswith(_PICKLED_SUFFIXES):
        return filename[len(prefix) :]
    return None


def _json(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, budget: _Budget) -> Any:
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
        return json.loads(data)
    except RecursionError as e:
        raise PteFormatError("JSON nested too deeply", part=part) from e
    except ValueError as e:  # JSONDecodeError, bad UTF-8
        raise PteFormatError(f"not JSON: {e}", part=part) from e


def _dict(v: Any, part: str) -> dict[str, Any]:
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
    doc: Any, part: str, budget: _Budget, export_graph: int | None = None
) -> list[FxNode]:
    graph = _dict(
        _dict(_dict(doc, part).get("graph_module"), f"{part}:graph_module").get("graph"),
        f"{part}:graph",
    )
    raw_nodes = graph.get("nodes")
    if not isinstance(raw_nodes, list):
        raise PteFormatError("graph has no node list", part=part)
    budget.nodes += len(raw_nodes)
    if budget.nodes > MAX_NODES:
        raise LimitExceededError(f"{budget.nodes} graph nodes (limit {MAX_NODES})", part=part)
    tensors = graph.get("tensor_values")
    shapes = _static_shapes(tensors if isinstance(tensors, dict) else {})
    nodes = []
    for i, raw in enumerate(raw_nodes):
        npart = f"{part}:node {i}"
        node = _dict(raw, npart)
        meta = node.get("metadata") or {}
        meta = _dict(meta, npart)
        nodes.append(
            FxNode(
                name=_str(node.get("name"), npart),
                target=_edge_target(_str(node.get("target"), npart)),
                debug_handle=_opt_int(meta.get("debug_handle"), npart),
                module_stack=parse_module_stack(_str(meta.get("nn_module_stack", ""), npart)),
                stack_trace=_str(meta.get("stack_trace", ""), npart)[:MAX_STACK_TEXT],
                torch_fn=_str(meta.get("torch_fn", ""), npart),
                output_shapes=_output_shapes(node.get("outputs"), shapes),
                provenance=_text_of(meta.get("from_node"))[:MAX_PROVENANCE_TEXT],
                export_graph=export_graph,
            )
        )
    return nodes


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _provenance(text: str, export_graph: int | None) -> tuple[str, str]:
    """(`aten_name`, `origin`) of a node from its `from_node` text (FxNode)."""
    aten, origin = "", ""
    for m in _PROVENANCE.finditer(text):
        origin = m.group(1)
        if not aten and export_graph is not None and int(m.group(2)) == export_graph:
            aten = m.group(1)
    return aten, origin


MAX_RANK = 16  # dimensions of a recorded tensor shape kept; deeper ones count as unknown


def _static_shapes(tensors: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Tensor name -> its sizes, for tensors whose every size is a plain integer. Shapes are
    extra evidence (`analysis.source`), so anything unexpected is left out, never an error."""
    out: dict[str, tuple[int, ...]] = {}
    for name, meta in tensors.items():
        sizes = meta.get("sizes") if isinstance(meta, dict) else None
        if not isinstance(sizes, list) or len(sizes) > MAX_RANK:
            continue
        dims = [d.get("as_int") if isinstance(d, dict) else None for d in sizes]
        if all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            out[name] = tuple(int(d) for d in dims if d is not None)
    return out


def _output_shapes(outputs: Any, shapes: dict[str, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The static shape of each tensor a node outputs (`as_tensor`, `as_tensors`)."""
    names: list[Any] = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        one, many = out.get("as_tensor"), out.get("as_tensors")
        names += [one] if isinstance(one, dict) else many if isinstance(many, list) else []
    found = (shapes.get(str(n.get("name"))) if isinstance(n, dict) else None for n in names)
    return [s for s in found if s is not None]


def _str(v: Any, part: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise PteFormatError(f"expected a string, found {type(v).__name__}", part=part)
    return v


def _opt_int(v: Any, part: str) -> int | None:
    if v is None or v == "":
        return None
    if isinstance(v, str) and v.lstrip("-").isdigit() and len(v) < 20:
        return int(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise PteFormatError(f"debug handle {str(v)[:40]!r} is not an integer", part=part)


_EDGE_PREFIX = "executorch.exir.dialects.edge.ops."


def _edge_target(target: str) -> str:
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
    stack = []
    for item in text.split(";") if text else []:
        parts = _split_top_level(item)
        if len(parts) == 3:
            stack.append((parts[1], parts[2]))
    return stack
