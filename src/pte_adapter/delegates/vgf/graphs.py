"""A VGF partition as neutral graphs: its TOSA operators, compute shaders and model sequence.

The main view ("VGF graph") is what runs: every TOSA operator of every graph segment (decoded from
the segment's SPIR-V module), every compute segment as one node, and the VGF resources as the
tensors between them. Inside a graph segment, edges follow SPIR-V ids; at its boundary the SPIR-V
graph's inputs and outputs are the resources its interface variables are bound to (descriptor set
and binding), and its graph constants are the constant resources the segment binds them to, so
weights point at their bytes in the VGF constant section. Resources of one alias group share
storage (a tensor written by a graph and read as an image by a shader): they are one tensor here,
which is what joins the segments. With more than one segment, each segment's operators sit in a
namespace of its name.

The second view ("VGF model sequence") is the container's own structure: one node per segment with
the resources it binds, as `vgf_dump` lists them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from pte_adapter.delegates.vgf.container import (
    Resource,
    Segment,
    VgfFile,
    descriptor_name,
    format_dtype,
    format_name,
)
from pte_adapter.delegates.vgf.segment import GraphSegment
from pte_adapter.delegates.vgf.spirv import SpirvModule
from pte_adapter.program.delegate_graph import DelegateGraph, OpNode, TensorInfo
from pte_adapter.program.model import saturating_numel

MAIN_VIEW: Final = "VGF graph"
SEQUENCE_VIEW: Final = "VGF model sequence"

# Bytes per element of the VkFormats ML resources use (for bytes in/out).
FORMAT_BYTES: Final = {
    9: 1, 10: 1, 13: 1, 14: 1, 37: 4, 38: 4, 74: 2, 75: 2, 76: 2, 98: 4, 99: 4, 100: 4,
    109: 16, 110: 8, 111: 8, 112: 8, 1000460000: 1,
}  # fmt: skip


@dataclass
class VgfGraphs:
    graphs: list[DelegateGraph]
    op_counts: Counter[str] = field(default_factory=Counter)  # TOSA operators by kind
    compute_segments: int = 0
    inline_constants: int = 0  # tensor constants written into the SPIR-V itself
    problems: list[str] = field(default_factory=list)


def resource_bytes(r: Resource) -> int | None:
    size = FORMAT_BYTES.get(r.vk_format)
    if size is None or not r.shape or any(d < 0 for d in r.shape):
        return None
    return size * saturating_numel(r.shape)  # never a number of thousands of digits


def _resource_tensor(r: Resource, tid: str, name: str) -> TensorInfo:
    attrs = {
        "category": r.category,
        "vk_format": format_name(r.vk_format),
        "vk_descriptor_type": descriptor_name(r.vk_descriptor_type),
    }
    if r.strides:
        attrs["strides"] = str(r.strides)
    if r.alias_group is not None:
        attrs["alias_group"] = str(r.alias_group)
    if r.extra_config:
        attrs["config"] = r.extra_config
    return TensorInfo(
        id=tid, name=name, shape=r.shape, dtype=format_dtype(r.vk_format), attrs=attrs
    )


def _names(vgf: VgfFile) -> dict[int, str]:
    names = {r.index: f"{r.category.lower()} r{r.index}" for r in vgf.resources}
    for b, nm in zip(vgf.inputs, vgf.input_names, strict=False):
        names[b.mrt_index] = nm
    for b, nm in zip(vgf.outputs, vgf.output_names, strict=False):
        names[b.mrt_index] = nm
    return names


def _add_constant_attrs(
    vgf: VgfFile, tensors: dict[str, TensorInfo], tid_of: dict[int, str], size_key: str
) -> None:
    for c in vgf.constants:
        t = tensors.get(tid_of.get(c.mrt_index, ""))
        if t is not None:
            t.attrs[size_key] = str(c.size)
            if size_key == "constant_bytes":
                t.constant_bytes = c.size  # the typed fact analysis reads
            t.attrs["constant_index"] = str(c.index)
            t.attrs["data"] = "VGF constant section"
            t.attrs["file_offset"] = str(c.offset)
            if c.sparsity_dimension >= 0:
                t.attrs["sparsity_dimension"] = str(c.sparsity_dimension)


def sequence_graph(vgf: VgfFile) -> DelegateGraph:
    """The container's structure: resources r<i> and one node per segment."""
    graph = DelegateGraph(name=SEQUENCE_VIEW)
    names = _names(vgf)
    for r in vgf.resources:
        graph.tensors[f"r{r.index}"] = _resource_tensor(r, f"r{r.index}", names[r.index])
    # "constant_bytes" marks a constant for `size` and analysis: only the main view says it, so
    # that each constant is counted once.
    by_index = {r.index: f"r{r.index}" for r in vgf.resources}
    _add_constant_attrs(vgf, graph.tensors, by_index, "constant_size")

    def ids(mrts: list[int]) -> list[str]:
        for m in mrts:
            graph.tensors.setdefault(f"r{m}", TensorInfo(f"r{m}", attrs={"declared": "false"}))
        return [f"r{m}" for m in mrts]

    for seg in vgf.segments:
        const_mrts = [vgf.constants[c].mrt_index for c in seg.constants if c < len(vgf.constants)]
        graph.nodes.append(
            OpNode(
                id=f"segment{seg.index}",
                kind=f"{seg.kind}_SEGMENT",
                label=f"{seg.name} ({seg.kind.lower()} segment)",
                inputs=ids([b.mrt_index for b in seg.inputs] + const_mrts),
                outputs=ids([b.mrt_index for b in seg.outputs]),
                attrs=_segment_attrs(vgf, seg),
            )
        )
    graph.inputs = ids([b.mrt_index for b in vgf.inputs])
    graph.outputs = ids([b.mrt_index for b in vgf.outputs])
    return graph


