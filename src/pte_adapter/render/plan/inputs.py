"""A node's inputs as Model Explorer shows them, and nothing it would not show.

Model Explorer lists a selected node's inputs one per incoming edge, each with the metadata of the
source's output merged under the input's own (a key the input does not set is taken from the
source output, except `__tensor_tag`; the list is sorted by key). So:

- an input key whose value every source output already shows is drawn the same without it: it is
  left out, and with it most of the graph's serialised size (a tensor is on one output and on every
  input that reads it);
- an input with no edge (a constant weight, a tensor nothing in the graph writes) is listed
  nowhere: its metadata becomes a node attribute `input<k>`, one `key: value` line each, where the
  panel shows it; unless one of the node's own outputs shows the same (a boundary node passing on a
  tensor whose edge from afar is not drawn).

`tests/unit/render/test_inputs.py` checks, on every example, that each input's merged list is what
it was with the full metadata, and that every edgeless input is in the attributes.
"""

from __future__ import annotations

from pte_adapter.render.plan.graph import Graph, Node, Port

NOT_MERGED = "__tensor_tag"  # the one key Model Explorer never takes from the source output


def input_attribute_key(node: Node, port: Port) -> str:
    """The attribute that shows an edgeless input: `input<k>`, unless the node already has one."""
    key = f"input{port.id}"
    return key if key not in node.attrs else f"{key} (tensor)"


# Model Explorer shows the first line or so of an attribute until it is expanded: what the tensor
# is and where it lives come first.
_FIRST = ("name", "tensor", "shape", "dtype", "constant", "memory_plan", "nbytes")
_FIRST_SET = frozenset(_FIRST)


def port_text(port: Port) -> str:
    """The input's metadata as an attribute value: a `key: value` line each, the telling ones
    first."""
    attrs = port.attrs
    lines = [f"{k}: {attrs[k]}" for k in _FIRST if k in attrs]
    lines += [f"{k}: {v}" for k, v in attrs.items() if k not in _FIRST_SET]
    return "\n".join(lines)


def show_inputs(graph: Graph, keep_edgeless: frozenset[str] = frozenset()) -> None:
    """Reduce every input of `graph` to what Model Explorer shows (see above). The nodes in
    `keep_edgeless` keep their edgeless inputs as they are (the method's outputs node, whose
    constant values are attributes of their own)."""
    outputs = {(n.id, p.id): p.attrs for n in graph.nodes for p in n.outputs}
    none: dict[str, str] = {}
    for node in graph.nodes:
        if not node.inputs:
            continue
        sources: dict[str, list[dict[str, str]]] = {}
        for e in node.edges:
            written = outputs.get((e.source, e.source_output), none)
            if e.target_input in sources:
                sources[e.target_input].append(written)
            else:
                sources[e.target_input] = [written]
        kept: list[Port] = []
        for port in node.inputs:
            attrs = port.attrs
            shown = sources.get(port.id)
            if shown is None:
                if node.id in keep_edgeless:
                    kept.append(port)
                elif attrs and attrs not in [out.attrs for out in node.outputs]:
                    node.attrs[input_attribute_key(node, port)] = port_text(port)
                continue
            if (len(shown) == 1 and shown[0] is attrs) or all(s == attrs for s in shown):
                # The common case (ports of one tensor share its dict): nothing of its own.
                if NOT_MERGED in attrs:
                    kept.append(Port(port.id, {NOT_MERGED: attrs[NOT_MERGED]}))
                continue
            own = {
                k: v
                for k, v in attrs.items()
                if k == NOT_MERGED or any(s.get(k) != v for s in shown)
            }
            if own:
                kept.append(Port(port.id, own))
        node.inputs = kept
