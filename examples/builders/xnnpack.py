"""XNNPACK examples: MobileNetV2 fp32 and INT8, external weights (.ptd), a graph split by
LocalResponseNorm, a toy GPT with many partitions, an LLM export's constant methods, a program
whose runs are long enough to record drift with, and a before/after pair the pip runtime runs (a
CPU island and its fix, measured in `diff`)."""

from __future__ import annotations

import hashlib

import torch

from examples.common import example, reset_outputs, write_pte
from examples.lowering import xnnpack_lower
from examples.models import SEED, seeded
from examples.models.mobilenet import mobilenet_v2
from examples.models.pairs import LrnAsConv, LrnAsRsqrt, lrn, pair_net
from examples.models.small import SmallLrnNet, SmallNet, WideNet
from examples.models.transformers import TinyGPT, TinyLlama


@example(
    "mv2_xnnpack_fp32",
    "xnnpack",
    "MobileNetV2 0.35/224 fp32 on XNNPACK; delegate payload stored in a SEGMENT "
    "(extract_delegate_segments=True), weights in named data.",
)
def build_mv2_xnnpack_fp32():
    name = "mv2_xnnpack_fp32"
    reset_outputs(f"{name}.pte")
    prog = xnnpack_lower(
        mobilenet_v2(0.35),
        (torch.randn(1, 3, 224, 224),),
        quantize=False,
        extract_delegate_segments=True,
    )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.35,
            "input": [1, 3, 224, 224],
            "dtype": "fp32",
            "extract_delegate_segments": True,
        },
    }


@example(
    "mv2_xnnpack_int8",
    "xnnpack",
    "MobileNetV2 0.5/224 INT8 (XNNPACKQuantizer, per-channel symmetric) on XNNPACK; "
    "delegate payload stored INLINE (extract_delegate_segments=False).",
)
def build_mv2_xnnpack_int8():
    name = "mv2_xnnpack_int8"
    reset_outputs(f"{name}.pte")
    prog = xnnpack_lower(
        mobilenet_v2(0.5),
        (torch.randn(1, 3, 224, 224),),
        quantize=True,
        extract_delegate_segments=False,
    )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.5,
            "input": [1, 3, 224, 224],
            "dtype": "int8",
            "extract_delegate_segments": False,
        },
    }


@example(
    "xnnpack_ptd",
    "xnnpack",
    "Small nested CNN fp32 on XNNPACK with constants tagged 'xnnpack_weights' -> "
    "xnnpack_weights.ptd. Real-world mix: the linear weights (tagged parameters) go to the "
    ".ptd under sha256 keys, the BatchNorm-folded conv weights (new tensors made by "
    "XNNPACK's fusion, untagged) stay in the .pte's named data, and the unused "
    "num_batches_tracked buffers become EXTERNAL plan tensors keyed by their FQN in the .ptd.",
)
def build_xnnpack_ptd():
    name, tag = "xnnpack_ptd", "xnnpack_weights"
    reset_outputs(f"{name}.pte", f"{tag}.ptd")
    prog = xnnpack_lower(
        seeded(SmallNet),
        (torch.randn(1, 3, 32, 32),),
        quantize=False,
        extract_delegate_segments=True,
        external_tag=tag,
    )
    files = [write_pte(prog, name)]
    prog.write_tensor_data_to_file(".")
    files.append(f"{tag}.ptd")
    return {
        "files": files,
        "sidecars": [],
        "settings": {
            "model": "SmallNet",
            "input": [1, 3, 32, 32],
            "dtype": "fp32",
            "external_tag": tag,
        },
    }


@example(
    "xnnpack_lrn",
    "xnnpack",
    "Small nested CNN fp32 on XNNPACK with a LocalResponseNorm (features.2): the LRN's "
    "decomposition splits the XNNPACK graph; ETRecord in xnnpack_lrn.etrecord and the "
    "XNNPACK partitioner's own reasons (WhyNoPartition) in xnnpack_lrn.rejections.json.",
)
def build_xnnpack_lrn():
    name = "xnnpack_lrn"
    reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    prog = xnnpack_lower(
        seeded(SmallLrnNet),
        (torch.randn(1, 3, 32, 32),),
        quantize=False,
        extract_delegate_segments=True,
        etrecord=name,
    )
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"],
        "sidecars": [],
        "settings": {"model": "SmallLrnNet", "input": [1, 3, 32, 32], "dtype": "fp32"},
    }


