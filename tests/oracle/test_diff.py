"""`pte-adapter diff` on the example pair, against ExecuTorch's deserializer's view of both files.

The pair: `mv2_lrn_ethosu85.pte` (MobileNetV2 1.0/224 with one LocalResponseNorm, the fragmented
export) and `mv2_ethosu85_full.pte` (the same model without it: same seed, same weights elsewhere;
see examples/README.md). Expected numbers are recounted here from the deserialized instruction
streams (partitions, islands, CPU kernels, crossings and their bytes), from each Ethos-U payload's
own `inputs` block (the delegate's input count) and from its command stream walked with Vela's
opcode table (`ethosu.vela.ethos_u55_regs`), never from pte_adapter's analysis.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.analysis.diff import diff_programs
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.analysis.roles import instruction_role_ids
from pte_adapter.cli import EXIT_CHECK_FAILED, EXIT_OK, main
from pte_adapter.render.diff_report import diff_json
from tests.support.examples import example, oracle
from tests.support.oracles import instruction_runs, value_nbytes

FRAGMENTED = "mv2_lrn_ethosu85"
FIXED = "mv2_ethosu85_full"


def _blocks(payload: bytes) -> dict[str, bytes]:
    """The vela_bin_stream blocks: 32-byte header (16-byte name, u32 size, ...), data padded to 16."""
    out, pos = {}, 0
    while pos + 32 <= len(payload):
        name, size = struct.unpack_from("<16sI", payload, pos)
        out[name.rstrip(b"\0").decode()] = payload[pos + 32 : pos + 32 + size]
        pos += 32 + (size + 15) // 16 * 16
    return out


def _npu_compute_ops(cmd_data: bytes) -> int:
    """Count NPU_OP_CONV/DEPTHWISE/POOL/ELEMENTWISE commands with Vela's own opcode table, after
    the COP1 driver header Vela writes (fourcc, 3 config words, NOPs, the CmdStream tag)."""
    from ethosu.vela.ethos_u55_regs.ethos_u55_regs import cmd0
    from ethosu.vela.register_command_stream_generator import CmdMode

    compute = {
        cmd0.NPU_OP_CONV.value,
        cmd0.NPU_OP_DEPTHWISE.value,
        cmd0.NPU_OP_POOL.value,
        cmd0.NPU_OP_ELEMENTWISE.value,
    }
    words = struct.unpack(f"<{len(cmd_data) // 4}I", cmd_data[: len(cmd_data) // 4 * 4])
    assert cmd_data[:4] == b"COP1"
    i = 4
    while words[i] & 0xFF == 0x05:  # NOP
        i += 1
    assert words[i] & 0xFF == 0x02  # CmdStream tag
    length = (words[i] >> 16) | ((words[i] >> 8) & 0xFF) << 16
    i += 1
    end = i + length
    count = 0
    while i < end:
        w = words[i]
        long = w & CmdMode.Payload32
        if not long and (w & 0x3FF) in compute:
            count += 1
        i += 2 if long else 1
    return count


def _oracle_view(path: Path) -> dict[str, Any]:
    """Partitioning numbers of the `forward` method recounted from ExecuTorch's deserializer."""
    program: Any = oracle(path).program  # type: ignore[attr-defined]
    plan = program.execution_plan[0]
    calls = [x.instr_args for c in plan.chains for x in c.instructions]
    runs = instruction_runs(plan)

    def op_name(c: Any) -> str:
        o = plan.operators[c.op_index]
        return f"{o.name}.{o.overload}" if o.overload else o.name

    kernels = Counter(op_name(c) for c in calls if type(c).__name__ == "KernelCall")
    crossings: Counter[str] = Counter()
    crossing_bytes: Counter[str] = Counter()
    npu_ops = 0
    producer: dict[int, str] = {v: "CPU" for v in plan.inputs}
    pending: dict[int, str] = {}
    for call in calls:
        if type(call).__name__ == "DelegateCall":
            d = plan.delegates[call.delegate_index]
            blocks = _blocks(bytes(program.backend_delegate_data[d.processed.index].data))
            npu_ops += _npu_compute_ops(blocks["cmd_data"])
            n_in = struct.unpack_from("<i", blocks["inputs"])[0]
            for v in dict.fromkeys(call.args[:n_in]):
                if producer.get(v, "CPU") == "CPU" and (
                    plan.values[v].val.allocation_info is not None or v in plan.inputs
                ):
                    crossings[f"CPU→{d.id}"] += 1
                    crossing_bytes[f"CPU→{d.id}"] += value_nbytes(plan, v)
            for v in call.args[n_in:]:
                producer[v] = d.id
                pending[v] = d.id
        else:
            for v in dict.fromkeys(call.args[:-1]):
                if v in pending:
                    crossings[f"{pending[v]}→CPU"] += 1
                    crossing_bytes[f"{pending[v]}→CPU"] += value_nbytes(plan, v)
                    del pending[v]
            producer[call.args[-1]] = "CPU"
    for v in plan.outputs:
        if v in pending:
            crossings[f"{pending[v]}→CPU"] += 1
            crossing_bytes[f"{pending[v]}→CPU"] += value_nbytes(plan, v)
    return {
        "runs": runs,
        "partitions": sum(b != "CPU" for b, _ in runs),
        "islands": sum(b == "CPU" for b, _ in runs),
        "kernels": kernels,
        "island_kernels": [Counter(op_name(c) for c in calls) for b, calls in runs if b == "CPU"],
        "crossings": dict(crossings),
        "crossing_bytes": dict(crossing_bytes),
        "npu_ops": npu_ops,
        "file_size": path.stat().st_size,
    }


