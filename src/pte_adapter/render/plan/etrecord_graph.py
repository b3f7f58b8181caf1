"""An ETRecord's graphs as plan graphs: the model as the user wrote it (the exported program), the
edge program and each graph-map entry, one graph each, named by its ETRecord entry.

- **Node ids are the graph's own node names** (`conv2d_1`, `aten_convolution_default`), the names
  torch's `parse_etrecord` gives, so a mapping written by anyone addresses them (`pte-adapter sync`
  writes one). Labels are operators (`aten.convolution`), `input`, `parameter`, `buffer`,
  `output`.
- Nodes sit in the layers of the model (their `nn_module_stack`, outermost first: "features" >
  "features.4"); a parameter or buffer sits in the layer that owns it, and a node no layer
  claims (a quantization's dequantize, a frozen weight) in the deepest layer its readers share. Each node shows its
  operator, the arguments that are not tensors, debug handle, module, source line (the innermost
  frame of the user's code, as the program's graph shows it; not the whole stack trace), and each
  output's dtype and shape.
- With the program the ETRecord belongs to (`api/etrecord_view.py`), every node that ran shows
  where: the runtime step it was part of (its instructions and partitions, `ran_in`), coloured as
  the program's graph colours that partition (and a layer all of whose nodes went one way, too);
  and the time the program's ETDump measured for that step. Node data overlays use the same steps (`etrecord_node_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from pte_adapter.analysis.lowering_map import EtRecordAnalysis, GraphRuns, StepRun
from pte_adapter.analysis.program_analysis import MethodAnalysis
from pte_adapter.backends import CPU_COMPUTE_COLOUR, backend_colour
from pte_adapter.container._generated.program_schema import ScalarType
from pte_adapter.container.etrecord_graphs import RecordedGraph, RecordedNode, TensorMeta
from pte_adapter.program.model import dtype_name
from pte_adapter.render.group_facts import ascii_name, partition_group_names
from pte_adapter.render.plan.graph import Colour, Edge, Graph, GroupStyle, Node, Port, regex_escape
from pte_adapter.render.time_facts import time_format
from pte_adapter.wording import TimeFormat, shape_text

# What each kind of graph is, for the graph's own attributes.
GRAPH_TEXT: Final = {
    "exported": "the exported program (ATen): the model as torch.export recorded it",
    "edge": "the edge program: after to_edge, where the debug handles were given",
    "graph_map": "a graph-map entry: a program the export recorded at another stage",
}
_INPUT_LABELS: Final = {
    "user_input": "input",
    "parameter": "parameter",
    "buffer": "buffer",
    "tensor_constant": "constant",
    "constant_input": "constant",
    "custom_obj": "object",
    "token": "token",
}
MAX_SHOWN_INSTRUCTIONS: Final = 12


def etrecord_plan(view: EtRecordAnalysis) -> list[Graph]:
    """One plan graph per recorded graph, in the ETRecord's order: exported, edge, graph map."""
    return [recorded_graph(view, g) for g in view.graphs.graphs]


def recorded_graph(view: EtRecordAnalysis, graph: RecordedGraph) -> Graph:
    runs = view.runs.get(graph.part)
    ma = view.program.method(graph.method) if view.program is not None and runs else None
    summary = view.program.profile_summary if view.program is not None else None
    tf = time_format(summary) if summary is not None else None
    where = _where(ma, runs, tf) if ma is not None and runs is not None else None
    lines = view.source_lines.get(graph.part, {})
    layers = _layers_of_parameters(graph)
    out = Graph(id=graph.part, group_attrs={"": _graph_facts(view, graph, runs)})
    for node in graph.nodes:
        plan = Node(id=node.name, label=_label(node), namespace=layers.get(node.name, ""))
        plan.attrs.update(_node_facts(node, lines.get(node.name, "")))
        if where is not None and runs is not None and node.name in runs.node_step:
            colour, facts_of = where
            plan.colour = colour(runs.node_step[node.name])
            plan.attrs.update(facts_of(runs.node_step[node.name]))
        plan.outputs = [Port(str(i), _tensor_facts(t)) for i, t in enumerate(node.outputs)]
        out.nodes.append(plan)
    _edges(graph, out)
    out.group_styles = _layer_colours(out)
    return out


