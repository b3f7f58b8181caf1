"""One graph segment of a VGF file as nodes: a node per TOSA operator of its SPIR-V graph.

The SPIR-V graph's boundary is tied to the container: graph input i and output j are the interface
variables of the graph entry point (inputs first), each decorated with a descriptor set and binding
that the segment binds to a resource; a graph constant (`OpGraphConstantARM`, by its id) is bound by
the segment to an entry of the constant table, whose resource holds the bytes. Those SPIR-V ids
become the resource tensors; every other id is a tensor of the segment (`s<k>%<id>`). Operands
before an operator's first input are its attributes, shown with their values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pte_adapter.delegates.vgf._generated import spirv_tables as T
from pte_adapter.delegates.vgf.container import Segment, VgfFile
from pte_adapter.delegates.vgf.spirv import EntryPoint, ExtInst, Graph, SpirvModule
from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo
from pte_adapter.wording import shape_text

# Operators one segment shows, as Ethos-U's command stream is capped (each costs every view
# work): past them the rest is counted, not drawn (a problem says so).
MAX_OPERATIONS = 20_000


@dataclass
class SegmentOps:
    """What drawing one segment found (added to the partition's numbers)."""

    op_kinds: list[str] = field(default_factory=list)
    inline_constants: int = 0


class GraphSegment:
    def __init__(
        self,
        vgf: VgfFile,
        seg: Segment,
        sp: SpirvModule,
        graph: DelegateGraph,
        resource: Callable[[int], str],
        problem: Callable[[str], None],
    ) -> None:
        self.vgf, self.seg, self.sp, self.graph = vgf, seg, sp, graph
        self.resource = resource  # resource index -> its tensor id in `graph`
        self.report = problem
        self.alias: dict[int, str] = {}  # SPIR-V id -> resource tensor id
        self.type_of: dict[int, int] = {}  # SPIR-V id -> its type id
        self.found = SegmentOps()
        self.namespace = seg.name if len(vgf.segments) > 1 else ""

    def problem(self, text: str) -> None:
        self.report(f"segment {self.seg.name}: {text}")

    def build(self) -> SegmentOps:
        ep, body = self._entry()
        n_in = self._input_count(body)
        self._bind_inputs(body, ep, n_in)
        self._bind_constants()
        for op in body.ops:
            self.type_of[op.result] = op.result_type
        self._bind_outputs(body, ep, n_in)
        if len(body.ops) > MAX_OPERATIONS:
            self.problem(
                f"{len(body.ops)} operators, more than {MAX_OPERATIONS}; the first "
                f"{MAX_OPERATIONS} are shown and counted"
            )
        for n, op in enumerate(body.ops[:MAX_OPERATIONS]):
            self.graph.nodes.append(self._node(n, op))
        return self.found

    # -- the boundary ----------------------------------------------------------------------------

    def _entry(self) -> tuple[EntryPoint | None, Graph]:
        """The graph entry point the module names, and the graph it runs."""
        sp, want = self.sp, self.vgf.modules[self.seg.module_index].entry_point
        ep = next((e for e in sp.graph_entry_points if e.name == want), None)
        if ep is None and sp.graph_entry_points:
            ep = sp.graph_entry_points[0]
            self.problem(f"no graph entry point named {want!r}; showing {ep.name!r}")
        body = next((g for g in sp.graphs if ep is not None and g.id == ep.function), None)
        if body is None:
            body = sp.graphs[0]
            if ep is not None:
                self.problem(f"entry point {ep.name!r} names no graph")
        return ep, body

    def _input_count(self, body: Graph) -> int:
        gtype = self.sp.types.get(body.type)
        return gtype.count if gtype is not None and gtype.kind == "graph" else len(body.inputs)

    def _interface_resource(self, ep: EntryPoint | None, n_in: int, pos: int) -> int | None:
        """The resource bound to interface variable `pos` (graph inputs first, then outputs)."""
        seg, sp = self.seg, self.sp
        interface = ep.interface if ep is not None else []
        if pos < len(interface):
            var = interface[pos]
            key = (sp.decoration(var, "DescriptorSet"), sp.decoration(var, "Binding"))
            for s, bindings in seg.descriptor_sets:
                for b in bindings:
                    if (s, b.binding) == key:
                        return b.mrt_index
        # No decorations: the segment's own input/output order.
        ios, at = (seg.inputs, pos) if pos < n_in else (seg.outputs, pos - n_in)
        return ios[at].mrt_index if 0 <= at < len(ios) else None

    def _bind_inputs(self, body: Graph, ep: EntryPoint | None, n_in: int) -> None:
        for rid, tid, index_id in body.inputs:
            self.type_of[rid] = tid
            index = self.sp.integer(index_id)
            mrt = self._interface_resource(ep, n_in, index) if index is not None else None
            if mrt is None:
                self.problem(f"graph input %{rid} is bound to no resource")
                continue
            self.alias[rid] = self.resource(mrt)
            self._check_shape(rid, tid, mrt, "input")

    def _bind_constants(self) -> None:
        constants = self.vgf.constants
        for gid, (tid, gcid) in self.sp.graph_constants.items():
            self.type_of[gid] = tid
            ci = self.seg.constant_bindings.get(gcid)
            if ci is None or ci >= len(constants):
                self.problem(f"graph constant {gcid} (%{gid}) is bound to no constant")
                continue
            mrt = constants[ci].mrt_index
            self.alias[gid] = self.resource(mrt)
            self._check_shape(gid, tid, mrt, "constant")
            self.graph.tensors[self.alias[gid]].attrs.setdefault("graph_constant_id", str(gcid))

    def _bind_outputs(self, body: Graph, ep: EntryPoint | None, n_in: int) -> None:
        for value, index_id in body.outputs:
            index = self.sp.integer(index_id)
            mrt = self._interface_resource(ep, n_in, n_in + index) if index is not None else None
            if mrt is None:
                self.problem(f"graph output %{value} is bound to no resource")
            elif value in self.alias:
                self.problem(f"%{value} is both {self.alias[value]} and output {index}")
            else:
                self.alias[value] = self.resource(mrt)
                if value in self.type_of:
                    self._check_shape(value, self.type_of[value], mrt, "output")

    def _check_shape(self, x: int, type_id: int, mrt: int, what: str) -> None:
        if mrt >= len(self.vgf.resources):
            return
        shape = self.sp.tensor_shape(type_id)
        want = self.vgf.resources[mrt].shape
        if shape is not None and want and shape != want:
            self.problem(f"{what} %{x} is a {shape} tensor in SPIR-V but resource r{mrt} is {want}")

    # -- operators and their tensors ------------------------------------------------------------

    def _tensor(self, x: int) -> str:
        sp = self.sp
        tid = self.alias.get(x, f"s{self.seg.index}%{x}")
        if tid in self.graph.tensors:
            return tid
        c = sp.constants.get(x)
        ty = c.type if c is not None else self.type_of.get(x)
        attrs: dict[str, str] = {}
        if c is not None:
            attrs["constant"] = "inline in the SPIR-V module"
            attrs["values"] = value_text(sp, x)
            self.found.inline_constants += 1
        elif ty is None:
            attrs["declared"] = "false"
            self.problem(f"%{x} is used but nothing in the module defines it")
        self.graph.tensors[tid] = TensorInfo(
            id=tid,
            name=sp.id_name(x),
            shape=sp.tensor_shape(ty) if ty is not None else None,
            dtype=sp.dtype(ty) if ty is not None else "",
            attrs=attrs,
        )
        return tid

    def _signature(self, op: ExtInst) -> tuple[str, tuple[str, ...], bool, int]:
        """(kind, operand names, last repeats, first input) from the grammar, or a stand-in."""
        set_name = self.sp.imports.get(op.set, f"%{op.set}")
        spec = T.TOSA_OPS.get(op.number) if set_name == T.TOSA_SET else None
        if spec is None:
            self.problem(
                f"instruction {op.number} of {set_name} at byte {op.offset} is not a "
                f"{T.TOSA_SET} operator"
            )
            return f"{set_name}:{op.number}", (), True, 0
        kind, names, variadic, _first = spec
        if len(op.operands) < len(names) - variadic or (
            not variadic and len(op.operands) > len(names)
        ):
            self.problem(
                f"{kind} at byte {op.offset} has {len(op.operands)} operands; {T.TOSA_SET} "
                f"gives it {len(names)}"
            )
        return spec

    def _node(self, n: int, op: ExtInst) -> OpNode:
        kind, names, variadic, first = self._signature(op)
        attrs: dict[str, str] = {}
        inputs: list[str] = []
        roles: list[str] = []
        for pos, x in enumerate(op.operands):
            if names and (pos < len(names) or variadic):
                role = names[min(pos, len(names) - 1)]
            else:
                role = f"operand{pos}"
            if pos < first:
                attrs[role] = value_text(self.sp, x)
            else:
                inputs.append(self._tensor(x))
                roles.append(role)
                # Model Explorer lists only inputs that arrive on an edge: a constant input
                # (weights, bias, zero points, shapes) is described under its operand name.
                described = _constant_text(self.graph.tensors[inputs[-1]])
                if described:
                    attrs[role] = described
        attrs["inputs"] = ", ".join(roles)
        attrs["spirv_result"] = f"%{op.result}"
        attrs["file_offset"] = str(op.offset)
        self.found.op_kinds.append(kind)
        return OpNode(
            id=f"s{self.seg.index}.op{n}",
            kind=kind,
            label=kind,
            inputs=inputs,
            outputs=[self._tensor(op.result)],
            attrs=attrs,
            namespace=self.namespace,
        )


def _constant_text(t: TensorInfo) -> str:
    """ "[8, 3, 3, 3] int8, 216 bytes at file offset 4744 (VGF constant 0)", "[8] int32 = [...]"."""
    shape = shape_text(t.shape) if t.shape is not None else "?"
    if "constant_bytes" in t.attrs:
        return (
            f"{shape} {t.dtype}, {t.attrs['constant_bytes']} bytes at file offset "
            f"{t.attrs['file_offset']} (VGF constant {t.attrs['constant_index']})"
        )
    if "values" in t.attrs:
        return f"{shape} {t.dtype} = {t.attrs['values']}"
    return ""


def value_text(sp: SpirvModule, x: int) -> str:
    """A constant operand as text: "1", "true", "[1, 1, 1, 1]", "[0, 0, ...] (64 values)"."""
    if x not in sp.constants:
        return sp.id_name(x)
    values, total = sp.values(x)
    t = sp.types.get(sp.constants[x].type)
    shown = ", ".join(_scalar_text(v) for v in values)
    if t is not None and t.kind in ("int", "float", "bool") and len(values) == 1:
        return shown
    more = "" if total == len(values) else f", ... ({total if total >= 0 else '?'} values)"
    return f"[{shown}{more}]"


def _scalar_text(v: int | float | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    # Float constants are 32-bit (or 16-bit) in ML graphs: 9 significant digits round-trip them.
    return f"{v:.9g}" if isinstance(v, float) else str(v)
