"""VGF delegate payloads (ExecuTorch `VgfBackend`): the Arm ML SDK for Vulkan `.vgf` container.

- `container.read_vgf` reads the container (header, module table, model sequence, resource table,
  constants) into typed records with file offsets;
- `spirv.read_spirv` reads each SPIR-V module (types, constants, names, decorations, entry points
  and the `SPV_ARM_graph` graphs), with tables generated from the pinned SPIR-V grammars;
- `graphs.vgf_graphs` draws the partition: every TOSA operator of every graph segment, compute
  segments as nodes, resources between them, plus the model sequence;
- `layout.payload_layout` accounts for every byte of the payload (`pte-adapter size`).

No native library is needed: the ML SDK's own tools are test oracles only.
"""

from __future__ import annotations

from collections import Counter

from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.vgf.container import (
    HEADER_SIZE,
    MAGIC,
    MAGIC_OLD,
    VgfFile,
    read_header,
    read_vgf,
)
from pte_adapter.delegates.vgf.graphs import (
    MAIN_VIEW,
    SEQUENCE_VIEW,
    VgfGraphs,
    resource_bytes,
    vgf_graphs,
)
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


def _module_text(vgf: VgfFile, modules: list[SpirvModule | None]) -> str:
    out = []
    for m, sp in zip(vgf.modules, modules, strict=True):
        text = f"{m.name} ({m.kind}, entry {m.entry_point}, {m.code_kind}"
        if sp is not None:
            text += f" {sp.version[0]}.{sp.version[1]}, {sp.words} words"
        elif m.code_size:
            text += f", {m.code_size} bytes"
        out.append(text + ")")
    return "; ".join(out) or "none"


def _summary(vgf: VgfFile, modules: list[SpirvModule | None], built: VgfGraphs) -> dict[str, str]:
    """What the delegate node shows."""
    names = [m.name for m in vgf.modules]
    categories = Counter(r.category for r in vgf.resources)
    tosa_ops = sum(built.op_counts.values())
    summary = {
        "format": f"VGF {vgf.version}",
        "vk_header_version": str(vgf.vk_header_version),
        "sections": ", ".join(f"{s.name} {s.size} B @ {s.offset}" for s in vgf.sections),
        "modules": _module_text(vgf, modules),
        "segments": "; ".join(
            f"{s.name} ({s.kind}, module "
            f"{names[s.module_index] if s.module_index < len(names) else s.module_index})"
            for s in vgf.segments
        )
        or "none",
        "resources": ", ".join(f"{k} x{n}" for k, n in sorted(categories.items())) or "none",
        "inputs": str(len(vgf.inputs)),
        "outputs": str(len(vgf.outputs)),
        "constants": f"{len(vgf.constants)} ({sum(c.size for c in vgf.constants)} bytes)",
        "tosa_operators": f"{tosa_ops} ({_counts(built.op_counts)})" if tosa_ops else "0",
    }
    if built.compute_segments:
        summary["compute_segments"] = str(built.compute_segments)
    return summary


def _stats(
    vgf: VgfFile, modules: list[SpirvModule | None], built: VgfGraphs
) -> dict[str, int | float | str]:
    """The partition's numbers for `summary --json`, `diff` and analysis."""
    stats: dict[str, int | float | str] = {
        "vgf_modules": len(vgf.modules),
        "vgf_segments": len(vgf.segments),
        "vgf_graph_segments": sum(s.kind == "GRAPH" for s in vgf.segments),
        "vgf_compute_segments": built.compute_segments,
        "vgf_resources": len(vgf.resources),
        "vgf_constants": len(vgf.constants),
        "constant_bytes": sum(c.size for c in vgf.constants),
        "vgf_inline_constants": built.inline_constants,
        "vgf_spirv_bytes": 4 * sum(m.words for m in modules if m is not None),
        "tosa_ops": sum(built.op_counts.values()),
        "tosa_op_counts": _counts(built.op_counts),
    }
    by_index = {r.index: r for r in vgf.resources}
    for key, bindings in (("vgf_input_bytes", vgf.inputs), ("vgf_output_bytes", vgf.outputs)):
        sizes = [resource_bytes(by_index[b.mrt_index]) for b in bindings if b.mrt_index in by_index]
        if sizes and len(sizes) == len(bindings) and all(n is not None for n in sizes):
            stats[key] = sum(n or 0 for n in sizes)
    return stats


def _all_operators_read(vgf: VgfFile, modules: list[SpirvModule | None]) -> bool:
    """Every graph segment's module was read to its end (else the operator count is unknown)."""
    for s in vgf.segments:
        if s.kind != "GRAPH":
            continue
        sp = modules[s.module_index] if s.module_index < len(modules) else None
        if sp is None or not sp.graphs or sp.truncated:
            return False
    return True


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    part = f"VGF payload ({ctx.delegate_id})"
    vgf = read_vgf(payload, part, ctx.payload_offset or 0)
    modules, module_problems = read_modules(vgf, part)
    built = vgf_graphs(vgf, modules)
    summary = _summary(vgf, modules, built)
    for g in built.graphs:
        if g.name == SEQUENCE_VIEW:
            g.attrs = {**summary, **g.attrs}
    stats = _stats(vgf, modules, built)
    # What runs: every TOSA operator and every compute shader.
    inner = int(stats["tosa_ops"]) + built.compute_segments
    return DecodedDelegate(
        graphs=built.graphs,
        summary=summary,
        num_inputs=len(vgf.inputs) if vgf.has_sequence else None,
        num_outputs=len(vgf.outputs) if vgf.has_sequence else None,
        inner_op_count=inner if _all_operators_read(vgf, modules) else None,
        stats=stats,
        problems=list(dict.fromkeys(vgf.problems + module_problems + built.problems)),
    )