def _layer_colours(graph: Graph) -> list[GroupStyle]:
    """A layer whose nodes that ran all ran in partitions of one colour (one backend, or the
    CPU) takes that colour: the model's first screen shows where each layer went."""
    colours: dict[str, set[Colour]] = {}
    for node in graph.nodes:
        if node.colour is None or not node.namespace:
            continue
        parts = node.namespace.split("/")
        for k in range(1, len(parts) + 1):
            colours.setdefault("/".join(parts[:k]), set()).add(node.colour)
    return [
        GroupStyle(f"^{regex_escape(space)}$", next(iter(found)))
        for space, found in colours.items()
        if len(found) == 1
    ]


def _label(node: RecordedNode) -> str:
    if node.op == "placeholder":
        return _INPUT_LABELS.get(node.input_kind, node.input_kind or "input")
    if node.op == "get_attr":
        return "lowered module" if node.backend else "attribute"
    if node.op == "output":
        return "output"
    return ascii_name(node.target.removesuffix(".default"))


def module_namespace(stack: list[tuple[str, str]]) -> str:
    """The layers a node sits in, as a namespace: `features/features.4` (the root module, whose
    path is empty, and torch.export's own wrappers are no layer)."""
    paths = [p for p, cls in stack if p and "<locals>" not in cls]
    return "/".join(ascii_name(p) for p in paths)


def _layers_of_parameters(graph: RecordedGraph) -> dict[str, str]:
    """Each node's namespace: its module stack's; a parameter's or buffer's, its owner's (the
    layer whose nodes use `features.0.0` for `features.0.0.weight`)."""
    out = {n.name: module_namespace(n.module_stack) for n in graph.nodes if n.module_stack}
    by_path: dict[str, str] = {}
    for n in graph.nodes:
        if n.module_stack and n.module_stack[-1][0]:
            by_path.setdefault(n.module_stack[-1][0], out.get(n.name, ""))
    for n in graph.nodes:
        if n.op == "placeholder" and n.input_target:
            owner = n.input_target.rpartition(".")[0]
            if owner in by_path:
                out[n.name] = by_path[owner]
    _inherit_layers(graph, out)
    return out


def _inherit_layers(graph: RecordedGraph, layers: dict[str, str]) -> None:
    """Nodes no layer claims (a quantization's (de)quantize, a frozen weight, what export added
    outside any module) go to the deepest layer all their readers share: walking the graph
    backwards, readers are placed before what they read. Graph inputs and the output stay at
    the top, as in the program's graph."""
    readers: dict[str, list[str]] = {}
    for n in graph.nodes:
        for a in dict.fromkeys(n.args):
            readers.setdefault(a, []).append(n.name)
    for n in reversed(graph.nodes):
        if layers.get(n.name) or n.op == "output" or n.input_kind == "user_input":
            continue
        if any("<locals>" not in cls for _, cls in n.module_stack):
            continue  # the model's own top level (`x.mean(...)` in forward) stays there
        spaces = [layers.get(r, "").split("/") for r in readers.get(n.name, [])]
        if not spaces:
            continue
        shared = spaces[0]
        for other in spaces[1:]:
            k = 0
            while k < min(len(shared), len(other)) and shared[k] == other[k]:
                k += 1
            shared = shared[:k]
        if any(shared):
            layers[n.name] = "/".join(shared)


