"""The Vulkan decoder on the real examples (examples/builders/vulkan.py, ExecuTorch's own
VulkanPartitioner): facts checked by hand, the hand-kept table against ExecuTorch's mapping, the
generated tables against ExecuTorch's schema classes, and the reasons' wording."""

from __future__ import annotations

import pytest

import pte_adapter
from pte_adapter.api import open_analysis
from pte_adapter.delegates.vulkan._generated import partition_rules, vulkan_schema
from pte_adapter.delegates.vulkan.records import ELEMENT_SIZE
from pte_adapter.program.delegate_graph import DecodedDelegate
from tests.support.examples import example


def _decoded(name: str) -> list[DecodedDelegate]:
    program = pte_adapter.load(example(name))
    return [d.decoded for m in program.methods for d in m.delegates]


def test_element_sizes_are_torchs_for_executorchs_mapping() -> None:
    """ELEMENT_SIZE is kept by hand (the schema does not state sizes): each VkDataType's size is
    the itemsize of the torch dtype ExecuTorch maps to it (`utils._VULKAN_DTYPES`)."""
    from executorch.backends.vulkan import utils

    by_name = {vk.name: torch_dtype.itemsize for torch_dtype, vk in utils._VULKAN_DTYPES.items()}
    assert by_name == ELEMENT_SIZE
    # Every data type but the UNSET marker has a size.
    assert set(ELEMENT_SIZE) == set(vulkan_schema.ENUMS["VkDataType"].values()) - {"UNSET"}


def test_generated_enums_are_executorchs() -> None:
    from executorch.backends.vulkan.serialization import vulkan_graph_schema as schema

    for enum in ("VkDataType", "VkStorageType", "VkMemoryLayout"):
        theirs = {m.value: m.name for m in getattr(schema, enum)}
        assert vulkan_schema.ENUMS[enum] == theirs, enum
    # The dataclasses' Union does not keep the tags' order (the oracle test reads every value by
    # its tag against flatc's reading); the members are the same.
    members = {t.__name__ for t in schema.GraphTypes.__args__}  # type: ignore[attr-defined]
    assert set(vulkan_schema.UNIONS["GraphTypes"].values()) == members


def test_the_cnn_has_three_partitions_between_two_cpu_islands() -> None:
    decoded = _decoded("vulkan_cnn_island")
    assert [d.stats["vk_ops"] for d in decoded] == [3, 3, 1]
    first = decoded[0].graphs[0]
    assert [n.kind for n in first.nodes] == [
        "et_vk.conv_with_clamp.default",
        "et_vk.conv_with_clamp.default",
        "aten.add.Tensor",
    ]
    conv = first.nodes[0]
    # conv1: 3 -> 8 channels, 3x3, padding 1, no clamp (the fused ReLU comes from the pattern).
    assert first.tensors[conv.attrs["weight"]].shape == [8, 3, 3, 3]
    assert conv.attrs["stride"] == "[1, 1]" and conv.attrs["padding"] == "[1, 1]"
    assert conv.params["groups"] == 1
    assert first.nodes[1].params["groups"] == 8  # the depthwise conv2
    # The input is the method's [1, 3, 16, 16] image, on a 3D texture, channels packed.
    (inp,) = first.inputs
    t = first.tensors[inp]
    assert t.shape == [1, 3, 16, 16] and t.dtype == "float32"
    assert t.attrs["storage_type"] == "TEXTURE_3D"
    assert t.attrs["memory_layout"] == "TENSOR_CHANNELS_PACKED"
    assert decoded[0].stats["vk_input_bytes"] == 3 * 16 * 16 * 4
    # Weights are named data in the .pte (ExecuTorch 1.5.1 writes no inline constants).
    w = first.tensors[conv.attrs["weight"]]
    assert w.attrs["constant_bytes"] == str(8 * 3 * 3 * 3 * 4)
    assert w.attrs["data"].startswith("vulkan_cnn_island.pte @ ")
    assert decoded[0].summary["constants_in_payload"] == "0"
    # The upsampling in partition 2 takes its scale factors as a list of doubles.
    (up,) = [n for n in decoded[1].graphs[0].nodes if n.kind == "aten.upsample_nearest2d.vec"]
    assert up.attrs["scale_factors"] == "[2, 2]" and up.attrs["output_size"] == "none"


