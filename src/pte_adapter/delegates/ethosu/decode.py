"""Ethos-U delegate payloads: Vela's compiled NPU command stream, read without Vela.

`decode` splits the `vela_bin_stream` (binstream), reads the NPU configuration from the COP header
(cop), decodes the register command stream into NPU operations (commands) and recovers the
dataflow between them from feature-map addresses (dataflow).

What is fatal: a payload whose block framing is broken (PteFormatError, the registry reports it
for this delegate only). Everything after the framing degrades: a bad COP header or a cut stream
keeps the I/O description and whatever operations were decoded, and says what went wrong.
"""

from __future__ import annotations

import functools
import shlex
from collections import Counter

from pte_adapter.delegates.ethosu.binstream import (
    VelaBinStream,
    VelaIO,
    parse_bin_stream,
    region_name,
)
from pte_adapter.delegates.ethosu.boundary_layout import boundary_layout
from pte_adapter.delegates.ethosu.commands import CommandStream, NpuOperation, decode_commands
from pte_adapter.delegates.ethosu.cop import NpuConfig, parse_cop
from pte_adapter.delegates.ethosu.dataflow import MAX_LIVE_WRITES, Producer, trace
from pte_adapter.delegates.ethosu.memory_use import delegate_memory
from pte_adapter.delegates.ethosu.perf import (
    ASSUMPTIONS,
    Memory,
    OpEstimate,
    Target,
    estimate_operations,
    target_for,
)
from pte_adapter.delegates.ethosu.vela_prices import partition_notes
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import (
    DecodedDelegate,
    DelegateEstimate,
    DelegateGraph,
    EstimateTarget,
    MemoryTiming,
    OpNode,
    TensorInfo,
)
from pte_adapter.wording import cycles_text, shape_compact, us_text

__all__ = ["decode", "decode_stream"]

GRAPH_NAME = "NPU operations"


def decode_stream(
    payload: memoryview, ctx: DecodeContext | None = None, *, keep_commands: bool = False
) -> tuple[VelaBinStream, NpuConfig | None, CommandStream | None, list[str]]:
    """The typed pieces, for tests and tools: stream, config, commands and problems."""
    stream = parse_bin_stream(payload, ctx.sources if ctx is not None else None)
    problems = list(stream.problems)
    config: NpuConfig | None = None
    commands: CommandStream | None = None
    cmd = stream.block("cmd_data")
    if cmd is not None and cmd.data is not None:
        try:
            config, words = parse_cop(cmd.data)
        except PteFormatError as e:
            problems.append(str(e))
        else:
            streams = 1
            if config.num_weight_decoders is not None:
                streams = config.num_weight_decoders
            elif config.product_code == 1 and config.macs_per_cycle >= 512:
                streams = 2  # the 512-MAC U65 is two cores, each with its own weight stream
            commands = decode_commands(
                words, config.product_code, weight_streams=streams, keep_commands=keep_commands
            )
            problems += [f"EthosUBackend payload, block 'cmd_data': {p}" for p in commands.problems]
    return stream, config, commands, problems


def _block_bytes(stream: VelaBinStream, name: str) -> int | None:
    block = stream.block(name)
    return block.data.nbytes if block and block.data else None


def _summary(
    stream: VelaBinStream,
    config: NpuConfig | None,
    ops: list[NpuOperation],
    summary: dict[str, str],
) -> None:
    """What the payload holds, for people (the DelegateCall's attributes)."""
    compute = [op for op in ops if op.is_compute]
    by_kind = Counter(op.label.split(" ")[0] if op.is_compute else op.kind for op in ops)
    compute_kinds = Counter(_kind_with_mode(op) for op in compute)
    cmd_bytes, weight_bytes = _block_bytes(stream, "cmd_data"), _block_bytes(stream, "weight_data")
    if config is not None:
        summary["npu"] = config.describe()
        summary["npu_accelerator_config"] = config.accelerator_config
    summary["npu_operations"] = (
        ", ".join(f"{k} {v}" for k, v in sorted(compute_kinds.items())) or "none"
    )
    other = {k: v for k, v in by_kind.items() if k not in {op.kind for op in compute}}
    if other:
        summary["npu_other_commands"] = ", ".join(f"{k} {v}" for k, v in sorted(other.items()))
    if cmd_bytes is not None:
        words = f", {config.stream_words} command words" if config else ""
        summary["command_stream"] = f"{cmd_bytes} bytes{words}"
    if weight_bytes is not None:
        summary["weight_data"] = f"{weight_bytes} bytes" + _where(stream, "weight_data")
    if stream.scratch_size is not None:
        how = " (scratch_data block)" if stream.scratch_from_data_block else ""
        summary["scratch"] = f"{stream.scratch_size} bytes{how}"
    for role, ios in (("input", stream.inputs), ("output", stream.outputs)):
        for io in ios:
            summary[f"{role}_{io.index}"] = _describe_io(io)


