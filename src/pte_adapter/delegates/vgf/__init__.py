"""VGF delegate payloads (ExecuTorch `VgfBackend`): the Arm ML SDK for Vulkan `.vgf` container.

- `container.read_vgf` reads the container (header, module table, model sequence, resource table,
  constants) into typed records with file offsets;
- `spirv.read_spirv` reads each SPIR-V module (types, constants, names, decorations, entry points
  and the `SPV_ARM_graph` graphs), with tables generated from the pinned SPIR-V grammars;
- `graphs.build_graphs` draws the partition: every TOSA operator of every graph segment, compute
  segments as nodes, resources between them, plus the model sequence;
- `layout.payload_layout` accounts for every byte of the payload (`pte-adapter size`).

No native library is needed: the ML SDK's own tools are test oracles only.
"""

from __future__ import annotations

from collections import Counter

from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.delegates.vgf.container import (
    HEADER_SIZE,
    MAGIC,
    MAGIC_OLD,
    VgfFile,
    read_header,
    read_vgf,
)
from pte_adapter.delegates.vgf.graphs import MAIN_VIEW, SEQUENCE_VIEW, build_graphs, resource_bytes
from pte_adapter.delegates.vgf.spirv import SpirvModule, read_spirv
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate

__all__ = [
    "HEADER_SIZE",
    "MAGIC",
    "MAGIC_OLD",
    "MAIN_VIEW",
    "SEQUENCE_VIEW",
    "VgfFile",
    "decode",
    "read_header",
    "read_modules",
    "read_vgf",
]


def read_modules(vgf: VgfFile, part: str) -> tuple[list[SpirvModule | None], list[str]]:
    """Each module's SPIR-V (None for source-code modules and unreadable ones), and problems."""
    out: list[SpirvModule | None] = []
    problems: list[str] = []
    for m in vgf.modules:
        if m.spirv is None or m.code_offset is None:
            out.append(None)
            if m.code_kind != "SPIR-V":
                problems.append(f"module {m.name}: {m.code_kind} code is not decoded")
            continue
        try:
            sp = read_spirv(m.spirv, f"{part} module {m.name}", m.code_offset, strict=False)
        except PteFormatError as e:
            problems.append(f"module {m.name}: {e}")
            out.append(None)
            continue
        problems += [f"module {m.name}: {p}" for p in sp.problems]
        out.append(sp)
    return out, problems


def _counts(kinds: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"VGF payload ({ctx.delegate_id})"
    base = ctx.payload_offset or 0
    vgf = read_vgf(payload, part, base)
    modules, module_problems = read_modules(vgf, part)
    built = build_graphs(vgf, modules)
    problems = vgf.problems + module_problems + built.problems

    categories = Counter(r.category for r in vgf.resources)
    by_index = {r.index: r for r in vgf.resources}
    bytes_in = [
        resource_bytes(by_index[b.mrt_index]) for b in vgf.inputs if b.mrt_index in by_index
    ]
    bytes_out = [
        resource_bytes(by_index[b.mrt_index]) for b in vgf.outputs if b.mrt_index in by_index
    ]
    const_bytes = sum(c.size for c in vgf.constants)
    tosa_ops = sum(built.op_counts.values())
    spirv_words = sum(m.words for m in modules if m is not None)
    module_text = []
    for m, sp in zip(vgf.modules, modules, strict=True):
        text = f"{m.name} ({m.kind}, entry {m.entry_point}, {m.code_kind}"
        if sp is not None:
            text += f" {sp.version[0]}.{sp.version[1]}, {sp.words} words"
        elif m.code_size:
            text += f", {m.code_size} bytes"
        module_text.append(text + ")")
    summary = {
        "format": f"VGF {vgf.version}",
        "vk_header_version": str(vgf.vk_header_version),
        "sections": ", ".join(f"{s.name} {s.size} B @ {s.offset}" for s in vgf.sections),
        "modules": "; ".join(module_text) or "none",
        "segments": "; ".join(
            f"{s.name} ({s.kind}, module "
            f"{vgf.modules[s.module_index].name if s.module_index < len(vgf.modules) else s.module_index})"
            for s in vgf.segments
        )
        or "none",
        "resources": ", ".join(f"{k} x{n}" for k, n in sorted(categories.items())) or "none",
        "inputs": str(len(vgf.inputs)),
        "outputs": str(len(vgf.outputs)),
        "constants": f"{len(vgf.constants)} ({const_bytes} bytes)",
        "tosa_operators": f"{tosa_ops} ({_counts(built.op_counts)})" if tosa_ops else "0",
    }
    if built.compute_segments:
        summary["compute_segments"] = str(built.compute_segments)
    for g in built.graphs:
        g.attrs = {**summary, **g.attrs} if g.name == SEQUENCE_VIEW else {**g.attrs}
    stats: dict[str, int | float | str] = {
        "vgf_modules": len(vgf.modules),
        "vgf_segments": len(vgf.segments),
        "vgf_graph_segments": sum(s.kind == "GRAPH" for s in vgf.segments),
        "vgf_compute_segments": built.compute_segments,
        "vgf_resources": len(vgf.resources),
        "vgf_constants": len(vgf.constants),
        "constant_bytes": const_bytes,
        "vgf_inline_constants": built.inline_constants,
        "vgf_spirv_bytes": 4 * spirv_words,
        "tosa_ops": tosa_ops,
        "tosa_op_counts": _counts(built.op_counts),
    }
    if bytes_in and all(b is not None for b in bytes_in):
        stats["vgf_input_bytes"] = sum(b or 0 for b in bytes_in)
    if bytes_out and all(b is not None for b in bytes_out):
        stats["vgf_output_bytes"] = sum(b or 0 for b in bytes_out)
    # What runs: every TOSA operator and every compute shader. Unknown when a graph segment's
    # operators could not be read.
    readable = all(
        s.kind != "GRAPH"
        or (
            s.module_index < len(modules)
            and (sp := modules[s.module_index]) is not None
            and sp.graphs
            and not sp.truncated
        )
        for s in vgf.segments
    )
    return DecodedDelegate(
        graphs=built.graphs,
        summary=summary,
        num_inputs=len(vgf.inputs) if vgf.has_sequence else None,
        num_outputs=len(vgf.outputs) if vgf.has_sequence else None,
        inner_op_count=tosa_ops + built.compute_segments if readable else None,
        stats=stats,
        problems=list(dict.fromkeys(problems)),
    )
