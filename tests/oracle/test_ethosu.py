"""Ethos-U decoder against Vela's own account of the same compilation.

The oracle: every example keeps the TOSA Vela compiled (`<name>_artifacts/*.tosa`). The test runs
the `vela` CLI on each with the delegate's own `compile_flags` plus `--verbose-register-command-stream`,
picks the compile whose command stream is byte-identical to a payload's `cmd_data` (so the printout
describes exactly these bytes), and compares every command, every NPU operation, the register
values behind each operation and the I/O records with what the decoder found. Payloads come from
ExecuTorch's own deserializer, not from this project's reader.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from pte_adapter.delegates.ethosu.binstream import parse_bin_stream
from pte_adapter.delegates.ethosu.decode import decode, decode_stream
from pte_adapter.delegates.hooks import DecodeContext
from tests.support.vela import Partition, VelaRun, all_ethosu_partitions, run_vela


@pytest.fixture(scope="module")
def partitions() -> list[Partition]:
    return all_ethosu_partitions()


# --- Vela's printout ------------------------------------------------------------------------

_LINE = re.compile(
    r"^0x([0-9a-f]{6}):\s+(?:([0-9a-f]{8})\s+)?([0-9a-f]{4}) ([0-9a-f]{4}) - (\w+)\s+(\d+)(?:, (.*))?$"
)


@dataclass
class VelaCommand:
    offset: int
    name: str
    param: int
    payload: int | None
    fields: dict[str, str]


@dataclass
class VelaCompile:
    tosa: Path
    cmd_data: bytes
    npz: dict[str, np.ndarray]
    commands: list[VelaCommand] = field(default_factory=list)


def _parse_printout(text: str) -> list[VelaCommand]:
    out: list[VelaCommand] = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        fields: dict[str, str] = {}
        for item in (m.group(7) or "").split(", "):
            k, sep, v = item.partition(" = ")
            if sep:
                fields[k.strip()] = v.strip()
        payload = int(m.group(2), 16) if m.group(2) else None
        out.append(
            VelaCommand(int(m.group(1), 16), m.group(5), int(m.group(3), 16), payload, fields)
        )
    return out


def _compiled(run: VelaRun) -> VelaCompile:
    return VelaCompile(run.tosa, run.cmd_data, run.npz, _parse_printout(run.stdout))


@pytest.fixture(scope="module")
def vela_matches(vela_runs: dict[str, VelaRun]) -> dict[str, VelaCompile]:
    """partition name -> the Vela compile that produced byte-identical command data."""
    return {name: _compiled(run) for name, run in vela_runs.items()}


def test_every_partition_with_artifacts_is_reproduced_by_vela(
    partitions: list[Partition], vela_matches: dict[str, VelaCompile]
) -> None:
    for part in partitions:
        if part.pte.with_name(f"{part.pte.stem}_artifacts").is_dir():
            assert part.name in vela_matches, (
                f"{part.name}: no TOSA artifact recompiles to the same command stream"
            )


def test_commands_match_vela_printout(
    partitions: list[Partition], vela_matches: dict[str, VelaCompile]
) -> None:
    for part in partitions:
        vc = vela_matches.get(part.name)
        if vc is None:
            continue
        _stream, config, cmds, problems = decode_stream(
            memoryview(part.payload), part.ctx(), keep_commands=True
        )
        assert config is not None and cmds is not None
        assert problems == []
        ours = [(c.offset, c.name, c.param, c.payload) for c in cmds.commands]
        theirs = [(c.offset, c.name, c.param, c.payload) for c in vc.commands]
        assert ours == theirs, part.name
        assert config.stream_words * 4 == (vc.commands[-1].offset + 4)


def _mode(cmd: VelaCommand) -> str:
    for key, prefix in (
        ("pooling_mode", "POOLING_MODE_"),
        ("elementwise_mode", "ELEMENTWISE_MODE_"),
        ("resize_mode", "RESIZE_MODE_"),
        ("mode", ""),
    ):
        if key in cmd.fields:
            return cmd.fields[key].removeprefix(prefix)
    return ""


def _num(v: str) -> int:
    return int(v, 0)


def test_operations_match_vela(
    partitions: list[Partition], vela_matches: dict[str, VelaCompile]
) -> None:
    """NPU operations, their kinds and the register values behind them, per partition."""
    report = []
    for part in partitions:
        vc = vela_matches.get(part.name)
        if vc is None:
            continue
        _stream, config, cmds, _ = decode_stream(memoryview(part.payload), part.ctx())
        assert cmds is not None and config is not None
        # Replay Vela's printout: its own field decode of every register write.
        shadow: dict[str, dict[str, str]] = {}
        expected = []
        for c in vc.commands:
            if c.name.startswith("NPU_SET_"):
                shadow[c.name] = c.fields
                continue
            entry: dict[str, object] = {"offset": c.offset, "name": c.name}
            if c.name in ("NPU_OP_POOL", "NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"):
                entry["mode"] = _mode(c)
            if c.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE"):
                entry["ofm"] = [
                    _num(shadow["NPU_SET_OFM_HEIGHT_M1"]["height_m1"]) + 1,
                    _num(shadow["NPU_SET_OFM_WIDTH_M1"]["width_m1"]) + 1,
                    _num(shadow["NPU_SET_OFM_DEPTH_M1"]["depth_m1"]) + 1,
                ]
                entry["ofm_region"] = _num(shadow["NPU_SET_OFM_REGION"]["region"])
                entry["ifm_base"] = _num(shadow["NPU_SET_IFM_BASE0"]["addr"])
            # The Ethos-U85 programs a RESIZE's kernel and stride too (its ratio's block).
            if c.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_RESIZE"):
                ks = shadow["NPU_SET_KERNEL_STRIDE"]
                entry["stride"] = (
                    (_num(ks["stride_x_msb"]) << 1 | _num(ks["stride_x_lsb"])) + 1,
                    (_num(ks["stride_y_msb"]) << 1 | _num(ks["stride_y_lsb"])) + 1,
                )
                entry["kernel_m1"] = (
                    _num(shadow["NPU_SET_KERNEL_WIDTH_M1"]["width_m1"]),
                    _num(shadow["NPU_SET_KERNEL_HEIGHT_M1"]["height_m1"]),
                )
            if c.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
                entry["weight_length"] = _num(shadow["NPU_SET_WEIGHT_LENGTH"]["length"])
            if c.name == "NPU_OP_DMA_START":
                entry["dma_length"] = _num(shadow["NPU_SET_DMA0_LEN"]["addr"])
            expected.append(entry)
        got = []
        for op in cmds.operations:
            entry = {"offset": op.offset, "name": op.name}
            if op.name in ("NPU_OP_POOL", "NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"):
                entry["mode"] = op.mode
            if op.ofm is not None and op.name != "NPU_OP_RESIZE":
                entry["ofm"] = op.ofm.shape
                entry["ofm_region"] = op.ofm.region
                assert op.ifm is not None
                entry["ifm_base"] = op.ifm.base
            if op.kernel is not None and op.stride is not None and op.dilation is not None:
                entry["stride"] = op.stride
                entry["kernel_m1"] = (
                    (op.kernel[0] - 1) * op.dilation[0],
                    (op.kernel[1] - 1) * op.dilation[1],
                )
            if op.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
                entry["weight_length"] = op.weights[0].length if op.weights else 0
            if op.dma is not None:
                entry["dma_length"] = op.dma.length
            got.append(entry)
        assert got == expected, part.name
        kinds = Counter(f"{e['name']} {e.get('mode', '')}".strip() for e in expected)
        result = decode(memoryview(part.payload), part.ctx())
        compute = sum(
            n
            for k, n in kinds.items()
            if k.split()[0]
            in (
                "NPU_OP_CONV",
                "NPU_OP_DEPTHWISE",
                "NPU_OP_POOL",
                "NPU_OP_ELEMENTWISE",
                "NPU_OP_RESIZE",
            )
        )
        assert result.inner_op_count == compute
        assert result.stats["npu_ops"] == compute
        report.append(f"{part.name}: {compute} NPU compute ops {dict(kinds)}")
    print("\n".join(report))


def test_io_matches_vela_npz(
    partitions: list[Partition], vela_matches: dict[str, VelaCompile]
) -> None:
    for part in partitions:
        vc = vela_matches.get(part.name)
        if vc is None:
            continue
        result = decode(memoryview(part.payload), part.ctx())
        stream = parse_bin_stream(memoryview(part.payload))
        for role, ios in (("input", stream.inputs), ("output", stream.outputs)):
            shapes = vc.npz[f"{role}_shape"]
            assert len(ios) == len(shapes)
            for io, shape, elem, off, reg in zip(
                ios,
                shapes,
                vc.npz[f"{role}_elem_size"],
                vc.npz[f"{role}_offset"],
                vc.npz[f"{role}_region"],
                strict=True,
            ):
                assert list(io.raw_shape)[-len(shape) :] == [int(d) for d in shape]
                assert (io.elem_size, io.offset, io.region) == (int(elem), int(off), int(reg))
        assert result.num_inputs == len(vc.npz["input_shape"])
        assert result.num_outputs == len(vc.npz["output_shape"])
        assert stream.scratch_size == int(vc.npz["scratch_shape"][0])


def test_summary_graph_and_cross_check(partitions: list[Partition]) -> None:
    for part in partitions:
        result = decode(memoryview(part.payload), part.ctx())
        external = parse_bin_stream(memoryview(part.payload)).block("weight_data")
        if external is None or not external.external:
            assert result.problems == [], part.name
        graph = result.graphs[0]
        assert graph.name == "NPU operations"
        assert len(graph.inputs) == result.num_inputs
        assert len(graph.outputs) == result.num_outputs
        for tid in graph.inputs + graph.outputs:
            t = graph.tensors[tid]
            assert t.shape and t.dtype in ("int8", "int16", "int32")
            assert "offset" in t.attrs and "region" in t.attrs
        # Every graph output is produced by some node, every node input exists.
        produced = {o for n in graph.nodes for o in n.outputs}
        assert set(graph.outputs) <= produced, part.name
        for n in graph.nodes:
            assert all(i in graph.tensors for i in n.inputs)
        target = part.specs["target"].decode()
        assert result.summary["npu_accelerator_config"] == target
        assert result.summary["compile_spec_target"] == target
        for key in ("npu", "npu_operations", "command_stream", "scratch"):
            assert key in result.summary
        for key in ("npu_ops", "cmd_bytes", "scratch_bytes", "macs_per_cycle"):
            assert isinstance(result.stats[key], int)


def test_compile_spec_disagreement_is_flagged(partitions: list[Partition]) -> None:
    part = partitions[0]
    specs = dict(part.specs)
    wrong = "ethos-u55-64" if "u85" in specs["target"].decode() else "ethos-u85-2048"
    specs["target"] = wrong.encode()
    result = decode(memoryview(part.payload), DecodeContext("EthosUBackend", specs))
    assert "compile_spec_mismatch" in result.summary
    assert any(wrong in p for p in result.problems)


def test_u55_and_u85_examples_present(partitions: list[Partition]) -> None:
    products = set()
    for part in partitions:
        _s, config, _c, _p = decode_stream(memoryview(part.payload))
        assert config is not None
        products.add(config.product)
    assert "Ethos-U85" in products
    assert "Ethos-U55" in products, "add a U55 example (examples/mv2_ethosu55.pte)"


def test_cop2_header_gives_the_same_stream(
    partitions: list[Partition],
    vela_matches: dict[str, VelaCompile],
    tmp_path: Path,
) -> None:
    """Vela's COP2 output of the same TOSA decodes to the same config and commands as COP1."""
    part = min((p for p in partitions if p.name in vela_matches), key=lambda p: len(p.payload))
    vc = vela_matches[part.name]
    flags = [*shlex.split(part.specs["compile_flags"].decode()), "--cop-format=COP2"]
    cop2 = _compiled(run_vela(vc.tosa, [*flags, "--verbose-register-command-stream"], tmp_path))
    from pte_adapter.delegates.ethosu.commands import decode_commands
    from pte_adapter.delegates.ethosu.cop import parse_cop

    cfg1, words1 = parse_cop(memoryview(vc.cmd_data))
    cfg2, words2 = parse_cop(memoryview(cop2.cmd_data))
    assert cfg2.cop_format == "COP2" and cfg1.cop_format == "COP1"
    assert (cfg2.config_word, cfg2.id_word) == (cfg1.config_word, cfg1.id_word)
    assert bytes(words2) == bytes(words1)
    ops = decode_commands(words2, cfg2.product_code).operations
    assert [o.name for o in ops] == [c.name for c in cop2.commands if c.name.startswith("NPU_OP")]