def test_force_fp16_keeps_float32_staging() -> None:
    (mv2,) = _decoded("vulkan_mv2")
    g = mv2.graphs[0]
    (inp,) = g.inputs
    assert g.tensors[inp].dtype == "float16"
    assert g.tensors[inp].attrs["staging_dtype"] == "float32"
    # What crosses from the CPU is the float32 image, not the GPU's float16 copy.
    assert mv2.stats["vk_input_bytes"] == 3 * 96 * 96 * 4
    assert mv2.stats["vk_output_bytes"] == 10 * 4


def test_the_dynamic_transformer_holds_symbolic_ints_and_value_lists() -> None:
    (block,) = _decoded("vulkan_transformer")
    kinds = block.summary["value_kinds"]
    assert "SymInt x1" in kinds and "ValueList" in kinds and "String x1" in kinds
    g = block.graphs[0]
    (split,) = [n for n in g.nodes if n.kind == "aten.split_with_sizes_copy.default"]
    assert len(split.outputs) == 3  # q, k, v: the output is a list of three tensors
    (gelu,) = [n for n in g.nodes if n.kind == "aten.gelu.default"]
    assert gelu.attrs["approximate"] == "'none'"


def test_why_the_cnns_islands_are_on_the_cpu() -> None:
    analysis = open_analysis(example("vulkan_cnn_island"), profile=False)
    reasons = {r.operator: r for m in analysis.methods for r in m.reasons}
    assert set(reasons) == {"aten::log1p.out", "aten::mean.out"}
    log1p, mean = reasons["aten::log1p.out"], reasons["aten::mean.out"]
    assert log1p.kind == "not_listed" and "not in the Vulkan operator registry" in log1p.text
    assert mean.kind == "check"
    # The registry's own checks of aten.mean.dim, by name, and the rules' version.
    rule = partition_rules.OPERATORS["aten.mean.dim"]
    assert rule.args_check in mean.text and rule.storage_pick in mean.text
    assert "ExecuTorch 1.5.1 rules" in mean.text


@pytest.mark.parametrize("name", ["vulkan_cnn_island", "vulkan_mv2", "vulkan_transformer"])
def test_every_operator_has_its_arguments_named(name: str) -> None:
    for dec in _decoded(name):
        for node in dec.graphs[0].nodes:
            args = [k for k in node.attrs if k != "node_id"]
            assert args[-1] == "out"
            assert not [a for a in args if a.startswith("arg")], (node.kind, args)


def test_int8_weights_feed_the_int8_matmul() -> None:
    _, mlp = _decoded("vulkan_int8_weights")
    g = mlp.graphs[0]
    mms = [n for n in g.nodes if n.kind == "aten._weight_int8pack_mm.default"]
    assert len(mms) == 2
    producers = {t: n for n in g.nodes for t in n.outputs}
    for mm, shape in zip(mms, ([32, 16], [10, 32]), strict=True):
        # The weight is an int8 [out, in] constant, one byte per weight, with per-row scales.
        weight = g.tensors[mm.attrs["mat2"]]
        assert (weight.dtype, weight.shape) == ("int8", shape)
        assert weight.constant_bytes == shape[0] * shape[1]
        assert g.tensors[mm.attrs["scales"]].shape == [shape[0]]
        # The bias is added after it, from a prepacked float constant.
        (add,) = [n for n in g.nodes if n.kind == "aten.add.Tensor" and n.inputs[0] in mm.outputs]
        assert producers[add.attrs["other"]].kind == "et_vk.prepack.default"