@pytest.fixture(scope="module")
def pair() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    before, after = example(FRAGMENTED), example(FIXED)
    diff = diff_json(
        diff_programs(
            pte_adapter.analyse(pte_adapter.load(before)),
            pte_adapter.analyse(pte_adapter.load(after)),
        )
    )
    return diff, _oracle_view(before), _oracle_view(after)


def test_diff_numbers_match_the_deserialized_streams(
    pair: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
) -> None:
    diff, ob, oa = pair
    (m,) = diff["methods"]
    n = m["numbers"]
    assert (n["delegate_partitions"]["before"], n["delegate_partitions"]["after"]) == (
        ob["partitions"],
        oa["partitions"],
    )
    assert (n["cpu_islands"]["before"], n["cpu_islands"]["after"]) == (ob["islands"], oa["islands"])
    assert (n["cpu_kernel_calls"]["before"], n["cpu_kernel_calls"]["after"]) == (
        sum(ob["kernels"].values()),
        sum(oa["kernels"].values()),
    )
    # Kernels added/removed (compute and glue together) are the oracle's kernel multiset difference.
    removed = Counter(m["cpu_compute_ops_removed"]) + Counter(m["cpu_glue_ops_removed"])
    added = Counter(m["cpu_compute_ops_added"]) + Counter(m["cpu_glue_ops_added"])
    assert removed == ob["kernels"] - oa["kernels"]
    assert added == oa["kernels"] - ob["kernels"]
    assert "aten::avg_pool3d.out" in m["cpu_compute_ops_removed"]
    # Crossings that went away, tensors and bytes per direction.
    for direction, c in m["crossings"].items():
        assert c["before"] == [
            ob["crossings"].get(direction, 0),
            ob["crossing_bytes"].get(direction, 0),
        ]
        assert c["after"] == [
            oa["crossings"].get(direction, 0),
            oa["crossing_bytes"].get(direction, 0),
        ]
    assert set(m["crossings"]) == set(ob["crossings"]) | set(oa["crossings"])
    assert (
        n["crossing_bytes"]["delta"]
        == (sum(oa["crossing_bytes"].values()) - sum(ob["crossing_bytes"].values()))
        < 0
    )
    # NPU operations, counted from the command streams with Vela's opcode table.
    assert (n["npu_ops"]["before"], n["npu_ops"]["after"]) == (ob["npu_ops"], oa["npu_ops"])
    assert diff["size"]["file_size"]["before"] == ob["file_size"]
    assert diff["size"]["file_size"]["after"] == oa["file_size"]
    assert diff["regressions"] == []


