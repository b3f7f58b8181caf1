"""Every graph an ETRecord records, read torch-free and bounded, as the graphs torch would rebuild.

An ETRecord (`container/etrecord.py`) stores up to three kinds of graph, each as torch.export's JSON
serialisation (`graph_module.graph`: `inputs`, `nodes`, `outputs`, `tensor_values`; `signature`):

- `exported_program`: the program torch.export made of the user's model (ATen), when the export
  recorded it (`to_edge_transform_and_lower(..., generate_etrecord=True)` does);
- `edge_dialect_exported_program/<method>` (older files: `edge_dialect_exported_program`, the
  `forward` method): the edge program the debug handles were given in;
- the graph map: every other entry that is not one of the ETRecord's reserved parts, named
  `<module>/<method>` (`edge_after_transform/forward` when the export ran transform passes).

Each becomes a `RecordedGraph` whose nodes are the nodes torch's deserializer makes, with the
names it gives them (so a mapping written against `parse_etrecord`'s graphs addresses these): one
placeholder per graph input, then per serialized node the node itself - named after its single
tensor output, else as recorded - and a `getitem` node per output of a node with several, named
after that output (ExecuTorch's deserializer adds the lowered module a delegate call reads as a
`get_attr` node before the call), then `output`. A node keeps what a person needs to see: its
operator, the nodes it reads, its other arguments as recorded text, each output's dtype and shape,
its debug handle, module stack, stack trace and `torch_fn`, and its `from_node` provenance (the
chain of nodes it was made from, by which the Inspector carries debug handles back to the exported
program: `analysis/lowering_map.py`).

Parts named `*_state_dict`, `*_constants`, `*_example_inputs`, `reference_outputs`,
`representative_inputs` are pickles or torch archives and are never opened. The bounds are
`container/etrecord.py`'s (entries, bytes per part, JSON values, graph nodes) plus the provenance
of one node and the text kept of one argument (`export_json.py`). A graph whose
node names are missing or repeated is malformed: a mapping could not address it.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from pte_adapter.container import files
from pte_adapter.container._generated.export_schema import INPUT_SPEC_KINDS, SCALAR_TYPES
from pte_adapter.container.etrecord import (
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    EDGE_PROGRAM,
    EXPORT_GRAPH_ID,
    EXPORTED_PROGRAM,
    IDENTIFIER,
    MAX_ENTRIES,
    MAX_NODES,
    MAX_STACK_TEXT,
    EtRecord,
    JsonBudget,
    debug_handle_of,
    edge_target,
    export_graph_id,
    json_object,
    json_str,
    parse_module_stack,
    read_json_part,
    read_record,
    read_zip,
)
from pte_adapter.container.export_json import MAX_RANK, kind_of, provenance, references, sym_name
from pte_adapter.errors import LimitExceededError, PteFormatError

# The ETRecord's own parts that are not graphs (ExecuTorch's ETRecordReservedFileNames).
_RESERVED: Final = frozenset(
    {
        IDENTIFIER,
        EXPORT_GRAPH_ID,
        DEBUG_HANDLE_MAP,
        DELEGATE_MAP,
        "instruction_id_to_num_outs_map",
        "reference_outputs",
        "representative_inputs",
        "et_dialect_graph_module",
    }
)
_PICKLED_SUFFIXES: Final = ("_state_dict", "_constants", "_example_inputs")

DELEGATE_CALL: Final = "higher_order.executorch_call_delegate"

# What a graph is to the ETRecord.
EXPORTED: Final = "exported"
EDGE: Final = "edge"
GRAPH_MAP: Final = "graph_map"


@dataclass(frozen=True)
class TensorMeta:
    """One value a node outputs: its name, dtype (the schema's name: FLOAT, CHAR, ... or SymInt)
    and sizes (an int per static dimension, the expression's text for a symbolic one)."""

    name: str
    dtype: str
    shape: tuple[int | str, ...] | None = None


@dataclass
class RecordedNode:
    name: str
    op: str  # "placeholder" | "call_function" | "get_attr" | "output"
    target: str  # "aten.convolution.default", "getitem", the lifted name of a placeholder
    args: list[str] = field(default_factory=list)  # the nodes it reads, in argument order
    params: dict[str, str] = field(default_factory=dict)  # its other arguments, as recorded
    outputs: list[TensorMeta] = field(default_factory=list)
    debug_handle: int | None = None
    module_stack: list[tuple[str, str]] = field(default_factory=list)  # (path, class), outermost
    stack_trace: str = ""
    torch_fn: str = ""
    # `from_node` as recorded (JSON text): the nodes it was made from (`ancestors` reads it).
    from_node: str = ""
    input_kind: str = ""  # a placeholder's InputSpec member: "user_input", "parameter", ...
    input_target: str = ""  # what it lifts: "features.0.0.weight"
    backend: str = ""  # a lowered module (get_attr): its backend id


@dataclass
class RecordedGraph:
    part: str  # the ETRecord entry it was read from
    kind: str  # EXPORTED | EDGE | GRAPH_MAP
    method: str
    nodes: list[RecordedNode]

    def node(self, name: str) -> RecordedNode | None:
        return next((n for n in self.nodes if n.name == name), None)


@dataclass
class EtRecordGraphs:
    source: str  # file name, for messages
    graphs: list[RecordedGraph]
    export_graph_id: int | None = None  # the exported program's graph id (its `from_node` key)
    # Its debug maps, as `read_etrecord` reads them (None: saved without its ExecuTorch program).
    record: EtRecord | None = None

    def graph(self, part: str) -> RecordedGraph | None:
        return next((g for g in self.graphs if g.part == part), None)

    def edge(self, method: str = "forward") -> RecordedGraph | None:
        return next((g for g in self.graphs if g.kind == EDGE and g.method == method), None)

    @property
    def exported(self) -> RecordedGraph | None:
        return next((g for g in self.graphs if g.kind == EXPORTED), None)


def read_etrecord_graphs(
    file: str | Path | IO[bytes], name: str | None = None, inside: Path | None = None
) -> EtRecordGraphs:
    """Every graph of the ETRecord at `file`; PteFormatError if it is malformed or has none."""
    return read_zip(file, _read, name, inside)


def is_etrecord(path: Path) -> bool:
    """Whether the file is a zip with the ETRecord's identifier (reads the zip directory only)."""
    try:
        with files.open_regular(path, path.name) as f, zipfile.ZipFile(f) as zf:
            return IDENTIFIER in zf.namelist()[:MAX_ENTRIES]
    except (PteFormatError, zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False


def graphkind_of(entry: str) -> tuple[str, str] | None:
    """(kind, method) of an ETRecord entry that is a graph, else None."""
    if entry in _RESERVED or entry.endswith(_PICKLED_SUFFIXES):
        return None
    if entry == EXPORTED_PROGRAM:
        return EXPORTED, "forward"
    if entry == EDGE_PROGRAM:
        return EDGE, "forward"
    if entry.startswith(EDGE_PROGRAM + "/"):
        return EDGE, entry[len(EDGE_PROGRAM) + 1 :]
    return GRAPH_MAP, entry.rsplit("/", 1)[-1] if "/" in entry else "forward"


def _read(zf: zipfile.ZipFile, label: str) -> EtRecordGraphs:
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise LimitExceededError(f"{len(infos)} zip entries (limit {MAX_ENTRIES})", part=label)
    by_name = {i.filename: i for i in infos}
    if IDENTIFIER not in by_name:
        raise PteFormatError(f"not an ETRecord: no {IDENTIFIER!r} entry in the zip", part=label)
    budget = JsonBudget()
    graphs = []
    for info in infos:
        kind = graphkind_of(info.filename)
        # A folder entry; not `ZipInfo.is_dir()`, which raises IndexError on an empty name.
        if kind is None or info.filename.endswith("/"):
            continue
        doc = read_json_part(zf, info, label, budget)
        part = f"{label}:{info.filename}"
        graphs.append(RecordedGraph(info.filename, *kind, _graph(doc, part, budget)))
    if not graphs:
        raise PteFormatError(
            "no graph in it (no exported program, edge program or graph map entry)", part=label
        )
    order = {EXPORTED: 0, EDGE: 1, GRAPH_MAP: 2}
    graphs.sort(key=lambda g: order[g.kind])  # stable: the zip's order within a kind
    export_id = export_graph_id(zf, by_name, label, budget)
    # The debug maps, from the parts parsed above (each JSON part is parsed once).
    record = read_record(zf, label, budget) if DEBUG_HANDLE_MAP in by_name else None
    return EtRecordGraphs(label, graphs, export_id, record)


class _Names:
    """The names a graph's nodes get, as torch's deserializer gives them; each used once."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.used: set[str] = set()

    def take(self, name: str, what: str) -> str:
        if not name:
            raise PteFormatError(
                f"{what} has no name: a mapping could not address it", part=self.part
            )
        if name in self.used:
            raise PteFormatError(
                f"node name {name[:80]!r} is given twice: a mapping could not address it",
                part=self.part,
            )
        self.used.add(name)
        return name

    def fresh(self, base: str) -> str:
        """An FX-made name (`as_none`, `as_none_1`, ...) for a node the file does not name."""
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


def _graph(doc: Any, part: str, budget: JsonBudget) -> list[RecordedNode]:
    module = json_object(json_object(doc, part).get("graph_module"), f"{part}:graph_module")
    graph = json_object(module.get("graph"), f"{part}:graph")
    raw_nodes, inputs, outputs = graph.get("nodes"), graph.get("inputs"), graph.get("outputs")
    if not isinstance(raw_nodes, list) or not isinstance(inputs, list):
        raise PteFormatError("graph has no node or input list", part=part)
    budget.nodes += len(raw_nodes) + len(inputs)
    if budget.nodes > MAX_NODES:
        raise LimitExceededError(f"{budget.nodes} graph nodes (limit {MAX_NODES})", part=part)
    metas = _tensor_metas(graph)
    names = _Names(part)
    specs = _input_specs(module.get("signature"))
    nodes = [_placeholder(arg, i, specs, metas, names, part) for i, arg in enumerate(inputs)]
    for i, raw in enumerate(raw_nodes):
        nodes.extend(_call(json_object(raw, f"{part}:node {i}"), metas, names, f"{part}:node {i}"))
    refs: list[str] = []
    for out in outputs if isinstance(outputs, list) else []:
        references(out, refs, 0)
    nodes.append(RecordedNode(names.take("output", "the output node"), "output", "output", refs))
    return nodes


def _tensor_metas(graph: dict[str, Any]) -> dict[str, TensorMeta]:
    out: dict[str, TensorMeta] = {}
    tensors = graph.get("tensor_values")
    for name, meta in (tensors if isinstance(tensors, dict) else {}).items():
        if isinstance(meta, dict):
            dtype = meta.get("dtype")
            dname = SCALAR_TYPES.get(dtype, f"dtype {dtype}") if isinstance(dtype, int) else "?"
            out[name] = TensorMeta(name, dname, _sizes(meta.get("sizes")))
    for key, kind in (("sym_int_values", "SymInt"), ("sym_bool_values", "SymBool")):
        values = graph.get(key)
        for name in values if isinstance(values, dict) else {}:
            out[name] = TensorMeta(name, kind)
    return out


def _sizes(sizes: Any) -> tuple[int | str, ...] | None:
    if not isinstance(sizes, list) or len(sizes) > MAX_RANK:
        return None
    dims: list[int | str] = []
    for d in sizes:
        v = d.get("as_int") if isinstance(d, dict) else None
        if isinstance(v, int) and not isinstance(v, bool):
            dims.append(v)
        else:
            expr = d.get("as_expr") if isinstance(d, dict) else None
            text = expr.get("expr_str") if isinstance(expr, dict) else None
            dims.append(str(text)[:40] if text else "?")
    return tuple(dims)


def _input_specs(signature: Any) -> dict[str, tuple[str, str]]:
    """Placeholder name -> (InputSpec member, what it lifts: a parameter's or buffer's name)."""
    out: dict[str, tuple[str, str]] = {}
    specs = signature.get("input_specs") if isinstance(signature, dict) else None
    for spec in specs if isinstance(specs, list) else []:
        if not isinstance(spec, dict) or len(spec) != 1:
            continue
        kind, body = next(iter(spec.items()))
        if kind not in INPUT_SPEC_KINDS or not isinstance(body, dict):
            continue
        arg = body.get("arg")
        name = _arg_name(arg)
        target = next(
            (v for k, v in body.items() if k.endswith("_name") and isinstance(v, str)), ""
        )
        if name:
            out[name] = (kind, target)
    return out


def _arg_name(arg: Any) -> str:
    """The name an input spec's `arg` gives (a TensorArgument, or an Argument holding one)."""
    if not isinstance(arg, dict):
        return ""
    if isinstance(arg.get("name"), str):
        return str(arg["name"])
    for v in arg.values():
        if isinstance(v, dict) and isinstance(v.get("name"), str):
            return str(v["name"])
        if isinstance(v, dict) and isinstance(v.get("as_name"), str):
            return str(v["as_name"])
    return ""


def _placeholder(
    arg: Any,
    index: int,
    specs: dict[str, tuple[str, str]],
    metas: dict[str, TensorMeta],
    names: _Names,
    part: str,
) -> RecordedNode:
    name = _arg_name(arg) or f"arg{index}"  # a constant input: FX's own name
    kind, target = specs.get(name, ("user_input", ""))
    meta = metas.get(name)
    node = RecordedNode(names.take(name, f"input {index}"), "placeholder", name)
    node.outputs = [meta] if meta is not None else []
    node.input_kind, node.input_target = kind, target
    return node


def _call(
    raw: dict[str, Any], metas: dict[str, TensorMeta], names: _Names, part: str
) -> list[RecordedNode]:
    target = _target(json_str(raw.get("target"), part))
    meta = json_object(raw.get("metadata") or {}, part)
    inputs = _list(raw.get("inputs"))
    outputs = _list(raw.get("outputs"))
    out: list[RecordedNode] = []
    node = RecordedNode("", "call_function", target)
    _metadata(node, meta, part)
    for i, named in enumerate(inputs):
        named = json_object(named, f"{part}:input {i}")
        arg_name = str(named.get("name") or f"arg{i}")
        if target == DELEGATE_CALL and i == 0:
            lowered = _lowered_module(named, names, part)
            out.append(lowered)
            node.args.append(lowered.name)
            node.params["backend"] = lowered.backend
            continue
        refs: list[str] = []
        text = references(named.get("arg"), refs, 0)
        node.args.extend(refs)
        if text is not None:
            node.params[arg_name] = text
    single = len(outputs) == 1 and isinstance(outputs[0], dict)
    tensor = outputs[0].get("as_tensor") if single else None
    sym = sym_name(outputs[0]) if single else ""
    if isinstance(tensor, dict):  # one tensor: named after it (torch's deserializer)
        name = json_str(tensor.get("name"), part)
        node.name = names.take(name, "node")
        node.outputs = [metas.get(name, TensorMeta(name, "?"))]
        return [*out, node]
    if sym:
        node.name = names.take(sym, "node")
        node.outputs = [metas.get(sym, TensorMeta(sym, "SymInt"))]
        return [*out, node]
    node.name = names.take(json_str(raw.get("name"), part), "node")
    out.append(node)
    # Several outputs (or one list of them): a getitem node per output, named after it.
    items = outputs
    if single and isinstance(outputs[0].get("as_tensors"), list):
        items = [{"as_tensor": t} for t in outputs[0]["as_tensors"]]
    for item in items:
        out.append(_getitem(node, item, metas, names, part))
    return out


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _getitem(
    owner: RecordedNode, item: Any, metas: dict[str, TensorMeta], names: _Names, part: str
) -> RecordedNode:
    tensor = item.get("as_tensor") if isinstance(item, dict) else None
    sym = sym_name(item)
    if isinstance(tensor, dict) or sym:
        value = json_str(tensor.get("name"), part) if isinstance(tensor, dict) else sym
        name = names.take(value, "output")
    else:
        value, name = "", names.fresh("as_none" if kind_of(item) == "as_none" else "getitem")
    node = RecordedNode(name, "call_function", "getitem", [owner.name])
    node.outputs = [metas[value]] if value in metas else []
    node.debug_handle, node.module_stack = owner.debug_handle, owner.module_stack
    node.stack_trace, node.torch_fn, node.from_node = (
        owner.stack_trace,
        owner.torch_fn,
        owner.from_node,
    )
    owner.outputs.extend(node.outputs)
    return node


def _lowered_module(named: dict[str, Any], names: _Names, part: str) -> RecordedNode:
    """The lowered module a delegate call reads (a `get_attr` node in torch's graph). Its
    argument is the whole lowered program as JSON text: only its backend id is kept."""
    arg = named.get("arg")
    text = arg.get("as_string") if isinstance(arg, dict) else None
    backend = ""
    if isinstance(text, str):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("backend_id"), str):
            backend = str(doc["backend_id"])[:80]
    name = json_str(named.get("name"), part)
    node = RecordedNode(names.take(name, "lowered module"), "get_attr", name)
    node.backend = backend
    return node


_TORCH_OPS = "torch.ops."


def _target(target: str) -> str:
    """`aten.convolution.default` for the edge dialect's and torch's spellings alike."""
    target = edge_target(target)
    return target[len(_TORCH_OPS) :] if target.startswith(_TORCH_OPS) else target


def _metadata(node: RecordedNode, meta: dict[str, Any], part: str) -> None:
    node.debug_handle = debug_handle_of(meta.get("debug_handle"), part)
    node.module_stack = parse_module_stack(json_str(meta.get("nn_module_stack", ""), part))
    node.stack_trace = json_str(meta.get("stack_trace", ""), part)[:MAX_STACK_TEXT]
    node.torch_fn = json_str(meta.get("torch_fn", ""), part)
    node.from_node = json_str(meta.get("from_node", ""), part)


def ancestors(node: RecordedNode, part: str = "") -> tuple[str, ...]:
    """The nodes `node` was made from (its `from_node`), as "<name>.<graph id>", following the
    last source at each level as the Inspector does (`export_json.provenance`). Read only when
    asked (the exported program's mapping needs it): most views never parse it."""
    return provenance(node.from_node, part or node.name)