def _node_facts(node: RecordedNode, source_line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if node.op == "call_function":
        out["operator"] = node.target
        out.update({f"arg {k}": v for k, v in node.params.items()})
    elif node.op == "placeholder":
        out["input_kind"] = node.input_kind
        if node.input_target:
            out["lifts"] = node.input_target
    elif node.op == "get_attr" and node.backend:
        out["backend"] = node.backend
    if node.debug_handle is not None:
        out["debug_handle"] = str(node.debug_handle)
    layer = [(p, c) for p, c in node.module_stack if p]
    if layer:
        path, cls = layer[-1]
        out["module"] = f"{path} ({cls.rsplit('.', 1)[-1]})"
        out["module_class"] = cls
    if source_line:
        out["source_line"] = source_line
    fn = node.torch_fn.split(";", 1)[-1]
    if fn and not fn.startswith("OpOverload."):
        out["torch_fn"] = fn
    return out


def _tensor_facts(t: TensorMeta) -> dict[str, str]:
    out = {"tensor_name": t.name, "dtype": _dtype(t.dtype)}
    if t.shape is not None:
        out["shape"] = shape_text(t.shape)
    return out


def _dtype(schema_name: str) -> str:
    """torch's name of a dtype the export schema names (FLOAT -> float32); the rest as named."""
    member = ScalarType.__members__.get(schema_name)
    return dtype_name(member.value) if member is not None else schema_name.lower()


def _edges(graph: RecordedGraph, out: Graph) -> None:
    """An edge per node read, from the output that holds it: a multi-output node's `getitem`
    nodes read its outputs in order. Each input port shows what its source's output port does."""
    nodes = {n.id: n for n in out.nodes}
    position: dict[str, int] = {}  # getitem node -> which output of its owner it reads
    count: dict[str, int] = {}
    for n in graph.nodes:
        if n.op == "call_function" and n.target == "getitem" and n.args:
            position[n.name] = count.get(n.args[0], 0)
            count[n.args[0]] = position[n.name] + 1
    for n in graph.nodes:
        target = nodes[n.name]
        for pos, arg in enumerate(dict.fromkeys(n.args)):
            source = nodes.get(arg)
            if source is None:
                continue
            index = position.get(n.name, 0) if pos == 0 else 0
            index = index if index < len(source.outputs) else 0
            target.edges.append(Edge(arg, str(index), str(pos)))
            shown = source.outputs[index].attrs if source.outputs else {}
            target.inputs.append(Port(str(pos), shown))


def _where(
    ma: MethodAnalysis, runs: GraphRuns, tf: TimeFormat | None
) -> tuple[Callable[[int], Colour], Callable[[int], dict[str, str]]]:
    """The colour and the attributes of the nodes of each runtime step."""
    names = partition_group_names(ma)
    parts = ma.partitions.partitions

    def colour(step: int) -> Colour:
        run = runs.steps[step]
        backends = [parts[p].backend for p in run.partitions if not parts[p].is_cpu]
        return backend_colour(backends[0]) if backends else CPU_COMPUTE_COLOUR

    def attrs(step: int) -> dict[str, str]:
        run = runs.steps[step]
        out = {"ran_in": _ran_in(ma, run, names)}
        if run.measured_median is not None and tf is not None:
            out["measured median (its runtime step)"] = tf.value(run.measured_median)
        return out

    return colour, attrs


def _ran_in(ma: MethodAnalysis, run: StepRun, names: list[str]) -> str:
    shown = run.instructions[:MAX_SHOWN_INSTRUCTIONS]
    ins = ", ".join(f"#{i}" for i in shown) + (" …" if len(run.instructions) > len(shown) else "")
    where = "; ".join(ma.partitions.partitions[p].name for p in run.partitions)
    return f"{where}: instruction{'s' if len(run.instructions) > 1 else ''} {ins}"


def _graph_facts(
    view: EtRecordAnalysis, graph: RecordedGraph, runs: GraphRuns | None
) -> dict[str, str]:
    out = {
        "etrecord": view.graphs.source,
        "graph": GRAPH_TEXT.get(graph.kind, graph.kind),
        "method": graph.method,
        "nodes": str(len(graph.nodes)),
    }
    if view.notes:
        out["program"] = "\n".join(view.notes)
    if runs is not None:
        out["runtime_steps"] = f"{len(runs.steps)} (nodes that ran: {len(runs.node_step)})"
    return out