def _segment_attrs(vgf: VgfFile, seg: Segment) -> dict[str, str]:
    mod = vgf.modules[seg.module_index] if seg.module_index < len(vgf.modules) else None
    attrs = {
        "segment": seg.name,
        "type": seg.kind,
        "module": mod.name if mod else str(seg.module_index),
        "constants": str(len(seg.constants)),
        "dispatch_shape": str(seg.dispatch_shape),
        "descriptor_sets": str(len(seg.descriptor_sets)),
    }
    if mod is not None:
        attrs["entry_point"] = mod.entry_point
        attrs["code"] = f"{mod.code_kind}, {mod.code_size} bytes"
    bindings = [
        f"set {s} binding {b.binding}: r{b.mrt_index}" for s, bs in seg.descriptor_sets for b in bs
    ]
    if bindings:
        attrs["bindings"] = "\n".join(bindings)
    if seg.push_constant_ranges:
        attrs["push_constant_ranges"] = str(seg.push_constant_ranges)
    return attrs


class _Builder:
    """Builds the main view, segment by segment."""

    def __init__(self, vgf: VgfFile, modules: list[SpirvModule | None]) -> None:
        self.vgf = vgf
        self.modules = modules
        self.out = VgfGraphs(graphs=[])
        self.graph = DelegateGraph(name=MAIN_VIEW)
        self.names = _names(vgf)
        # Resources of one alias group are one tensor: the group's first resource.
        first_of_group: dict[int, int] = {}
        self.tid_of: dict[int, str] = {}
        for r in vgf.resources:
            if r.alias_group is not None and r.category != "CONSTANT":
                first = first_of_group.setdefault(r.alias_group, r.index)
                self.tid_of[r.index] = f"r{first}"
            else:
                self.tid_of[r.index] = f"r{r.index}"
        for r in vgf.resources:
            tid = self.tid_of[r.index]
            if tid == f"r{r.index}":
                self.graph.tensors[tid] = _resource_tensor(r, tid, self.names[r.index])
            else:
                t = self.graph.tensors[tid]
                alias = f"r{r.index} ({format_name(r.vk_format)}, {descriptor_name(r.vk_descriptor_type)}"
                alias += f", {r.shape})"
                t.attrs["aliases"] = "\n".join(filter(None, [t.attrs.get("aliases"), alias]))
        _add_constant_attrs(vgf, self.graph.tensors, self.tid_of, "constant_bytes")

    def problem(self, text: str) -> None:
        if text not in self.out.problems:
            self.out.problems.append(text)

    def resource(self, mrt: int) -> str:
        tid = self.tid_of.get(mrt)
        if tid is None:
            tid = f"r{mrt}"
            self.graph.tensors.setdefault(tid, TensorInfo(tid, tid, attrs={"declared": "false"}))
        return tid

    def build(self) -> VgfGraphs:
        vgf = self.vgf
        for seg in vgf.segments:
            sp = self.modules[seg.module_index] if seg.module_index < len(self.modules) else None
            if seg.kind == "GRAPH" and sp is not None and sp.graphs:
                self.graph_segment(seg, sp)
            else:
                if seg.kind == "GRAPH":
                    why = (
                        "its module could not be read" if sp is None else "its module has no graph"
                    )
                    self.problem(f"segment {seg.name}: TOSA operators not shown, {why}")
                self.segment_node(seg, sp)
        self.graph.inputs = [self.resource(b.mrt_index) for b in vgf.inputs]
        self.graph.outputs = [self.resource(b.mrt_index) for b in vgf.outputs]
        kinds = self.out.op_counts
        self.graph.attrs.update(
            {
                "operators": str(sum(kinds.values())),
                "op_counts": ", ".join(
                    f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
                ),
                "segments": ", ".join(f"{s.name} ({s.kind})" for s in vgf.segments) or "none",
            }
        )
        self.out.graphs = [self.graph, sequence_graph(vgf)]
        return self.out

    # -- compute segments (and graph segments whose SPIR-V cannot be shown) ----------------------

    def segment_node(self, seg: Segment, sp: SpirvModule | None) -> None:
        vgf = self.vgf
        self.out.compute_segments += seg.kind == "COMPUTE"
        const_mrts = [vgf.constants[c].mrt_index for c in seg.constants if c < len(vgf.constants)]
        attrs = _segment_attrs(vgf, seg)
        mod = vgf.modules[seg.module_index] if seg.module_index < len(vgf.modules) else None
        if sp is not None:
            ep = next((e for e in sp.entry_points if mod and e.name == mod.entry_point), None)
            ep = ep or (sp.entry_points[0] if sp.entry_points else None)
            if ep is not None:
                attrs["execution_model"] = ep.model
                for mode, literals in sp.execution_modes.get(ep.function, []):
                    attrs[f"execution_mode {mode}"] = " x ".join(str(v) for v in literals) or "yes"
                interface = [
                    f"{sp.id_name(v)} ({sp.type_text(sp.variables.get(v, (0, ''))[0])})"
                    for v in ep.interface
                ]
                if interface:
                    attrs["interface"] = "\n".join(interface)
            # The shader's descriptors: every variable with a descriptor set and binding.
            descriptors = []
            for v, (ty, _storage) in sp.variables.items():
                s, b = sp.decoration(v, "DescriptorSet"), sp.decoration(v, "Binding")
                if s is not None and b is not None:
                    descriptors.append(f"set {s} binding {b}: {sp.id_name(v)} ({sp.type_text(ty)})")
            if descriptors:
                attrs["shader_bindings"] = "\n".join(descriptors)
            attrs["spirv"] = (
                f"SPIR-V {sp.version[0]}.{sp.version[1]}, {sp.instructions} instructions"
            )
            attrs["capabilities"] = ", ".join(sp.capabilities)
        self.graph.nodes.append(
            OpNode(
                id=f"segment{seg.index}",
                kind=f"{seg.kind}_SEGMENT",
                label=f"{seg.name} (compute shader)" if seg.kind == "COMPUTE" else seg.name,
                inputs=[self.resource(b.mrt_index) for b in seg.inputs]
                + [self.resource(m) for m in const_mrts],
                outputs=[self.resource(b.mrt_index) for b in seg.outputs],
                attrs=attrs,
            )
        )

    # -- graph segments: one node per TOSA operator ----------------------------------------------

    def graph_segment(self, seg: Segment, sp: SpirvModule) -> None:
        found = GraphSegment(self.vgf, seg, sp, self.graph, self.resource, self.problem).build()
        self.out.op_counts.update(found.op_kinds)
        self.out.inline_constants += found.inline_constants


def vgf_graphs(vgf: VgfFile, modules: list[SpirvModule | None]) -> VgfGraphs:
    return _Builder(vgf, modules).build()
