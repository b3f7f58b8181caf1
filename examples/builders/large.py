"""Large benchmark programs (``--large``; never committed): GPT-like decoders, XNNPACK and
portable, at full size and as many-layer hidden-64 programs for per-node speed."""

from __future__ import annotations

import torch

from examples.common import example, reset_outputs, write_pte
from examples.lowering import portable_lower, xnnpack_lower
from examples.models import SEED
from examples.models.transformers import TinyGPT


def _gpt(seq=128):
    torch.manual_seed(SEED)
    m = TinyGPT().eval()
    return m, (torch.randint(0, 50257, (1, seq)),)


@example(
    "gpt_xnnpack_fp32",
    "xnnpack",
    "LARGE benchmark: 12-layer/768/50257 GPT-like decoder, fp32, XNNPACK (~650 MB).",
    large=True,
)
def build_gpt_xnnpack_fp32():
    name = "gpt_xnnpack_fp32"
    reset_outputs(f"{name}.pte")
    m, x = _gpt()
    with torch.no_grad():
        prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True)
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"layers": 12, "hidden": 768, "vocab": 50257, "seq": 128},
    }


@example(
    "gpt_portable_fp32",
    "portable",
    "LARGE benchmark: the same GPT-like model undelegated (portable kernels).",
    large=True,
)
def build_gpt_portable_fp32():
    name = "gpt_portable_fp32"
    reset_outputs(f"{name}.pte")
    m, x = _gpt()
    with torch.no_grad():
        prog = portable_lower(torch.export.export(m, x))
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"layers": 12, "hidden": 768, "vocab": 50257, "seq": 128},
    }


def _layered_gpt(layers):
    """The GPT's shape with L blocks at d = 64 (issue 25's per-node speed programs)."""
    torch.manual_seed(SEED)
    m = TinyGPT(vocab=256, d=64, layers=layers, heads=4, ctx=32).eval()
    return m, (torch.randint(0, 256, (1, 32)),)


def _layered_example(layers, backend):
    name = f"gpt{layers}_d64_{backend}"

    @example(
        name,
        backend,
        f"LARGE benchmark: {layers}-layer, hidden-64 GPT-like decoder, fp32, {backend} "
        "(per-node speed: cost follows instructions).",
        large=True,
    )
    def build():
        reset_outputs(f"{name}.pte")
        m, x = _layered_gpt(layers)
        with torch.no_grad():
            if backend == "xnnpack":
                prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True)
            else:
                prog = portable_lower(torch.export.export(m, x))
        return {
            "files": [write_pte(prog, name)],
            "sidecars": [],
            "settings": {"layers": layers, "hidden": 64, "heads": 4, "vocab": 256, "seq": 32},
        }


for _layers in (48, 192):
    for _backend in ("portable", "xnnpack"):
        _layered_example(_layers, _backend)
