"""Rows of a program's run: its values on their own, or joined by layer with a reference
program's run (`--reference`: the same network exported another way, run on the same input).

The join (docs/numerics.md): a runtime output of this program and one of the reference are the
same tensor when their layers have the same key (`layers.py`: the exported graph's node name, from
each program's own ETRecord; debug handles differ between two programs; a method input's
(de)quantization keys the method input) and, where both ETRecords record it, the same module;
their shapes must then be equal too. Of several reference outputs of one layer (a delegate's
integer output and the dequantize after it) the one of the same dtype is taken (of the same shape
first), else the last.

An output whose layer no reference output has is joined **by provenance** when both nodes carry
the value of the same node of the network (`layers.py`: `origin`, each ETRecord's own `from_node`)
in the same module, and exactly one reference output does: the same tensor computed two ways
(`avg_pool3d` here, `avg_pool2d` over a view in the reference). Its elements are then compared in
row-major order when the two shapes differ only by views (the same number of elements, every other
node of each instruction a view). The row says it was joined so and names both.

A runtime output with no partner is listed as not joined, with why; when some of this run's layers
are not in the reference's exported graph at all, one problem names them (a node of the reference
alone, folded away here or inside a partition, changes no row and is not named).
"""

from __future__ import annotations

from dataclasses import replace

from pte_adapter.analysis.numerics.layers import method_input_key
from pte_adapter.analysis.numerics.logged import LoggedRun
from pte_adapter.analysis.numerics.metrics import compare, stats
from pte_adapter.analysis.numerics.rows import (
    BY_INPUT,
    BY_LAYER,
    BY_PROVENANCE,
    MethodNumerics,
    NumericRow,
    ProgramNumerics,
    Unjoined,
    summarise,
)
from pte_adapter.analysis.numerics.side import Side, SideOutput
from pte_adapter.analysis.numerics.writers import is_qdq, is_view
from pte_adapter.program.model import Method, dtype_name

# Why the reference has no value of a method input: what ExecuTorch's runtime logs.
NO_INPUT_LOGGED = (
    "the reference's run holds no value of its method input (ExecuTorch's runtime logs what "
    "instructions write and what a method returns, never its inputs)"
)


def _row(side: Side, method: Method, run: LoggedRun, o: SideOutput) -> NumericRow:
    t = o.logged.tensor
    values = side.values(method, run, o.logged)
    return NumericRow(
        runtime_ops=o.runtime_ops,
        aot_ops=o.layer.aot_ops,
        layer=o.layer.layer,
        module=o.layer.module,
        source_line=o.layer.source_line,
        instructions=(o.instruction,),
        partition=o.partition,
        partition_name=o.partition_name,
        place=o.place,
        boundary=o.boundary,
        output=o.logged.position,
        shape=tuple(t.sizes),
        dtype=dtype_name(t.scalar_type),
        layer_by_rule=bool(o.layer.uncertain),
        dequantized=values.quant,
        stats=stats(values.real if values.real is not None else values.raw)
        if values.raw is not None
        else None,
        note="; ".join(n for n in (values.problem, o.layer.uncertain) if n),
    )


def _unjoined(o: SideOutput, reason: str) -> Unjoined:
    return Unjoined(
        o.runtime_ops, (o.instruction,), o.layer.layer, o.partition, o.logged.position, reason
    )


def _pick(candidates: list[SideOutput], o: SideOutput) -> SideOutput:
    """Of the reference's outputs of one layer: the last of the same shape and dtype, else of the
    same shape, else the last."""
    t = o.logged.tensor
    shaped = [c for c in candidates if c.logged.tensor.sizes == t.sizes]
    same = [c for c in shaped if c.logged.tensor.scalar_type == t.scalar_type]
    return (same or shaped or candidates)[-1]