@example(
    "tiny_gpt_xnnpack",
    "xnnpack",
    "The large benchmark's GPT-like decoder at toy size (4 layers, hidden 32, vocab 256, 16 "
    "tokens), fp32 on XNNPACK: the attention mask and layer norms stay on the CPU, so one method "
    "has dozens of partitions and CPU islands (the case the first screen folds into blocks); "
    "ETRecord in tiny_gpt_xnnpack.etrecord.",
)
def build_tiny_gpt_xnnpack():
    name = "tiny_gpt_xnnpack"
    reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    torch.manual_seed(SEED)
    m = TinyGPT(vocab=256, d=32, layers=4, heads=2, ctx=16).eval()
    x = (torch.randint(0, 256, (1, 16)),)
    with torch.no_grad():
        prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True, etrecord=name)
    return {
        "files": [write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"],
        "sidecars": [],
        "settings": {"layers": 4, "hidden": 32, "heads": 2, "vocab": 256, "seq": 16},
    }


def _llama_metadata(vocab: int, layers: int, max_seq: int) -> dict:
    """What ExecuTorch's llama export stores as constant methods (export_llama_lib's
    _load_llama_model_metadata, with bos/eos from --metadata), plus per-output quantization
    attributes as QNN's llama exports add them, a string, and small tensors."""
    stop = torch.zeros(vocab, dtype=torch.bool)
    stop[[2, 3]] = True
    return {
        "get_bos_id": 1,
        "get_eos_ids": [2, 3],
        "get_max_context_len": max_seq,
        "get_n_layers": layers,
        "get_vocab_size": vocab,
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": False,
        "enable_dynamic_shape": False,
        "get_logits_scale": 0.00068,
        "get_logits_zero_point": -3,
        "get_model_name": "tiny_llama",
        "get_kv_cache_scales": torch.tensor([[0.02, 0.015], [0.031, 0.027]]),
        "get_stop_token_mask": stop,
    }


@example(
    "tiny_llama_xnnpack",
    "xnnpack",
    "Llama-shaped decoder at toy size (2 layers, hidden 32, vocab 128, KV cache of 32) exported "
    "by ExecuTorch's LLM export (LLMEdgeManager, XNNPACK): 'forward' plus 14 constant methods "
    "without instructions (get_max_seq_len, get_eos_ids, use_kv_cache, get_logits_scale, ...: "
    "int, list, bool, float, string and small-tensor values), as LLM runners read them.",
)
def build_tiny_llama_xnnpack():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.extension.llm.export.builder import LLMEdgeManager

    name = "tiny_llama_xnnpack"
    reset_outputs(f"{name}.pte")
    vocab, layers, max_seq = 128, 2, 32
    torch.manual_seed(SEED)
    model = TinyLlama(vocab=vocab, layers=layers, max_seq=max_seq).eval()
    builder = LLMEdgeManager(
        model=model,
        modelname=name,
        max_seq_len=max_seq,  # LLMEdgeManager adds get_max_seq_len itself
        use_kv_cache=True,
        example_inputs=(torch.tensor([[1]]), torch.tensor([0])),
        metadata=_llama_metadata(vocab, layers, max_seq),
    )
    builder.export().to_edge_transform_and_lower([XnnpackPartitioner()]).to_executorch()
    return {
        "files": [write_pte(builder.export_program, name)],
        "sidecars": [],
        "settings": {
            "layers": layers,
            "hidden": 32,
            "heads": 2,
            "vocab": vocab,
            "kv_cache": max_seq,
            "exporter": "executorch.extension.llm.export.builder.LLMEdgeManager",
        },
    }


@example(
    "wide_xnnpack",
    "xnnpack",
    "WideNet (two 3x3 convolutions of 16 channels on a 384x384 image, then a pooling) fp32 on "
    "XNNPACK: few weights, but each run takes about 8 ms on one core (a 4 ms scheduler slice is "
    "small beside it), so a process sharing that core takes a steady share of every run (the "
    "ETDumps of examples/drift/, recorded by examples/profile_drift.py).",
)
def build_wide_xnnpack():
    name = "wide_xnnpack"
    reset_outputs(f"{name}.pte")
    shape = (1, 3, 384, 384)
    torch.manual_seed(SEED)
    prog = xnnpack_lower(
        seeded(WideNet), (torch.randn(*shape),), quantize=False, extract_delegate_segments=True
    )
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"model": "WideNet", "input": list(shape), "dtype": "fp32"},
    }


# The measured pair: one network exported with a CPU island and with the fix, both run by the
# pip runtime (examples/profile_examples.py records their ETDumps), so that `diff` shows what the
# fix saved, measured, next to what the what-if predicted from the first program alone.
PAIR_INPUT = (1, 3, 224, 224)


def _network_sha(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def _pair_side(name: str, middle: type[LrnAsConv], etrecord: bool) -> dict:
    files = [f"{name}.pte"] + ([f"{name}.etrecord", f"{name}.rejections.json"] if etrecord else [])
    reset_outputs(*files)
    model = pair_net(lambda: middle(16, lrn())).eval()
    torch.manual_seed(SEED)
    x = (torch.randn(*PAIR_INPUT),)
    with torch.no_grad():
        prog = xnnpack_lower(
            model,
            x,
            quantize=False,
            extract_delegate_segments=True,
            etrecord=name if etrecord else None,
        )
    write_pte(prog, name)
    return {
        "files": files,
        "sidecars": [],
        "settings": {
            "model": f"PairNet(features.2={middle.__name__})",
            "input": list(PAIR_INPUT),
            "dtype": "fp32",
            "network_sha256": _network_sha(model),
        },
    }


@example(
    "lrn_pow_xnnpack",
    "xnnpack",
    "The what-if pairs' network (PairNet) with a LocalResponseNorm written as "
    "x * (k + conv1x1(x * x))^-0.75, fp32 on XNNPACK: the partitioner refuses pow with an exponent "
    "other than 2, so the pow runs on the CPU between two XNNPACK partitions (the 'before' of a "
    "measured pair; ETRecord and the partitioner's reasons beside it).",
)
def build_lrn_pow_xnnpack():
    return _pair_side("lrn_pow_xnnpack", LrnAsConv, etrecord=True)


@example(
    "lrn_rsqrt_xnnpack",
    "xnnpack",
    "lrn_pow_xnnpack with the fix: the same weights, y^-0.75 written as rsqrt(y) * "
    "rsqrt(sqrt(y)), which XNNPACK takes: one partition (the 'after' of the measured pair).",
)
def build_lrn_rsqrt_xnnpack():
    return _pair_side("lrn_rsqrt_xnnpack", LrnAsRsqrt, etrecord=False)
