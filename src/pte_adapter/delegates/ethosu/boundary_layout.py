"""What a partition's boundaries cost in layout work: the part of its estimate that exists only
because its inputs and outputs cross to the CPU, and would go if the partition were merged with
its neighbours (the what-if of `analysis/what_if.py`).

ExecuTorch's Arm backend hands a delegate its tensors in the PyTorch layout (NCHW) while the NPU
computes in NHWC, so Vela puts layout changes at the partition's edges:

- at the inputs, operations that only move the input into the NPU's layout: an Ethos-U55
  transpose (1x1 average pools writing with swapped strides, `vela_prices`), or a 1x1 pooling
  with unit stride that reads the input as it lies (SUM or AVERAGE of one element);
- at the outputs, the Ethos-U55's transposes again, and on the Ethos-U85 the last operation
  writing the output in NCHW order (strided or transposed), which limits its OFM block and makes
  it read its weights once per small block.

Inside a merged partition the input-side operations vanish, and an output-side write becomes a
plain NHCWB16 write: the difference is priced by the same per-operation model, the operation
re-costed with the plain OFM and a plain block. Both numbers are kept the way the estimate keeps
its cycles and Vela's.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pte_adapter.delegates.ethosu.commands import FeatureMap, NpuOperation
from pte_adapter.delegates.ethosu.perf_compute import compute_bound
from pte_adapter.delegates.ethosu.perf_memory import finish, memory_traffic
from pte_adapter.delegates.ethosu.perf_target import OpEstimate, Target
from pte_adapter.program.delegate_graph import DelegateGraph

_BLOCK_ELEMENTS = 4096


def _identity_pool(op: NpuOperation) -> bool:
    """A 1x1 pooling of unit stride that keeps every element."""
    return (
        op.name == "NPU_OP_POOL"
        and op.mode in ("SUM", "AVERAGE")
        and op.kernel == (1, 1)
        and op.stride == (1, 1)
        and op.ifm is not None
        and op.ofm is not None
        and op.ifm.height * op.ifm.width * op.ifm.depth
        == op.ofm.height * op.ofm.width * op.ofm.depth
    )


def _has_table(op: NpuOperation) -> bool:
    return op.activation not in ("", "LUT_NONE")


def _is_layout(op: NpuOperation, est: OpEstimate) -> bool:
    """An operation that only moves data into another layout: a transpose, or an identity
    pooling without a look-up table."""
    return est.vela_kind == "transpose" or (_identity_pool(op) and not _has_table(op))


def _passes_layout(op: NpuOperation) -> bool:
    """Elementwise work (a table look-up done as a pooling too), which Vela may do before or
    after a layout change at a boundary."""
    return op.name == "NPU_OP_ELEMENTWISE" or (_identity_pool(op) and _has_table(op))


def _plain(fm: FeatureMap) -> FeatureMap:
    w, c = max(fm.width, 1), max(fm.depth, 1)
    depth16 = math.ceil(c / 16) * 16
    return replace(
        fm,
        format="NHCWB16",
        stride_c=16 * fm.elem_size,
        stride_x=16 * fm.elem_size,
        stride_y=w * depth16 * fm.elem_size,
    )


def _boundary_write(op: NpuOperation) -> bool:
    """An OFM written in another order than the NPU's own (NCHW for the caller)."""
    ofm = op.ofm
    if ofm is None or ofm.chained:
        return False
    if op.ofm_transpose not in ("", "HWC"):
        return True
    standard = ofm.format != "NHWC" or ofm.stride_c in (0, ofm.elem_size)
    return not standard and ofm.height * ofm.width > 1


def _plain_cycles(op: NpuOperation, target: Target) -> float:
    assert op.ofm is not None
    ofm = _plain(op.ofm)
    h, w, c = max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1)
    depth = min(c, 64)
    width = min(w, 16)
    height = min(h, max(_BLOCK_ELEMENTS // (depth * width), 1))
    plain = replace(op, ofm=ofm, ofm_transpose="", block=(height, width, depth))
    est = OpEstimate(op.index, op.label)
    compute_bound(plain, target, est)
    memory_traffic(plain, target, est)
    finish(est, target)
    return est.cycles


def boundary_layout(
    ops: list[NpuOperation], estimates: list[OpEstimate], graph: DelegateGraph, target: Target
) -> tuple[int, int, int, int]:
    """(input-side cycles, the same as Vela prices them, output-side extra cycles, the same as
    Vela prices them) of one partition.

    Input side: layout operations reached from the partition's inputs through layout and
    elementwise operations only (before any convolution or real pooling). Output side: layout
    operations from which only layout and elementwise operations lead to its outputs, and the
    extra cost of an operation writing an output in the caller's order."""
    by_index = {e.index: e for e in estimates if e.covered}
    nodes = {n.id: n for n in graph.nodes}
    steps = [
        (op, e, n)
        for op in ops
        if op.is_compute
        and (e := by_index.get(op.index)) is not None
        and (n := nodes.get(f"npu_op_{op.index}")) is not None
    ]
    # What no operation writes and the caller does not pass: constants Vela placed.
    produced = {t for _, _, n in steps for t in n.outputs} | set(graph.inputs)
    constants = {t for _, _, n in steps for t in n.inputs if t not in produced}
    near_input: set[str] = set(graph.inputs)
    cin = cin_vela = 0.0
    inside_in: set[int] = set()
    for op, est, node in steps:
        reads = set(node.inputs) - constants
        if reads and reads <= near_input and (_is_layout(op, est) or _passes_layout(op)):
            near_input.update(node.outputs)
            if _is_layout(op, est):
                cin += est.cycles
                cin_vela += est.cycles_as_vela
                inside_in.add(op.index)
    near_output: set[str] = set(graph.outputs)
    readers: dict[str, set[str]] = {}
    for _, _, node in steps:
        for t in node.inputs:
            readers.setdefault(t, set()).add(node.id)
    cout = cout_vela = 0.0
    for op, est, node in reversed(steps):
        if op.index in inside_in:
            continue
        writes = set(node.outputs)
        only_out = all(t in near_output or readers.get(t, set()) <= near_output for t in writes)
        if only_out and (_is_layout(op, est) or _passes_layout(op)):
            near_output.add(node.id)
            near_output.update(node.outputs)
            if _is_layout(op, est):
                cout += est.cycles
                cout_vela += est.cycles_as_vela
            continue
        if near_output.intersection(node.outputs) and _boundary_write(op):
            try:
                plain = _plain_cycles(op, target)
            except (ValueError, ArithmeticError, IndexError, KeyError, AssertionError):
                continue
            cout += max(est.cycles - plain, 0.0)
            cout_vela += max(est.cycles_as_vela - plain, 0.0)
    return round(cin), round(cin_vela), round(cout), round(cout_vela)
