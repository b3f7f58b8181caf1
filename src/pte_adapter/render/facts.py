"""Readable attribute texts for tensors, delegates, partitions and methods.

Shared by the Model Explorer renderer (attributes, metadata) and the text report, so both say the
same thing the same way. Every number here is traceable to bytes in the file: offsets are absolute.
"""

from __future__ import annotations

from typing import Any

from pte_adapter.analysis.npu_estimate import MethodEstimate
from pte_adapter.analysis.partitions import Partition
from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.backends import backend_info, legend
from pte_adapter.program.delegate_graph import EstimateTarget
from pte_adapter.program.model import DELEGATE, KERNEL, Delegate, Instruction, Method, Tensor
from pte_adapter.render.constant_facts import constant_text
from pte_adapter.wording import bytes_text, counts_text, cycles_text, plural, shape_text, us_text

# A tensor's facts whose value is the default for its kind are not repeated on every port (a
# large program has tens of thousands): the graph's `tensor_defaults` attribute states them once
# (docs/model-explorer.md, "Defaults"). Any other value is shown where it occurs.
TENSOR_DEFAULTS = (
    "a tensor's dim_order: contiguous ([0, 1, ..., n-1]), shape_dynamism: static, "
    "requires_grad: false; a planned tensor's nbytes: in its memory_plan; an instruction's kind: "
    "KernelCall (labelled by its operator; a delegate call by its backend id)"
)
_UNTRAINED = (
    "requires_grad is set on {n} of this method's tensors and not shown on them: the program has "
    "no training method (no __et_training_gradients_index_{name}), so nothing in it computes a "
    "gradient; the flag is what torch had on those tensors when the model was exported"
)


# The one non-contiguous dim order ExecuTorch names (exir/dim_order_utils.py: 4 dims only).
_NAMED_DIM_ORDERS: dict[tuple[int, ...], str] = {(0, 2, 3, 1): "channels_last"}

_DYNAMISM_TEXT = {
    # program.fbs: bound, "memory is allocated by the compiler"; unbound, "by the runtime".
    "dynamic_bound": "dynamic_bound (the shape shown is its upper bound)",
    "dynamic_unbound": "dynamic_unbound (no upper bound: the runtime allocates it)",
}


# The contiguous dim orders of ranks 0 to 8, made once: every tensor's port asks.
_CONTIGUOUS = [list(range(rank)) for rank in range(9)]


def dim_order_text(dim_order: list[int], rank: int) -> str | None:
    """A dim order as shown; None when it is the contiguous default for `rank` dims."""
    if dim_order == (_CONTIGUOUS[rank] if rank < len(_CONTIGUOUS) else list(range(rank))):
        return None
    text = "[" + ", ".join(str(d) for d in dim_order) + "]"
    name = _NAMED_DIM_ORDERS.get(tuple(dim_order), "not contiguous" if dim_order else "")
    return f"{text} ({name})" if name else text


def tensor_facts(t: Tensor, method: Method, out: dict[str, str] | None = None) -> dict[str, str]:
    """The tensor's facts, added to `out` (a new dict when None): what its ports show."""
    if out is None:
        out = {}
    out["shape"] = shape_text(t.sizes)
    out["dtype"] = t.dtype
    order = dim_order_text(t.dim_order, len(t.sizes))
    if order is not None:
        out["dim_order"] = order
    if t.dynamism != "static":
        out["shape_dynamism"] = _DYNAMISM_TEXT.get(t.dynamism, t.dynamism)
    if t.memory is None:  # a planned tensor's memory_plan says its bytes: not twice
        out["nbytes"] = str(t.nbytes)
    else:
        arena = t.memory.arena
        size = (
            method.non_const_buffer_sizes[arena]
            if 0 <= arena < len(method.non_const_buffer_sizes)
            else None
        )
        out["memory_plan"] = f"arena {arena} offset {t.memory.offset} ({t.nbytes} bytes" + (
            f" of {size})" if size is not None else ")"
        )
    if t.constant is not None:
        c = t.constant
        if c.kind == "external":
            where = (
                f"{c.source} @ {c.offset} ({c.size} bytes)"
                if c.source
                else "NOT FOUND (no .ptd beside the .pte holds it)"
            )
            out["constant"] = f"external key {c.key!r}: {where}"
        else:
            at = f" @ {c.offset}" if c.offset is not None else " (location not resolved)"
            out["constant"] = f"{c.kind}[{c.buffer_index}] in {c.source}{at}, {c.size} bytes"
    if t.fqn:
        out["name"] = t.fqn
    if t.storage_offset:
        out["storage_offset"] = str(t.storage_offset)
    if t.requires_grad and method.trains:
        out["requires_grad"] = "true (a trained tensor: the method returns gradients)"
    return out


