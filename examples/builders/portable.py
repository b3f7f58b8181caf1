"""Portable examples (no delegate): a small CNN with its ETRecord, two methods, control flow, a
FreeCall, and mutable buffers."""

from __future__ import annotations

import contextlib
import re

import torch

from examples.common import example, reset_outputs, write_pte
from examples.lowering import portable_lower
from examples.models import seeded
from examples.models.portable import (
    Accumulator,
    CondModel,
    MethodAsForward,
    NonzeroCount,
    TwoHeads,
)
from examples.models.small import SmallNet


@example(
    "undelegated",
    "portable",
    "Small nested CNN (convolution, batch norm, hardtanh/ReLU6, max_pool2d, addmm, add, "
    "softmax) with no delegate: portable KernelCalls only, constants in the constant segment; "
    "ETRecord in undelegated.etrecord.",
)
def build_undelegated():
    name = "undelegated"
    reset_outputs(f"{name}.pte", f"{name}.etrecord")
    ep = torch.export.export(seeded(SmallNet), (torch.randn(1, 3, 32, 32),))
    prog = portable_lower(ep, etrecord=name)
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord"],
        "sidecars": [],
        "settings": {"model": "SmallNet", "input": [1, 3, 32, 32]},
    }


@example(
    "two_methods",
    "portable",
    "One program with two methods: 'forward' (encoder+decoder MLP) and 'encode' "
    "(encoder only), built with to_edge({'forward': ep1, 'encode': ep2}); no delegate.",
)
def build_two_methods():
    name = "two_methods"
    reset_outputs(f"{name}.pte")
    m = seeded(TwoHeads)
    x = (torch.randn(2, 16),)
    ep1 = torch.export.export(m, x)
    ep2 = torch.export.export(MethodAsForward(m, "encode"), x)
    prog = portable_lower({"forward": ep1, "encode": ep2})
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"methods": ["forward", "encode"], "input": [2, 16]},
    }


@example(
    "cond",
    "portable",
    "torch.cond program (two branch sub-graphs) lowered with plain to_edge: control flow "
    "as JumpFalseCall / MoveCall instructions (no FreeCall: see free_call).",
)
def build_cond():
    name = "cond"
    reset_outputs(f"{name}.pte")
    ep = torch.export.export(seeded(CondModel), (torch.randn(4, 8),))
    prog = portable_lower(ep)
    return {"files": [write_pte(prog, name)], "sidecars": [], "settings": {"input": [4, 8]}}


def _unbound_planning_pass():
    """A MemoryPlanningPass that makes nonzero's output DYNAMIC_UNBOUND and frees it.

    The emitter turns ``memory.free`` nodes into FreeCall, and
    ``exir.memory_planning.insert_calls_to_free`` inserts them for DYNAMIC_UNBOUND
    tensors. In ExecuTorch 1.5.1 that path is unreachable from the normal flow:
    every data-dependent shape is classified DYNAMIC_BOUND (planned at its upper
    bound), and ``apply_algo`` collects specs with ``ignore_dynamic_unbound_tensor``
    left at True, so unbound specs never reach ``insert_calls_to_free``. This pass
    marks the nonzero spec unbound (so it is not planned), runs the normal planner,
    then calls ``insert_calls_to_free`` for the unbound specs itself. (Its
    ``graph_module.recompile()`` needs ``TensorSpec.__repr__`` to be valid Python,
    which it is not in 1.5.1 -- ``device=CPU:0`` -- see ``_valid_tensorspec_repr``.)
    """
    from executorch.exir.memory_planning import insert_calls_to_free
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.schema import TensorShapeDynamism

    class UnboundNonzeroPlanning(MemoryPlanningPass):
        def run(self, graph_module, graph_signature=None):
            unbound = set()
            for n in graph_module.graph.nodes:
                if n.op == "call_function" and "nonzero" in str(n.target):
                    n.meta["spec"].shape_dynamism = TensorShapeDynamism.DYNAMIC_UNBOUND
                    unbound.add(n.meta["spec"])
            result = super().run(graph_module, graph_signature)  # sets lifetimes
            insert_calls_to_free(graph_module, unbound)
            return result

    return UnboundNonzeroPlanning()


@contextlib.contextmanager
def _valid_tensorspec_repr():
    """Quote the device in TensorSpec's repr so FX can compile graphs holding specs."""
    from executorch.exir.tensor import TensorSpec

    orig = TensorSpec.__repr__

    def rep(self):
        return re.sub(r"device=([^,)]*)", lambda m: f"device={m.group(1)!r}", orig(self))

    TensorSpec.__repr__ = rep
    try:
        yield
    finally:
        TensorSpec.__repr__ = orig


@example(
    "free_call",
    "portable",
    "nonzero() output marked DYNAMIC_UNBOUND (via a MemoryPlanningPass subclass): the tensor "
    "has no memory-planned allocation and is released by a FreeCall instruction.",
)
def build_free_call():
    name = "free_call"
    reset_outputs(f"{name}.pte")
    ep = torch.export.export(NonzeroCount(), (torch.randn(4, 8),))
    with _valid_tensorspec_repr():
        prog = portable_lower(ep, config_kwargs={"memory_planning_pass": _unbound_planning_pass()})
    return {"files": [write_pte(prog, name)], "sidecars": [], "settings": {"input": [4, 8]}}


@example(
    "mutable_buffer",
    "portable",
    "Module with two registered buffers updated in place in forward (acc, steps): mutable "
    "tensors with their initial values in a mutable data segment "
    "(InitializedMutableBufferPass) and names emitted (emit_mutable_buffer_names).",
)
def build_mutable_buffer():
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    name = "mutable_buffer"
    reset_outputs(f"{name}.pte")
    ep = torch.export.export(seeded(Accumulator), (torch.randn(4, 8),))
    prog = portable_lower(
        ep,
        config_kwargs={
            "passes": [InitializedMutableBufferPass(["acc", "steps"])],
            "emit_mutable_buffer_names": True,
        },
    )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"input": [4, 8], "buffers": ["acc", "steps"]},
    }