def test_the_removed_island_and_partition(
    pair: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
) -> None:
    """The fix removes exactly one CPU island (the LRN's, between the NPU partitions) and one NPU
    partition; the islands around the model are paired with their counterparts."""
    diff, ob, oa = pair
    parts = diff["methods"][0]["partitions"]
    removed = [p for p in parts if p["status"] == "removed"]
    assert [p["before"]["backend"] for p in removed] == ["CPU", "EthosUBackend"]
    assert not [p for p in parts if p["status"] == "added"]
    # The removed island holds the oracle's middle run of CPU kernels.
    island = removed[0]["before"]
    assert Counter({**island["compute_ops"], **island["glue_ops"]}) == ob["island_kernels"][1]
    kept = [p for p in parts if p["status"] == "same role"]
    assert len(kept) == oa["partitions"] + oa["islands"]
    assert [p["role"] for p in kept] == ["cpu_in", "EthosUBackend_1", "cpu_out"]
    first, last = kept[0], kept[-1]
    assert (
        Counter(first["before"]["glue_ops"]) == ob["island_kernels"][0] == oa["island_kernels"][0]
    )
    assert (
        Counter(last["before"]["glue_ops"]) == ob["island_kernels"][-1] == oa["island_kernels"][-1]
    )


def test_fail_on_regression_names_each_growth(capsys: pytest.CaptureFixture[str]) -> None:
    before, after = str(example(FIXED)), str(example(FRAGMENTED))
    assert main(["diff", before, after, "--fail-on-regression"]) == EXIT_CHECK_FAILED
    err = capsys.readouterr().err
    for what in (
        "delegate partitions grew 1 -> 2",
        "CPU islands grew 2 -> 3",
        "CPU compute calls grew 0 -> 1",
        "boundary crossing bytes grew",
    ):
        assert f"REGRESSION forward: {what}" in err
    assert main(["diff", after, before, "--fail-on-regression"]) == EXIT_OK
    assert main(["diff", after, before]) == EXIT_OK
    capsys.readouterr()
    assert main(["diff", after, before, "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["methods"][0]["numbers"]["cpu_islands"] == {"before": 3, "after": 2, "delta": -1}


def test_a_file_against_itself_changes_nothing(example_pte: Path) -> None:
    program = pte_adapter.load(example_pte)
    diff = diff_json(
        diff_programs(
            pte_adapter.analyse(program), pte_adapter.analyse(pte_adapter.load(example_pte))
        )
    )
    assert diff["regressions"] == []
    for m in diff["methods"]:
        assert m["status"] == "both"
        assert all(c["delta"] in (0, None) for c in m["numbers"].values())
        assert all(p["status"] == "same role" for p in m["partitions"])
        assert not (m["cpu_compute_ops_added"] or m["cpu_compute_ops_removed"])
    assert all(c["delta"] == 0 for c in diff["size"]["by_kind"].values())


def test_role_ids_are_unique_and_name_the_same_operator(example_pte: Path) -> None:
    """Ids are unique per method; the operator an id names is the oracle's operator there."""
    program = pte_adapter.load(example_pte)
    theirs: Any = oracle(example_pte).program  # type: ignore[attr-defined]
    for method, plan in zip(program.methods, theirs.execution_plan, strict=True):
        ids = instruction_role_ids(method, partition_method(method))
        assert len(ids) == len(set(ids)) == len(method.instructions)
        calls = [x.instr_args for c in plan.chains for x in c.instructions]
        for rid, call in zip(ids, calls, strict=True):
            if type(call).__name__ == "KernelCall":
                o = plan.operators[call.op_index]
                assert rid.endswith("." + (f"{o.name}.{o.overload}" if o.overload else o.name))
            elif type(call).__name__ == "DelegateCall":
                assert rid.startswith(plan.delegates[call.delegate_index].id + "_")


def test_pair_ids_line_up() -> None:
    """Corresponding instructions of the pair share ids; the LRN's island has ids of its own."""
    ids = []
    for name in (FRAGMENTED, FIXED):
        p = pte_adapter.load(example(name))
        m = p.methods[0]
        ids.append(instruction_role_ids(m, partition_method(m)))
    frag, fixed = ids
    assert set(fixed) <= set(frag)
    only_frag = set(frag) - set(fixed)
    assert {i.split(".")[0] for i in only_frag} == {"cpu_after_EthosUBackend_1", "EthosUBackend_2"}


def _int8_weights(folder: Path) -> set[bytes]:
    """The INT8 4-D constant tensors (convolution weights) of every TOSA graph Vela compiled for
    the example, read with tosa-tools' generated readers."""
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph

    found: set[bytes] = set()
    for path in sorted(folder.glob("*.tosa")):
        g = TosaGraph.GetRootAs(path.read_bytes(), 0)
        for r in range(g.RegionsLength()):
            region = g.Regions(r)
            for b in range(region.BlocksLength()):
                blk = region.Blocks(b)
                for i in range(blk.TensorsLength()):
                    t = blk.Tensors(i)
                    if t.DataLength() and t.Type() == DType.INT8 and t.ShapeLength() == 4:
                        found.add(t.DataAsNumpy().tobytes())
    return found


def test_the_pair_has_the_same_weights() -> None:
    """The fixed model is the fragmented one minus the LRN: every quantized convolution weight of
    the fixed export is in the fragmented export, byte for byte (same seed; LocalResponseNorm has
    no parameters and draws no random numbers)."""
    fixed = _int8_weights(example(FIXED).parent / f"{FIXED}_artifacts")
    frag = _int8_weights(example(FRAGMENTED).parent / f"{FRAGMENTED}_artifacts")
    assert len(fixed) > 50
    assert fixed <= frag


def test_model_explorer_graphs_of_the_pair_line_up() -> None:
    """Split view with 'match node id': each instruction node of the fixed export has a node with
    the same id and operator in the fragmented export (the deserializer's operator names, checked
    in test_graph.py), and the nodes only the fragmented export has belong to the LRN's
    island and the second NPU partition (or the boundaries around them)."""
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    def method_nodes(name: str) -> dict[str, str]:
        data = json.loads(json.dumps(graphs_to_json(convert_path(example(name)))))
        (g,) = [g for g in data["graphs"] if g["id"] == "forward"]
        # A kernel call's full operator name (its label says it short), else the label.
        return {
            n["id"]: next((a["value"] for a in n["attrs"] if a["key"] == "operator"), n["label"])
            for n in g["nodes"]
        }

    frag, fixed = method_nodes(FRAGMENTED), method_nodes(FIXED)
    program: Any = oracle(example(FIXED)).program  # type: ignore[attr-defined]
    plan = program.execution_plan[0]
    calls = [x.instr_args for c in plan.chains for x in c.instructions]
    p = pte_adapter.load(example(FIXED))
    ids = instruction_role_ids(p.methods[0], partition_method(p.methods[0]))
    for rid, call in zip(ids, calls, strict=True):
        if type(call).__name__ == "KernelCall":
            o = plan.operators[call.op_index]
            label = f"{o.name}.{o.overload}" if o.overload else o.name
        else:
            label = plan.delegates[call.delegate_index].id
        assert fixed[rid] == frag[rid] == label
    only_frag = set(frag) - set(fixed)
    lrn_roles = ("cpu_after_EthosUBackend_1", "EthosUBackend_2")
    assert only_frag
    for nid in only_frag:
        assert any(role in nid for role in lrn_roles), nid