def defaults_facts(method: Method) -> dict[str, str]:
    """The defaults the method graph's nodes leave out, said once (a line per kind); nothing for a
    method without tensors (a constant method returning numbers)."""
    tensors = [t for t in method.tensors if t is not None]
    if not tensors:
        return {}
    lines = [TENSOR_DEFAULTS]
    flagged = 0 if method.trains else sum(1 for t in tensors if t.requires_grad)
    if flagged:
        lines.append(_UNTRAINED.format(n=flagged, name=method.name))
    for backend_id in dict.fromkeys(d.id for d in method.delegates):
        text = backend_info(backend_id).defaults_not_shown
        if text:
            lines.append(text)
    lines.append("Any other value is shown where it occurs.")
    return {"defaults_not_shown": "\n".join(lines)}


def delegate_facts(d: Delegate) -> dict[str, str]:
    out = {
        "delegate_index": str(d.index),
        "backend_id": d.id,
        "payload": (
            f"{d.storage} #{d.data_index} @ {d.payload_offset}, {bytes_text(d.payload_size)}"
            if d.payload_offset is not None
            else f"{d.storage} #{d.data_index} (not found)"
        ),
    }
    for spec in d.compile_specs:
        out[f"compile_spec.{spec.key}"] = spec.text
    for k, v in d.decoded.summary.items():
        out[k] = v
    problems = d.problems + d.decoded.problems
    if problems:
        out["problems"] = "\n".join(problems)
    return out


def partition_facts(method: Method, part: Partition) -> dict[str, str]:
    out = {
        "backend": part.backend,
        "instructions": (
            f"{part.instructions[0]}..{part.instructions[-1]} ({len(part.instructions)})"
            if part.instructions
            else "none"
        ),
        "boundary_bytes_in": str(part.bytes_in),
        "boundary_bytes_out": str(part.bytes_out),
    }
    if part.is_cpu:
        out["cpu_compute_calls"] = str(sum(part.compute_ops.values()))
        out["cpu_glue_calls"] = str(sum(part.glue_ops.values()))
        if part.compute_ops:
            out["cpu_compute_ops"] = counts_text(part.compute_ops)
        if part.glue_ops:
            out["cpu_glue_ops"] = counts_text(part.glue_ops)
        if part.control:
            out["control"] = counts_text(part.control)
    else:
        if part.inner_ops is not None:
            out["inner_ops"] = str(part.inner_ops)
        if part.delegate_index is not None and 0 <= part.delegate_index < len(method.delegates):
            d = method.delegates[part.delegate_index]
            for k, v in d.decoded.stats.items():
                out[k] = str(v)
    return out


def constant_methods_facts(result: ProgramAnalysis) -> dict[str, str]:
    """The program's constant methods, a line each (`get_max_seq_len = 128`), on every method
    graph: an LLM export's configuration, one click from the first screen."""
    if not result.constant_methods:
        return {}
    lines = [f"{name} = {constant_text(v)}" for name, v in result.constant_methods.items()]
    return {"constant_methods": "\n".join(lines)}


def _problem_facts(result: ProgramAnalysis, ma: MethodAnalysis) -> dict[str, str]:
    out = {}
    if ma.summary.problems:
        out["problems"] = "\n".join(ma.summary.problems)
    if result.problems:
        out["file_problems"] = "\n".join(result.problems)
    if result.notes:
        out["file_notes"] = "\n".join(result.notes)
    return out


def constant_method_facts(result: ProgramAnalysis, ma: MethodAnalysis) -> dict[str, str]:
    """A method without instructions is what it returns: that is its description."""
    program = result.program
    return {
        "file": program.path.name if program.path else "",
        "method": ma.method.name,
        "returns": constant_text(ma.constants.returns),
        "instructions": "none: a constant method (it returns values stored in the file)",
        **constant_methods_facts(result),
        **_problem_facts(result, ma),
    }


