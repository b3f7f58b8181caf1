"""Rows of a program's run: its values on their own, or joined by layer with a reference
program's run (`--reference`: the same network exported another way, run on the same input).

The join (docs/numerics.md): a runtime output of this program and one of the reference are the
same tensor when their layers have the same key (`layers.py`: the exported graph's node name, from
each program's own ETRecord; debug handles differ between two programs) and, where both ETRecords
record it, the same module; their shapes must then be equal too. Of several reference outputs of
one layer (a delegate's integer output and the dequantize after it) the one of the same dtype is
taken (of the same shape first), else the last. A runtime output with no such partner is listed as not joined, with why.
"""

from __future__ import annotations

from dataclasses import replace

from pte_adapter.analysis.numerics.logged import LoggedRun
from pte_adapter.analysis.numerics.metrics import compare, stats
from pte_adapter.analysis.numerics.rows import (
    MethodNumerics,
    NumericRow,
    ProgramNumerics,
    Unjoined,
    summarise,
)
from pte_adapter.analysis.numerics.side import Side, SideOutput
from pte_adapter.program.model import Method, dtype_name


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
    known = any(o.layer.key in (n.aten_name, n.name, n.origin) for n in record.nodes)
    if known:
        return (
            f"the reference's run logs no output of {o.layer.layer} (no instruction of it writes "
            "that node's output alone: it is inside a delegate partition, or a view that does "
            "not run)"
        )
    return f"the reference's ETRecord has no node {o.layer.layer}"


def _joined(
    side: Side,
    reference: Side,
    method: Method,
    ref_method: Method,
    runs: tuple[LoggedRun, LoggedRun],
    pair: tuple[SideOutput, SideOutput],
) -> NumericRow | str:
    """The row of an output and its reference partner, or why they cannot be compared."""
    o, r = pair
    if o.layer.module_path and r.layer.module_path and o.layer.module_path != r.layer.module_path:
        return f"{o.layer.layer} is {o.layer.module} here, {r.layer.module} in the reference"
    if o.logged.tensor.sizes != r.logged.tensor.sizes:
        return (
            f"shapes differ: {list(o.logged.tensor.sizes)} here, "
            f"{list(r.logged.tensor.sizes)} in the reference"
        )
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
    row = _row(side, method, runs[0], o)
    return replace(
        row,
        reference_instructions=(r.instruction,),
        reference_output=r.logged.position,
        reference_dtype=dtype_name(r.logged.tensor.scalar_type),
        reference_dequantized=theirs.quant,
        metrics=compare(a, b),
        note="; ".join(n for n in (row.note, note) if n),
    )


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
    differ = graph_difference(side, reference, method.name)
    if differ:
        m.problems.append(differ)
    by_key: dict[str, list[SideOutput]] = {}
    for r in reference.outputs(ref_method, ref_run):
        if r.layer.key:
            by_key.setdefault(r.layer.key, []).append(r)
    for o in outputs:
        candidates = by_key.get(o.layer.key) if o.layer.key else None
        if not candidates:
            m.unjoined.append(_unjoined(o, _no_partner(o, side, reference, method.name)))
            continue
        partner = _pick(candidates, o)
        made = _joined(side, reference, method, ref_method, (run, ref_run), (o, partner))
        if isinstance(made, str):
            m.unjoined.append(_unjoined(o, made))
        else:
            m.rows.append(made)


def _layers(side: Side, method: str) -> set[tuple[str, str]]:
    """The (name, module path) of every node of the method's exported graph that computes (not a
    quantize/dequantize), when the side's ETRecord belongs to it."""
    from pte_adapter.analysis.numerics.layers import is_qdq

    if side.source is None or side.program.etrecord is None:
        return set()
    record = side.program.etrecord.methods.get(method)
    if record is None:
        return set()
    return {
        (n.aten_name or n.name, n.module_stack[-1][0] if n.module_stack else "")
        for n in record.nodes
        if n.debug_handle is not None and not is_qdq(n)
    }


def graph_difference(side: Side, reference: Side, method: str) -> str:
    """'' when both exported graphs have the same layers, else one line naming a few of each."""
    mine, theirs = _layers(side, method), _layers(reference, method)
    if not mine or not theirs or mine == theirs:
        return ""

    def few(items: set[tuple[str, str]]) -> str:
        shown = ", ".join(f"{n} ({m})" if m else n for n, m in sorted(items)[:4])
        return shown + (f" and {len(items) - 4} more" if len(items) > 4 else "")

    only_here, only_there = mine - theirs, theirs - mine
    parts = [f"{len(only_here)} only here: {few(only_here)}"] if only_here else []
    parts += [f"{len(only_there)} only in the reference: {few(only_there)}"] if only_there else []
    return (
        f"method '{method}': the two exported graphs have different layers ({'; '.join(parts)}): "
        "not the same network, or exported another way; rows join only where a layer is in both"
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
