"""torch.export's JSON values, as the ETRecord's graphs hold them (`etrecord_graphs.py`): what a
node reads (the names its arguments refer to), a constant argument as text, a node's provenance,
the tensors a node reads and writes and its number arguments, a graph's inputs and outputs, the
static shapes of its tensors.

An argument is one member of the schema's `Argument` union (`{"as_tensor": {"name": ...}}`,
`{"as_ints": [2, 2]}`, `{"as_none": []}`, ...; `_generated/export_schema.py` lists them). The
walk is bounded: 8 levels of nesting, `MAX_ARGUMENT_TEXT` characters of a constant kept, and
`MAX_PROVENANCE` levels of a `from_node` chain followed (its JSON values counted before parsing).
"""

from __future__ import annotations

import json
from typing import Any, Final

from pte_adapter.container import files
from pte_adapter.errors import LimitExceededError, PteFormatError

MAX_PROVENANCE: Final = 64  # levels of one node's `from_node` chain followed
MAX_ARGUMENT_TEXT: Final = 200  # characters of one non-tensor argument kept as text
MAX_RANK: Final = 16  # dimensions of a recorded tensor shape kept; deeper ones count as unknown


def provenance(text: str, part: str) -> tuple[str, ...]:
    """A node's `from_node` (a JSON list of sources, each with its own `from_node`) as the chain of
    "<name>.<graph id>", following the last source at each level as the Inspector's
    `get_ancestor_node_identifiers` does, at most MAX_PROVENANCE levels. PteFormatError when it
    is not JSON, or nested past what Python's parser takes."""
    if not text:
        return ()
    if files.json_values(text.encode()) > files.MAX_JSON_VALUES:
        raise LimitExceededError("a node's from_node has too many JSON values", part=part)
    try:
        sources = json.loads(text)
    except RecursionError as e:
        raise PteFormatError("from_node nested too deeply", part=part) from e
    except ValueError as e:
        raise PteFormatError(f"from_node is not JSON: {e}", part=part) from e
    out: list[str] = []
    while isinstance(sources, list) and sources and len(out) < MAX_PROVENANCE:
        last = sources[-1]
        if not isinstance(last, dict):
            break
        out.append(f"{last.get('name')}.{last.get('graph_id')}")
        sources = last.get("from_node")
    return tuple(out)


_SYM_KINDS = ("as_sym_int", "as_sym_float", "as_sym_bool")


def kind_of(arg: Any) -> str:
    return next(iter(arg)) if isinstance(arg, dict) and len(arg) == 1 else ""


def sym_name(arg: Any) -> str:
    kind = kind_of(arg)
    body = arg.get(kind) if kind in _SYM_KINDS else None
    name = body.get("as_name") if isinstance(body, dict) else None
    return name if isinstance(name, str) else ""


def references(arg: Any, refs: list[str], depth: int = 0) -> str | None:
    """Collect the names of the values `arg` reads into `refs`; return the text of the argument
    when it reads none (a constant: `[2, 2]`, `0.0001`), else None."""
    if depth > 8:
        return None
    kind = kind_of(arg)
    body = arg.get(kind) if kind else None
    if kind in ("as_tensor", "as_custom_obj") and isinstance(body, dict):
        refs.append(str(body.get("name")))
        return None
    if kind in _SYM_KINDS and isinstance(body, dict) and "as_name" in body:
        refs.append(str(body["as_name"]))
        return None
    if isinstance(body, list) and kind in (
        "as_tensors",
        "as_optional_tensors",
        "as_sym_ints",
        "as_sym_floats",
        "as_sym_bools",
    ):
        before = len(refs)
        for item in body:
            if kind == "as_tensors":
                references({"as_tensor": item}, refs, depth + 1)
            elif kind == "as_optional_tensors":
                references(item, refs, depth + 1)
            elif isinstance(item, dict) and isinstance(item.get("as_name"), str):
                refs.append(str(item["as_name"]))  # a SymIntArgument: as_name or as_int
        if len(refs) > before:
            return None
    if kind == "as_optional_tensor" and isinstance(body, dict):
        return references(body, refs, depth + 1)
    if kind == "as_graph" and isinstance(body, dict):
        return f"graph {str(body.get('name'))[:60]}"
    if kind == "as_none":
        return "None"
    return _text(body if kind else arg)


def tensor_names(args: Any) -> tuple[str, ...]:
    """The tensor names among serialized arguments (`as_tensor`, `as_tensors`); anything else,
    malformed or not, names none: the edges are extra evidence (`analysis/numerics/writers.py`)."""
    names: list[str] = []
    for arg in args if isinstance(args, list) else ():
        if not isinstance(arg, dict):
            continue
        one, many = arg.get("as_tensor"), arg.get("as_tensors")
        for t in [one] if isinstance(one, dict) else many if isinstance(many, list) else []:
            name = t.get("name") if isinstance(t, dict) else None
            if isinstance(name, str):
                names.append(name)
    return tuple(names)


def number_args(args: list[Any]) -> tuple[float | int | None, ...]:
    out: list[float | int | None] = []
    for arg in args:
        value = arg.get("as_float", arg.get("as_int")) if isinstance(arg, dict) else None
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        out.append(value if number else None)
    return tuple(out)


def arguments(inputs: Any) -> list[Any]:
    """A node's serialized inputs' arguments (`{"name": ..., "arg": {...}}` each)."""
    return [i.get("arg") for i in inputs if isinstance(i, dict)] if isinstance(inputs, list) else []


def graph_io(doc: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the method's user inputs, the graph's outputs) by tensor name; () where not recorded."""
    module = doc.get("graph_module") if isinstance(doc, dict) else None
    module = module if isinstance(module, dict) else {}
    graph, signature = module.get("graph"), module.get("signature")
    specs = signature.get("input_specs") if isinstance(signature, dict) else None
    user = [
        s["user_input"].get("arg")
        for s in (specs if isinstance(specs, list) else [])
        if isinstance(s, dict) and isinstance(s.get("user_input"), dict)
    ]
    outputs = graph.get("outputs") if isinstance(graph, dict) else None
    return tensor_names(user), tensor_names(outputs)


def static_shapes(tensors: dict[str, Any]) -> dict[str, tuple[int, ...]]:
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


def output_shapes(outputs: Any, shapes: dict[str, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The static shape of each tensor a node outputs (`as_tensor`, `as_tensors`)."""
    names: list[Any] = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        one, many = out.get("as_tensor"), out.get("as_tensors")
        names += [one] if isinstance(one, dict) else many if isinstance(many, list) else []
    found = (shapes.get(str(n.get("name"))) if isinstance(n, dict) else None for n in names)
    return [s for s in found if s is not None]


def _text(value: Any) -> str:
    try:
        text = json.dumps(value, separators=(", ", ": "))
    except (ValueError, TypeError, RecursionError):
        text = "?"
    return text if len(text) <= MAX_ARGUMENT_TEXT else text[: MAX_ARGUMENT_TEXT - 1] + "…"