def _no_partner(o: SideOutput, side: Side, reference: Side, method: str) -> str:
    if not o.layer.key:
        if side.source is None:
            return "no layer: no ETRecord of this program (rows by instruction only)"
        if o.layer.unkeyed:
            return o.layer.unkeyed
        if o.layer.aot_ops:
            return (
                f"the (de)quantization of a weight or a method input ({o.layer.layer}): no "
                "layer of the model to join by"
            )
        return "no layer: this program's ETRecord records no node for this instruction"
    if reference.source is None or reference.program.etrecord is None:
        return "the reference has no ETRecord that belongs to it: its outputs have no layers"
    record = reference.program.etrecord.methods.get(method)
    if record is None:
        return "the reference's ETRecord has no record of this method"
    if o.layer.key.startswith(method_input_key(0)[:-1]):
        kind = "dequantization" if "dequantize" in " ".join(o.runtime_ops) else "quantization"
        return f"the {kind} of the method's {o.layer.layer}: {NO_INPUT_LOGGED}"
    if o.layer.uncertain:
        return f"{o.layer.layer} is a guess ({o.layer.uncertain}): not joined"
    names, origins = reference.node_names(method)
    if o.layer.key in names:
        return (
            f"the reference's run logs no output of {o.layer.layer} (no instruction of it writes "
            "that node's output alone: it is inside a delegate partition, or a view that does "
            "not run)"
        )
    made_from = next((n for n in (o.layer.origin, o.layer.key) if n in origins), "")
    if made_from:
        return (
            f"the reference's run logs no output that carries the value of {made_from} (the node "
            f"{o.layer.layer} is or was made from), or several do: not joined"
        )
    return f"{NOT_IN_REFERENCE} {o.layer.layer}"


NOT_IN_REFERENCE = "the reference's ETRecord has no node"


def _views_only(side: Side, method: str, o: SideOutput) -> bool:
    """Whether the output's instruction runs one node and views of it (so its logged elements are
    its layer's in row-major order, whatever the shape)."""
    src = side.source.methods.get(method) if side.source else None
    record = side.program.etrecord.methods.get(method) if side.program.etrecord else None
    ins = src.instructions.get(o.instruction) if src else None
    if record is None or ins is None:
        return False
    nodes = [n for h in ins.handles for n in record.nodes_by_handle.get(h, []) if not is_qdq(n)]
    return sum(not is_view(n) for n in nodes) <= 1


def _joined(
    side: Side,
    reference: Side,
    method: Method,
    ref_method: Method,
    runs: tuple[LoggedRun, LoggedRun],
    pair: tuple[SideOutput, SideOutput],
    joined_by: str = BY_LAYER,
) -> NumericRow | str:
    """The row of an output and its reference partner, or why they cannot be compared."""
    o, r = pair
    if o.layer.module_path and r.layer.module_path and o.layer.module_path != r.layer.module_path:
        return f"{o.layer.layer} is {o.layer.module} here, {r.layer.module} in the reference"
    reshaped = list(o.logged.tensor.sizes) != list(r.logged.tensor.sizes)
    if reshaped and (why := _shapes_differ(side, reference, (method, ref_method), pair, joined_by)):
        return why
    mine = side.values(method, runs[0], o.logged)
    theirs = reference.values(ref_method, runs[1], r.logged)
    for v, whose in ((mine, "its"), (theirs, "the reference's")):
        if v.problem:
            return f"{whose} values cannot be read: {v.problem}"
    note = ""
    a, b = theirs.real, mine.real
    if a is None or b is None:
        same = o.logged.tensor.scalar_type == r.logged.tensor.scalar_type
        if not same or (a is None) != (b is None):
            dtype = dtype_name((o if b is None else r).logged.tensor.scalar_type)
            whose = "its" if b is None else "the reference's"
            return (
                f"{whose} values are {dtype} without quantization parameters in the program "
                "(no quantize or dequantize kernel beside them), the other side's are not: "
                "not compared"
            )
        # Integers on both sides, of one dtype, neither quantized: indices, masks, counts.
        a, b = theirs.raw, mine.raw
        note = "compared as integers: no quantization parameters on either side"
    assert a is not None and b is not None
    if joined_by == BY_PROVENANCE:
        note = "; ".join(n for n in (note, _provenance_note(o, r, reshaped)) if n)
        a = a.reshape(b.shape)
    if joined_by == BY_INPUT:
        note = "; ".join(n for n in (note, _input_note(r)) if n)
    row = _row(side, method, runs[0], o)
    by_input = joined_by == BY_INPUT  # no instruction of the reference wrote it
    return replace(
        row,
        reference_instructions=() if by_input else (r.instruction,),
        reference_output=0 if by_input else r.logged.position,
        reference_dtype=dtype_name(r.logged.tensor.scalar_type),
        reference_dequantized=theirs.quant,
        reference_layer=r.layer.layer,
        joined_by=joined_by,
        metrics=compare(a, b),
        note="; ".join(n for n in (row.note, note) if n),
    )


