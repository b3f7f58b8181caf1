"""TOSA 1.x: the payload of `TOSABackend` delegates, Ethos-U sidecar files and bare `.tosa` files.

- `reader.read_tosa` parses the flatbuffer (bounds-checked; 0.x graphs are refused by version);
- `graphs.to_delegate_graphs` turns it into one `DelegateGraph` per basic block, with source
  information from debug locations or a `debug.json`;
- `decode` is the registry entry point for `TOSABackend` payloads;
- `read_tosa_file` opens a bare `.tosa` file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pte_adapter.container import files
from pte_adapter.delegates.arm.artifacts import existing_folders
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.delegates.tosa.debuginfo import DebugJson, load_debug_json
from pte_adapter.delegates.tosa.graphs import (
    DATA_OPS,
    TosaGraphs,
    format_counts,
    to_delegate_graphs,
)
from pte_adapter.delegates.tosa.reader import TosaModel, read_tosa
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph

__all__ = [
    "DATA_OPS",
    "TosaGraphs",
    "TosaModel",
    "decode",
    "find_debug_json",
    "read_tosa",
    "read_tosa_file",
    "to_delegate_graphs",
    "tosa_summary",
]

# A .tosa file larger than this is not read into memory by `read_tosa_file`.
MAX_TOSA_FILE_BYTES = 2**31


def find_debug_json(pte_path: Path | None, artifact_path: str | None) -> DebugJson | None:
    """The first usable `debug.json` in the searched folders; else the first unusable one (its
    `problem` says why), so that a broken file is reported rather than ignored."""
    broken: DebugJson | None = None
    for folder in existing_folders(pte_path, artifact_path):
        inside = pte_path.parent if pte_path is not None else None
        found = load_debug_json(folder / "debug.json", inside)
        if found is not None and not found.problem:
            return found
        broken = broken or found
    return broken


def _needs_debug_json(model: TosaModel) -> bool:
    return not any(op.location for block in model.blocks for op in block.operators)


def tosa_summary(
    model: TosaModel, built: TosaGraphs
) -> tuple[dict[str, str], dict[str, int | float | str]]:
    """Summary lines for the delegate node and numeric stats for analysis."""
    kinds: Counter[str] = Counter(op.kind for b in model.blocks for op in b.operators)
    tensors = sum(len(b.tensors) for b in model.blocks)
    const_bytes = sum(t.data_size for b in model.blocks for t in b.tensors.values())
    compute = sum(n for k, n in kinds.items() if k not in DATA_OPS)
    summary = {
        "tosa_version": str(model.version),
        "tosa_operators": f"{sum(kinds.values())} ({compute} excluding {'/'.join(sorted(DATA_OPS))})",
        "tosa_op_counts": format_counts(kinds),
        "tosa_tensors": str(tensors),
        "tosa_constant_bytes": str(const_bytes),
        "tosa_blocks": str(len(model.blocks)),
    }
    if model.software_version:
        summary["tosa_serializer_version"] = model.software_version
    if built.debug_source:
        where = "operator locations" if built.debug_source == "location" else built.debug_source
        summary["tosa_source_mapping"] = f"{built.debug_ops} operators from {where}"
    stats: dict[str, int | float | str] = {
        "tosa_ops": sum(kinds.values()),
        "tosa_compute_ops": compute,
        "tosa_tensors": tensors,
        "tosa_constant_bytes": const_bytes,
        "tosa_blocks": len(model.blocks),
    }
    return summary, stats


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    """Decode a `TOSABackend` payload (a TOSA flatbuffer, identical to its sidecar file)."""
    model = read_tosa(payload, f"{ctx.delegate_id} payload", base=ctx.payload_offset or 0)
    artifact_path = ctx.spec_text("debug_artifact_path")
    debug_json = find_debug_json(ctx.pte_path, artifact_path) if _needs_debug_json(model) else None
    built = to_delegate_graphs(model, main_name="TOSA main", prefix="TOSA", debug_json=debug_json)
    summary, stats = tosa_summary(model, built)
    spec = ctx.spec_text("tosa_spec")
    if spec:
        summary["tosa_spec"] = spec
    main = built.graphs[0]
    return DecodedDelegate(
        graphs=built.graphs,
        summary=summary,
        num_inputs=len(main.inputs),
        num_outputs=len(main.outputs),
        # Every block's compute operators: what runs inside the delegate (both branches of a
        # COND_IF count, as both are compiled).
        inner_op_count=int(stats["tosa_compute_ops"]),
        stats=stats,
        problems=built.problems,
    )


def read_tosa_file(path: str | Path) -> list[DelegateGraph]:
    """The graphs of a bare `.tosa` file (main block first). Raises `PteFormatError` on bad bytes."""
    path = Path(path)
    data = files.map_regular(path, str(path))  # a FIFO or a device is refused, never read
    if len(data) > MAX_TOSA_FILE_BYTES:
        from pte_adapter.errors import LimitExceededError

        raise LimitExceededError(
            f"{len(data)} bytes is more than this reader loads", part=str(path)
        )
    model = read_tosa(data, path.name)
    debug_json = find_debug_json(path, None) if _needs_debug_json(model) else None
    built = to_delegate_graphs(model, main_name="TOSA main", prefix="TOSA", debug_json=debug_json)
    summary, _ = tosa_summary(model, built)
    for key, value in summary.items():
        built.graphs[0].attrs.setdefault(key, value)
    if built.problems:
        built.graphs[0].attrs["problems"] = "\n".join(built.problems)
    return built.graphs