def method_facts(result: ProgramAnalysis, ma: MethodAnalysis) -> dict[str, str]:
    if ma.is_constant:
        return constant_method_facts(result, ma)
    program, method, s = result.program, ma.method, ma.summary
    out = {
        "file": program.path.name if program.path else "",
        "method": method.name,
        "instructions": str(s.instructions),
        "delegate_partitions": str(s.delegate_partitions),
        "delegate_calls_by_backend": counts_text(s.delegate_calls) or "none",
        "cpu_islands": str(s.cpu_islands),
        "cpu_kernel_calls": f"{s.cpu_kernel_calls} ({s.cpu_compute_calls} compute, "
        f"{s.cpu_glue_calls} glue)",
        "cpu_compute_ops": counts_text(s.cpu_compute_ops) or "none",
        "boundary_crossings": crossings_text(s.crossings, s.crossing_bytes),
        "delegate_handoffs": crossings_text(s.handoffs, s.handoff_bytes),
        "delegated_share_by_instructions": f"{s.delegated_share_by_instructions:.1%}",
        "delegated_share_by_inner_ops": (
            "unknown (a delegate was not decoded)"
            if s.delegated_share_by_inner_ops is None
            else f"{s.delegated_share_by_inner_ops:.1%}"
        ),
        "memory_arenas": ", ".join(
            f"{i}: {bytes_text(n)}" for i, n in enumerate(method.non_const_buffer_sizes) if i
        )
        or "none",
        "legend": legend(list(s.delegate_calls)),
    }
    if s.npu_estimate:
        out.update(npu_estimate_facts(s.npu_estimate))
    out.update(constant_methods_facts(result))
    out.update(_problem_facts(result, ma))
    return out


def estimate_target_text(t: EstimateTarget) -> str:
    """`ethos-u85-256 Ethos_U85_SYS_DRAM_Mid Shared_Sram`: what an estimate is for."""
    return f"{t.accelerator} {t.system_config} {t.memory_mode}"


def npu_estimate_facts(est: MethodEstimate) -> dict[str, str]:
    """The method's NPU estimate (analysis/npu_estimate.py) as graph attributes."""
    frag = est.fragmentation
    share = frag.share_of_npu_time
    return {
        "npu_estimate": f"{us_text(est.time_us)} ({cycles_text(est.cycles)}) over {est.partitions} "
        f"partition(s), busiest {est.busiest}; {estimate_target_text(est.target)}",
        "npu_boundary_cost": (
            us_text(frag.time_us)
            + (f" ({share:.1%} of NPU time)" if share is not None else "")
            + f": {bytes_text(frag.boundary_bytes)} through {frag.boundary_memory}, "
            f"{frag.invocations} invocation(s)"
        ),
        "npu_boundary_cost_assumptions": "; ".join(frag.assumptions),
    }


def instruction_label(method: Method, ins: Instruction) -> str:
    """An instruction as its node is labelled: `aten::add.out`, a delegate's id, or its kind."""
    if ins.kind is KERNEL:
        op = method.operator_of(ins.op_index)
        return op.full_name if op is not None else f"unknown operator {ins.op_index}"
    if ins.kind is DELEGATE:
        d = ins.delegate_index
        if d is not None and 0 <= d < len(method.delegates):
            return method.delegates[d].id or "delegate"
        return f"unknown delegate {d}"
    return str(ins.kind.value)


def number_text(key: str, v: Any) -> str:
    """A named number as `summary` and `diff` show it (text and HTML): a `*bytes` count in bytes,
    the rest as they are; `-` for none."""
    if v is None:
        return "-"
    return bytes_text(int(v)) if key.endswith("bytes") else str(v)


def crossings_text(counts: dict[str, int], nbytes: dict[str, int]) -> str:
    """`npu→cpu 3 tensors / 1.2 KiB (1234 B), ...`: tensors crossing (or handed over) by direction,
    as `summary`, the report and Model Explorer's Graph info say it; "none" for none."""
    return (
        ", ".join(
            f"{d} {plural(n, 'tensor')} / {bytes_text(nbytes.get(d, 0))}" for d, n in counts.items()
        )
        or "none"
    )