def _stats(
    stream: VelaBinStream,
    config: NpuConfig | None,
    ops: list[NpuOperation],
    stats: dict[str, int | float | str],
) -> None:
    """The payload's numbers for reports (`delegate_stats` in `summary --json`)."""
    compute = [op for op in ops if op.is_compute]
    compute_kinds = Counter(_kind_with_mode(op) for op in compute)
    stats["npu_ops"] = len(compute)
    stats["npu_ops_by_kind"] = ", ".join(f"{k}:{v}" for k, v in sorted(compute_kinds.items()))
    for kind, n in sorted(Counter(op.kind for op in ops).items()):
        stats[f"npu_{kind.lower()}"] = n
    cmd_bytes, weight_bytes = _block_bytes(stream, "cmd_data"), _block_bytes(stream, "weight_data")
    if cmd_bytes is not None:
        stats["cmd_bytes"] = cmd_bytes
    if weight_bytes is not None:
        stats["weight_bytes"] = weight_bytes
    if stream.scratch_size is not None:
        stats["scratch_bytes"] = stream.scratch_size
    if config is not None:
        stats["macs_per_cycle"] = config.macs_per_cycle
        stats["cmd_words"] = config.stream_words
    stats["npu_weight_stream_bytes"] = sum(op.weight_bytes for op in compute)
    stats["npu_scale_stream_bytes"] = sum(op.scale_bytes for op in compute)