def _shapes_differ(
    side: Side,
    reference: Side,
    methods: tuple[Method, Method],
    pair: tuple[SideOutput, SideOutput],
    joined_by: str,
) -> str:
    """'' when outputs of two shapes are one value through views (a join by provenance), else
    why they are not compared."""
    o, r = pair
    mine, theirs = list(o.logged.tensor.sizes), list(r.logged.tensor.sizes)
    if (
        joined_by == BY_PROVENANCE
        and _elements(mine) == _elements(theirs)
        and _views_only(side, methods[0].name, o)
        and _views_only(reference, methods[1].name, r)
    ):
        return ""
    return f"shapes differ: {mine} here, {theirs} in the reference"


def _elements(shape: list[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _input_note(r: SideOutput) -> str:
    return (
        f"against the reference's {r.layer.layer}, as its instruction {r.instruction} "
        f"({', '.join(r.runtime_ops)}) logged it among its arguments (argument {r.logged.position})"
    )


def _provenance_note(o: SideOutput, r: SideOutput, reshaped: bool) -> str:
    ops = ", ".join(r.layer.aot_ops) or r.layer.layer
    text = (
        f"joined by provenance: {o.layer.layer} here and, in the reference, {ops} (instruction "
        f"{r.instruction}, {', '.join(r.runtime_ops)}) each carry the value of "
        f"{o.layer.origin} (each ETRecord's from_node)"
    )
    if reshaped:
        text += (
            f"; compared element for element in row-major order "
            f"({list(r.logged.tensor.sizes)} in the reference, through views)"
        )
    return text


def _method_rows(side: Side, reference: Side | None, m: MethodNumerics, method: Method) -> None:
    runs = side.runs(method.name)
    if not runs:
        m.problems.append(f"{side.run.dump.name} logged no values of method '{method.name}'")
        return
    if m.run >= len(runs):
        m.problems.append(f"method '{method.name}' ran {len(runs)} times: no run {m.run + 1}")
        return
    run = runs[m.run]
    m.emulated = run.emulated
    outputs = side.outputs(method, run)
    if reference is None:
        m.rows = [_row(side, method, run, o) for o in outputs]
        return
    ref_method = reference.method(method.name)
    ref_runs = reference.runs(method.name)
    if ref_method is None or not ref_runs or m.run >= len(ref_runs):
        why = (
            f"the reference has no method '{method.name}'"
            if ref_method is None
            else f"the reference's run logged no values of method '{method.name}'"
            if not ref_runs
            else f"the reference's method '{method.name}' ran {len(ref_runs)} times"
        )
        m.problems.append(why)
        m.unjoined = [_unjoined(o, why) for o in outputs]
        return
    ref_run = ref_runs[m.run]
    m.reference_emulated = ref_run.emulated
    by_key, by_origin = _by_layer(reference.outputs(ref_method, ref_run))
    ref_inputs = {r.layer.key: r for r in reference.inputs(ref_method, ref_run).values()}
    missing: list[str] = []
    for o in outputs:
        candidates = by_key.get(o.layer.key) if o.layer.key and not o.layer.uncertain else None
        joined_by = BY_LAYER
        if not candidates and o.layer.key and o.layer.origin and not o.layer.uncertain:
            candidates = _same_origin(by_origin.get(o.layer.origin, []), o)
            joined_by = BY_PROVENANCE
        if not candidates and o.layer.key in ref_inputs:
            candidates, joined_by = [ref_inputs[o.layer.key]], BY_INPUT
        if not candidates:
            why = _no_partner(o, side, reference, method.name)
            if why.startswith(NOT_IN_REFERENCE):
                missing.append(
                    f"{o.layer.layer} ({o.layer.module})" if o.layer.module else o.layer.layer
                )
            m.unjoined.append(_unjoined(o, why))
            continue
        partner = _pick(candidates, o)
        pair = (o, partner)
        made = _joined(side, reference, method, ref_method, (run, ref_run), pair, joined_by)
        if isinstance(made, str):
            m.unjoined.append(_unjoined(o, made))
        else:
            m.rows.append(made)
    if missing:
        m.problems.append(not_in_reference(method.name, missing))


def _by_layer(
    outputs: list[SideOutput],
) -> tuple[dict[str, list[SideOutput]], dict[str, list[SideOutput]]]:
    """The reference's outputs by layer key and by origin (the network node they carry)."""
    by_key: dict[str, list[SideOutput]] = {}
    by_origin: dict[str, list[SideOutput]] = {}
    for r in outputs:
        if r.layer.key and not r.layer.uncertain:
            by_key.setdefault(r.layer.key, []).append(r)
        if r.layer.origin and not r.layer.uncertain:
            by_origin.setdefault(r.layer.origin, []).append(r)
    return by_key, by_origin


def _same_origin(candidates: list[SideOutput], o: SideOutput) -> list[SideOutput]:
    """The reference outputs that carry the value of the node `o` carries, in its module, when
    they are all of one layer (its kernel's output and the (de)quantization of it, `_pick`
    chooses by shape and dtype); else none: two layers would be a guess."""
    found = [
        c
        for c in candidates
        if not (o.layer.module_path and c.layer.module_path)
        or c.layer.module_path == o.layer.module_path
    ]
    layers = {c.layer.layer for c in found}
    return found if len(layers) == 1 else []


def not_in_reference(method: str, layers: list[str]) -> str:
    """The problem of a run whose layers the reference's exported graph does not have."""
    names = list(dict.fromkeys(layers))
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return (
        f"method '{method}': {len(names)} of this run's layers are not in the reference's "
        f"exported graph ({shown}): not the same network, or exported another way; they are not "
        "joined"
    )


def numerics_of(
    side: Side, reference: Side | None, threshold_db: float, run: int = 0
) -> ProgramNumerics:
    """The rows of every method of `side`'s run (its `run`-th run of each method), joined with
    `reference`'s when given (module docstring)."""
    result = ProgramNumerics(
        etdump=side.run.dump.name,
        debug_buffer=side.run.buffer.name if side.run.buffer else "",
        reference=reference.name if reference else None,
        reference_etdump=reference.run.dump.name if reference else "",
        reference_debug_buffer=reference.run.buffer.name
        if reference and reference.run.buffer
        else "",
        threshold_db=threshold_db,
        emulated=side.logs.emulated,
        reference_emulated=bool(reference and reference.logs.emulated),
        logged_outputs=side.logs.logged_outputs,
        problems=list(side.logs.problems),
    )
    if side.run.buffer_problem:
        result.problems.append(side.run.buffer_problem)
    if reference is not None:
        result.problems += [f"reference: {p}" for p in reference.logs.problems]
        if reference.run.buffer_problem:
            result.problems.append(f"reference: {reference.run.buffer_problem}")
        if side.program.etrecord is None:
            result.problems.append(
                f"no ETRecord for {side.name}: rows by instruction only, no layers; "
                "--reference joins by layer and needs both programs' ETRecords"
            )
    for method in side.program.methods:
        if not method.instructions:
            continue
        runs = len(side.runs(method.name))
        m = MethodNumerics(method.name, result.reference, threshold_db, run, runs)
        _method_rows(side, reference, m, method)
        summarise(m)
        result.methods[method.name] = m
    return result