def decode(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    stream, config, commands, problems = decode_stream(payload, ctx)
    result = DecodedDelegate(problems=problems)
    result.num_inputs = len(stream.inputs) if stream.block("inputs") is not None else None
    result.num_outputs = len(stream.outputs) if stream.block("outputs") is not None else None
    ops = commands.operations if commands is not None else []
    graph = _graph(ops, stream, result.problems)
    result.graphs = [graph]
    result.inner_op_count = sum(op.is_compute for op in ops) if commands is not None else None
    _summary(stream, config, ops, result.summary)
    _cross_check(ctx, config, result.summary, result.problems)
    _stats(stream, config, ops, result.stats)
    accelerator = config.accelerator_config if config is not None else ctx.spec_text("target")
    if accelerator:
        flags = _flags(ctx)
        system_config, memory_mode = _flag(flags, "--system-config"), _flag(flags, "--memory-mode")
        result.memory = delegate_memory(stream, ops, accelerator, system_config, memory_mode)
    if config is not None and commands is not None:
        _estimate(ctx, config, ops, graph, result)
    graph.attrs.update(result.summary)
    return result


def _estimate(
    ctx: DecodeContext,
    config: NpuConfig,
    ops: list[NpuOperation],
    graph: DelegateGraph,
    result: DecodedDelegate,
) -> None:
    """Performance estimate per NPU operation (node attributes) and for the partition (stats).

    Never fails the payload: an unknown system config or an operation the model does not
    cover is said in the attributes."""
    flags = _flags(ctx)
    try:
        target = target_for(
            config.accelerator_config,
            _flag(flags, "--system-config"),
            _flag(flags, "--memory-mode"),
        )
    except ValueError as e:
        result.summary["npu_estimate"] = f"not estimated: {e}"
        return
    estimates = estimate_operations(ops, target)
    by_node = {f"npu_op_{e.index}": e for e in estimates}
    for node in graph.nodes:
        op = by_node.get(node.id)
        if op is not None:
            node.attrs.update(_estimate_attrs(op, target))
            node.cost_cycles = round(op.cycles) if op.covered else None
    total = result.estimate = partition_estimate(estimates, target)
    layout = boundary_layout(ops, estimates, graph, target)
    total.boundary_in_cycles, total.boundary_in_cycles_as_compiler = layout[0], layout[1]
    total.boundary_out_cycles, total.boundary_out_cycles_as_compiler = layout[2], layout[3]
    result.stats.update(estimate_stats(total))
    result.summary["npu_estimate"] = (
        f"{cycles_text(total.cycles)} = {us_text(total.time_us)} at "
        f"{target.clock_hz / 1e6:g} MHz, busiest {total.busiest} "
        f"({target.system_config} / {target.memory_mode})"
    )
    if target.assumed:
        result.summary["npu_estimate_assumed"] = "; ".join(target.assumed)
    if total.notes:
        # Where the command stream does what Vela's own estimate prices another way.
        result.summary["npu_estimate_notes"] = "; ".join(total.notes)
    if total.cycles_as_compiler is not None:
        result.summary["npu_estimate_as_vela"] = cycles_text(total.cycles_as_compiler)


def partition_estimate(estimates: list[OpEstimate], target: Target) -> DelegateEstimate:
    """Sums over a partition's operations: cycles, time, MACs and the busy cycles per resource."""
    covered = [e for e in estimates if e.covered]
    cycles = sum(e.cycles for e in covered)
    busy: dict[str, float] = {"MAC": sum(e.compute_cycles for e in covered)}
    for e in covered:
        for mem, c in e.memory_cycles.items():
            busy[mem] = busy.get(mem, 0.0) + c
    moved: dict[str, int] = {}
    for e in covered:
        for mem, n in e.bytes_by_memory().items():
            moved[mem] = moved.get(mem, 0) + n
    notes, as_vela = partition_notes(estimates)
    return DelegateEstimate(
        target=EstimateTarget(
            target.accelerator,
            target.system_config,
            target.memory_mode,
            target.clock_hz,
            _timing(target.regions[0]),
            _timing(target.regions[1]),
        ),
        cycles=round(cycles),
        time_us=round(cycles / target.clock_hz * 1e6, 1),
        macs=sum(e.macs for e in covered),
        busy_cycles={name: round(c) for name, c in sorted(busy.items())},
        busiest=max(busy.items(), key=lambda kv: kv[1])[0],
        bytes_by_memory=dict(sorted(moved.items())),
        not_covered=len(estimates) - len(covered),
        assumptions=ASSUMPTIONS,
        notes=tuple(notes),
        cycles_as_compiler=round(as_vela) if notes else None,
        compiler="Vela",
        # Layout changes, mostly the NCHW/NHWC ones at the partition's boundaries.
        transpose_cycles=round(sum(e.cycles for e in covered if e.vela_kind == "transpose")),
    )


def _timing(mem: Memory) -> MemoryTiming:
    return MemoryTiming(mem.name, mem.bandwidth, mem.read_latency, mem.write_latency)


def estimate_stats(est: DelegateEstimate) -> dict[str, int | float | str]:
    """The estimate as the partition's report numbers (`npu_est_*` in `summary --json`)."""
    t = est.target
    out: dict[str, int | float | str] = {
        "npu_est_cycles": est.cycles,
        "npu_est_us": est.time_us,
        "npu_est_macs": est.macs,
        "npu_est_busiest": est.busiest,
        "npu_est_clock_mhz": round(t.clock_hz / 1e6, 3),
        "npu_est_target": f"{t.accelerator} {t.system_config} {t.memory_mode}",
        "npu_est_not_covered": est.not_covered,
    }
    for name, c in est.busy_cycles.items():
        out[f"npu_est_busy_{name}"] = c
    for name, n in est.bytes_by_memory.items():
        out[f"npu_est_bytes_{name}"] = n
    if est.notes:  # where the stream does what Vela's estimate prices another way
        out["npu_est_cycles_as_vela"] = est.cycles_as_compiler or est.cycles
        out["estimate_notes"] = "; ".join(est.notes)
    if est.transpose_cycles:
        out["npu_est_transpose_cycles"] = est.transpose_cycles
    return out


def _bytes_by_kind(est: OpEstimate) -> dict[str, dict[str, int]]:
    """memory -> what (ifm, ofm, weights, scales, dma read ...) -> payload bytes."""
    out: dict[str, dict[str, int]] = {}
    for t in est.transfers:
        kinds = out.setdefault(t.memory, {})
        kinds[t.what] = kinds.get(t.what, 0) + t.bytes
    return out


def _estimate_attrs(est: OpEstimate, target: Target) -> dict[str, str]:
    if not est.covered:
        return {"est_cycles": "not covered", "est_note": est.note}
    by_mem = est.bytes_by_memory()
    out = {
        "est_cycles": str(round(est.cycles)),
        "est_time_us": f"{est.cycles / target.clock_hz * 1e6:.2f}",
        "est_bound": est.bound,
        "est_compute_cycles": str(round(est.compute_cycles)),
        "est_memory_cycles": ", ".join(
            f"{m} {round(c)}" for m, c in sorted(est.memory_cycles.items())
        ),
        "est_bytes": ", ".join(f"{m} {n}" for m, n in sorted(by_mem.items())),
        "est_bytes_detail": "; ".join(
            f"{m}: " + ", ".join(f"{what} {n}" for what, n in kinds.items())
            for m, kinds in sorted(_bytes_by_kind(est).items())
        ),
    }
    if est.duration:
        out["est_dma_cycles"] = str(round(est.duration))
        out["est_dma_hidden_cycles"] = str(round(max(est.duration - est.cycles, 0.0)))
    if est.vela_note:
        out["estimate_notes"] = est.vela_note
    if est.macs:
        out["est_macs"] = str(est.macs)
        if est.cycles:
            out["est_mac_utilisation"] = f"{est.macs / (est.cycles * target.macs):.1%}"
    return out


def _kind_with_mode(op: NpuOperation) -> str:
    return f"{op.kind}_{op.mode}" if op.mode and op.name != "NPU_OP_CONV" else op.kind


def _where(stream: VelaBinStream, name: str) -> str:
    b = stream.block(name)
    if b is None or not b.external:
        return ""
    return f", external in {b.source}" if b.source else f", external key {b.key} (missing)"


def _describe_io(io: VelaIO) -> str:
    shape = shape_compact(io.shape)
    return f"{shape} {io.dtype} @ {region_name(io.region)}+0x{io.offset:x} ({io.nbytes} bytes)"


def _flag(flags: list[str], name: str) -> str | None:
    for i, f in enumerate(flags):
        if f.startswith(name + "="):
            return f.split("=", 1)[1]
        if f == name and i + 1 < len(flags):
            return flags[i + 1]
    return None


def _flags(ctx: DecodeContext) -> list[str]:
    raw_flags = ctx.spec_text("compile_flags")
    return list(_split_flags(raw_flags)) if raw_flags else []


@functools.lru_cache(maxsize=64)
def _split_flags(raw_flags: str) -> tuple[str, ...]:
    """The compile flags as words. shlex is slow (pure Python, a few hundred microseconds a
    string), and every partition of an export has the same flags: split each string once."""
    try:
        return tuple(shlex.split(raw_flags))
    except ValueError:
        return tuple(raw_flags.split())


def _cross_check(
    ctx: DecodeContext, config: NpuConfig | None, summary: dict[str, str], problems: list[str]
) -> None:
    flags = _flags(ctx)
    target = ctx.spec_text("target")
    accel = _flag(flags, "--accelerator-config")
    for key, value in (
        ("compile_spec_target", target),
        ("compile_spec_accelerator_config", accel),
        ("compile_spec_system_config", _flag(flags, "--system-config")),
        ("compile_spec_memory_mode", _flag(flags, "--memory-mode")),
    ):
        if value is not None:
            summary[key] = value
    if config is None:
        return
    actual = config.accelerator_config
    for what, claimed in (("target", target), ("--accelerator-config", accel)):
        if claimed is not None and claimed.strip().lower() != actual:
            msg = (
                f"compile spec {what} says {claimed!r} but the command stream was compiled for "
                f"{actual} ({config.describe()})"
            )
            summary.setdefault("compile_spec_mismatch", msg)
            problems.append(msg)


def _io_tensors(graph: DelegateGraph, stream: VelaBinStream) -> None:
    for io_list, role in ((stream.inputs, "input"), (stream.outputs, "output")):
        for io in io_list:
            tid = f"{role}{io.index}"
            graph.tensors[tid] = TensorInfo(
                id=tid,
                name=f"{role} {io.index}",
                shape=io.shape,
                dtype=io.dtype,
                attrs={
                    "offset": f"0x{io.offset:x}",
                    "region": f"{io.region} ({region_name(io.region)})",
                    "bytes": str(io.nbytes),
                    "vela_io_record": f"shape={list(io.raw_shape)} elem_size={io.elem_size}",
                },
            )
            (graph.inputs if role == "input" else graph.outputs).append(tid)


def _output_tensor(op: NpuOperation) -> TensorInfo:
    """What an operation writes: its OFM (or a DMA's destination)."""
    fm = op.ofm
    attrs: dict[str, str] = {}
    if fm is not None:
        lo, hi = fm.address_range
        attrs = {"region": region_name(fm.region), "address": f"0x{lo:x}-0x{hi:x}"}
    elif op.dma is not None:
        attrs = {"region": region_name(op.dma.dst_region), "address": f"0x{op.dma.dst:x}"}
    return TensorInfo(
        id=f"op{op.index}",
        name=f"{op.kind.lower()}_{op.index}",
        shape=fm.shape if fm is not None else None,
        dtype=fm.dtype if fm is not None else "",
        attrs=attrs,
    )


def _tensor_of(p: Producer) -> str:
    return f"input{p[1]}" if isinstance(p, tuple) else f"op{p}"


def _inputs(graph: DelegateGraph, op: NpuOperation, reads: dict[str, list[Producer]]) -> list[str]:
    """The tensors an operation reads, by their producers; a feature map read from the weights
    region with no producer is a constant Vela placed there."""
    inputs: list[str] = []
    for role, producers in reads.items():
        for p in producers:
            tid = _tensor_of(p)
            if tid not in inputs:
                inputs.append(tid)
        operand = op.ifm if role == "ifm" else op.ifm2 if role == "ifm2" else None
        if not producers and operand is not None and region_name(operand.region) == "weights":
            # e.g. the zero channels of an LRN's padding: shown as a constant input.
            lo, hi = operand.address_range
            const_id = f"const{op.index}_{role}"
            graph.tensors[const_id] = TensorInfo(
                id=const_id,
                name=f"constant_{op.index}_{role}",
                shape=operand.shape,
                dtype=operand.dtype,
                attrs={
                    "region": "weights",
                    "address": f"0x{lo:x}-0x{hi:x}",
                    "constant": "read from the weight_data block",
                },
            )
            inputs.append(const_id)
    return inputs


def _graph(ops: list[NpuOperation], stream: VelaBinStream, problems: list[str]) -> DelegateGraph:
    graph = DelegateGraph(name=GRAPH_NAME)
    _io_tensors(graph, stream)
    flow = trace(ops, stream.inputs, stream.outputs)
    if flow.forgotten_writes:
        problems.append(
            f"NPU dataflow is incomplete: more than {MAX_LIVE_WRITES} feature-map writes were live "
            f"at once, so the oldest {flow.forgotten_writes} were forgotten and some operations "
            "show no producer"
        )
    for op in (op for op in ops if op.is_compute or op.index in flow.reads):
        out = _output_tensor(op)
        graph.tensors[out.id] = out
        graph.nodes.append(
            OpNode(
                id=f"npu_op_{op.index}",
                kind=op.name,
                label=op.label,
                inputs=_inputs(graph, op, flow.reads.get(op.index, {})),
                outputs=[out.id],
                attrs=op.attrs(),
                constant_bytes=op.weight_bytes + op.scale_bytes,
            )
        )
    by_id = {n.outputs[0]: n for n in graph.nodes}
    for index, producers in flow.outputs.items():
        for p in producers:
            node = by_id.get(_tensor_of(p))
            if node is not None:
                node.outputs.append(f"output{index}")
    return graph
