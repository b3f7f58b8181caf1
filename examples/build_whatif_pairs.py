#!/usr/bin/env python3
"""Build the what-if pairs: the same network exported fragmented and fixed (issue 32).

A *pair* is two Ethos-U programs made from the same seeded weights, the same example input and the
same calibration inputs, that differ only by the fix a what-if predicts: the fragmented side has
CPU islands with compute kernels, the fixed side is what re-exporting with the fix gives. The fixed
side is the real toolchain's answer that a prediction made from the fragmented `.pte` alone is
checked against (tests/support/whatif_pairs.py, tests/oracle/test_whatif_pairs_truth.py).

| pair | kind | fragmented | fixed |
|---|---|---|---|
| residual_add_u85 | remove_check | `mv2_residual_cpu_ethosu85` (build_examples.py) | `mv2_residual_npu_ethosu85` |
| residual_add_u55 | remove_check | `whatif_mv2_residual_cpu_ethosu55` | `whatif_mv2_residual_npu_ethosu55` |
| lrn | replace_operator | `whatif_lrn_cpu_ethosu85` | `whatif_lrn_npu_ethosu85` |
| float_block | quantize | `whatif_float_block_ethosu85` | `whatif_quantized_ethosu85` |
| upsample | other_target | `whatif_upsample_ethosu55` | `whatif_upsample_ethosu85` |

The pairs, with what was changed, accelerators, memory modes and system configs, are listed in
`whatif_pairs.json` beside this script (written by it). Each side records the sha256 of its
float network (every parameter and buffer), of its example input and of its calibration inputs
in `manifest.json`'s settings; the build fails when the two sides of a pair differ in the
network or the inputs where they should not.

Conventions are those of build_examples.py (whose helpers this script imports): one fresh
process per program with PYTHONHASHSEED=0, every toolchain path relative to the output folder,
`<stem>.memory.json` (ExecuTorch's own memory plan) for every program, the intermediate `.tosa`
of every partition in `<stem>_artifacts/` (the fragmented MobileNetV2 on Ethos-U85 excepted: it
is the existing example, built without them), and the rows of manifest.json and README.md.

Usage (from the repository root)::

    python examples/build_whatif_pairs.py                 # every program of every pair
    python examples/build_whatif_pairs.py --only whatif_lrn_cpu_ethosu85
    python examples/build_whatif_pairs.py --list
    python examples/build_whatif_pairs.py --pairs-only    # rewrite whatif_pairs.json, README.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_examples as bx  # noqa: E402  (beside this script)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SEED = bx.SEED
PAIRS_JSON = "whatif_pairs.json"

# --------------------------------------------------------------------------------------
# The pairs
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    name: str
    kind: str  # remove_check / replace_operator / quantize / other_target
    fragmented: str  # program stems
    fixed: str
    changed: str  # what the fix was, in words
    same_network: bool  # the two float networks are the same weights (else: same up to the fix)
    island_operators: tuple[str, ...]  # the compute operators the fragmented side's islands hold


PAIRS = [
    Pair(
        "residual_add_u85",
        "remove_check",
        "mv2_residual_cpu_ethosu85",
        "mv2_residual_npu_ethosu85",
        "the partitioner's additional_checks entry that keeps every aten.add off the NPU removed",
        True,
        ("aten.add",),
    ),
    Pair(
        "residual_add_u55",
        "remove_check",
        "whatif_mv2_residual_cpu_ethosu55",
        "whatif_mv2_residual_npu_ethosu55",
        "the partitioner's additional_checks entry that keeps every aten.add off the NPU removed",
        True,
        ("aten.add",),
    ),
    Pair(
        "lrn",
        "replace_operator",
        "whatif_lrn_cpu_ethosu85",
        "whatif_lrn_npu_ethosu85",
        "features.2 nn.LocalResponseNorm (aten.avg_pool3d on the CPU) written as "
        "x * (k + conv1x1(x * x))^-beta with a fixed banded 1x1 convolution (alpha/size on the "
        "channel window): MUL, CONV2D, ADD and a TABLE for the pow",
        False,
        ("aten.avg_pool3d",),
    ),
    Pair(
        "float_block",
        "quantize",
        "whatif_float_block_ethosu85",
        "whatif_quantized_ethosu85",
        "features.2 (Conv2d+BatchNorm2d+ReLU6) quantized like the rest: the quantizer's "
        "set_module_name('features.2', None) dropped",
        True,
        ("aten.convolution", "aten.hardtanh"),
    ),
    Pair(
        "upsample",
        "other_target",
        "whatif_upsample_ethosu55",
        "whatif_upsample_ethosu85",
        "the same network compiled for Ethos-U85-256 instead of Ethos-U55-128: "
        "aten.upsample_bilinear2d.vec is refused on the U55 (EthosU55NotSupported)",
        True,
        ("aten.upsample_bilinear2d",),
    ),
]

# --------------------------------------------------------------------------------------
# Models (seeded; no layer draws random numbers after the seeded construction)
# --------------------------------------------------------------------------------------


class PairNet(nn.Module):
    """A few conv blocks and a small classifier, with `middle` as features.2.

    features.0 stride-2 conv (3 -> 16), features.1 conv (16 -> 16), features.2 the layer a pair
    is about, features.3 stride-2 conv (16 -> 32), features.4 conv (32 -> 32), then global
    average pooling and a Linear(32, 10). The convolutions are build_examples.ConvBNReLU, so
    their BatchNorm statistics are non-trivial like the MobileNetV2's.
    """

    def __init__(self, middle: nn.Module) -> None:
        super().__init__()
        self.features = nn.Sequential(
            bx.ConvBNReLU(3, 16, stride=2),
            bx.ConvBNReLU(16, 16),
            middle,
            bx.ConvBNReLU(16, 32, stride=2),
            bx.ConvBNReLU(32, 32),
        )
        self.classifier = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def pair_net(middle: Callable[[], nn.Module]) -> PairNet:
    """PairNet seeded the way build_examples seeds its models (BatchNorm statistics included)."""
    return bx._seeded(PairNet, middle())


class LrnAsConv(nn.Module):
    """nn.LocalResponseNorm written with operators the Arm backend lowers for INT.

    LocalResponseNorm(x)_c = x_c / (k + alpha/size * sum_{c'} x_c'^2)^beta, the sum over the
    channels c - size//2 .. c + (size-1)//2 (torch pads and averages with avg_pool3d, counting
    the padding). Here the window sum is a 1x1 convolution whose weight is alpha/size on that
    band and 0 elsewhere, and the division a multiplication by the power -beta: MUL, CONV2D,
    ADD, POW (a TABLE) and MUL, all lowered for TOSA INT. The weight is fixed, never drawn.
    """

    def __init__(self, channels: int, lrn: nn.LocalResponseNorm) -> None:
        super().__init__()
        size = lrn.size
        band = torch.zeros(channels, channels)
        for out in range(channels):
            lo, hi = out - size // 2, out + (size - 1) // 2
            for c in range(max(lo, 0), min(hi, channels - 1) + 1):
                band[out, c] = lrn.alpha / size
        with torch.random.fork_rng():  # the conv's own init must not move the seeded stream
            self.window = nn.Conv2d(channels, channels, 1, bias=False)
        self.window.weight.data.copy_(band[:, :, None, None])
        self.k, self.beta = float(lrn.k), float(lrn.beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.pow(self.window(x * x) + self.k, -self.beta)


def _lrn() -> nn.LocalResponseNorm:
    return nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0)


def mv2_small(classes: int = 10) -> bx.MobileNetV2:
    """MobileNetV2 0.35 seeded as build_examples.mobilenet_v2, with a `classes`-way classifier
    (10: keeps the U55 pair's files small; the 1000-way one is 1.28 MB of INT8 weights)."""
    torch.manual_seed(SEED)
    return bx.MobileNetV2(width_mult=0.35, num_classes=classes).eval().requires_grad_(False)


# --------------------------------------------------------------------------------------
# Fingerprints: the two sides of a pair share network and inputs
# --------------------------------------------------------------------------------------


def _sha(tensors: Iterator[tuple[str, torch.Tensor]]) -> str:
    h = hashlib.sha256()
    for name, t in tensors:
        h.update(name.encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def fingerprint(model: nn.Module, example: torch.Tensor, calib: list) -> dict[str, str]:
    return {
        "network_sha256": _sha(iter(sorted(model.state_dict().items()))),
        "input_sha256": _sha(iter([("x", example)])),
        "calibration_sha256": _sha((str(i), a[0]) for i, a in enumerate(calib)),
    }


# --------------------------------------------------------------------------------------
# Lowering
# --------------------------------------------------------------------------------------


def lower_pair_program(
    name: str,
    model: nn.Module,
    example: torch.Tensor,
    *,
    target: str,
    memory_mode: str,
    system_config: str | None = None,
    checks: tuple = (),
    float_modules: tuple[str, ...] = (),
    calib_n: int = 4,
    etrecord: bool = False,
) -> dict:
    """Quantize (INT8 per-channel symmetric, `float_modules` left in float), lower to Ethos-U with
    the partitioner's own report and `.tosa` sidecars in `<name>_artifacts/`, write `<name>.pte`;
    with `etrecord`, also `<name>.etrecord` and the partitioner's reasons `<name>.rejections.json`
    (build_examples.save_etrecord: the layers an island came from, for the what-if's fix)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    art = f"{name}_artifacts"
    bx._reset_outputs(f"{name}.pte", art, f"{name}.etrecord", f"{name}.rejections.json")
    kw = {"memory_mode": memory_mode}
    if system_config:
        kw["system_config"] = system_config
    spec = bx.ethosu_spec(target, art, **kw)
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    for module in float_modules:
        quantizer.set_module_name(module, None)
    shape = tuple(example.shape)
    calib = bx._inputs(shape, calib_n)
    qep = bx.quantize_pt2e(model, (example,), quantizer, calib)
    partitioner = EthosUPartitioner(spec, additional_checks=list(checks) or None)
    with bx.captured_partition_rejections() as rejections, bx.arm_partition_report():
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=etrecord,
        )
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [bx._write_pte(prog, name)]
    if etrecord:
        bx.save_etrecord(prog, name, rejections)
        files += [f"{name}.etrecord", f"{name}.rejections.json"]
    # out.tosa and output/out_vela.npz repeat the last partition (see build_examples.py).
    bx._reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "input": list(shape),
            "target": target,
            "system_config": _flag(spec.compiler_flags, "system-config"),
            "memory_mode": memory_mode,
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)"
            + (f"; left in float: {', '.join(float_modules)}" if float_modules else ""),
            "extract_delegate_segments": False,
            **fingerprint(model, example, calib),
        },
    }


def _flag(spec_flags: list[str], key: str) -> str | None:
    return next((f.split("=", 1)[1] for f in spec_flags if f.startswith(f"--{key}=")), None)


# --------------------------------------------------------------------------------------
# The programs
# --------------------------------------------------------------------------------------

PROGRAMS: dict[str, bx.Example] = {}


def program(name: str, description: str):
    def deco(fn):
        bx.example(name, "ethos-u", description)(fn)  # a row of manifest.json and README.md
        PROGRAMS[name] = bx.EXAMPLES[name]
        return fn

    return deco


@program(
    "mv2_residual_npu_ethosu85",
    "What-if pair residual_add_u85, fixed side: mv2_residual_cpu_ethosu85 (MobileNetV2 0.35/96, "
    "Ethos-U85-256, payloads inline) built the same way WITHOUT the additional_checks entry "
    "that keeps aten.add off the NPU: one Ethos-U partition; TOSA kept in "
    "mv2_residual_npu_ethosu85_artifacts/ (build_whatif_pairs.py).",
)
def build_mv2_residual_npu_ethosu85() -> dict:
    out = bx._ethosu_example(
        "mv2_residual_npu_ethosu85",
        width=0.35,
        res=96,
        target="ethos-u85-256",
        keep_artifacts=True,
        segments=False,
    )
    out["settings"].update(mv2_residual_u85_fingerprint())
    out["settings"]["memory_mode"] = _flag(out["settings"]["compile_flags"], "memory-mode")
    return out


def mv2_residual_u85_fingerprint() -> dict[str, str]:
    """The network and inputs `_ethosu_example` lowers for both sides of residual_add_u85: it
    draws the example input right after `mobilenet_v2` seeds and builds the model, and
    `arm_lower` calibrates on `_inputs(shape, 4)`. The fragmented side was built by
    build_examples.py before fingerprints were recorded: its fingerprint is this recipe's."""
    model = bx.mobilenet_v2(0.35)
    example = torch.randn(1, 3, 96, 96)
    return fingerprint(model, example, bx._inputs((1, 3, 96, 96), 4))


def _mv2_residual_u55(name: str, checks: tuple) -> dict:
    model = mv2_small()
    example = torch.randn(1, 3, 96, 96)
    out = lower_pair_program(
        name, model, example, target="ethos-u55-128", memory_mode="Shared_Sram", checks=checks
    )
    out["settings"].update(model="MobileNetV2 0.35/96, 10 classes")
    return out


@program(
    "whatif_mv2_residual_cpu_ethosu55",
    "What-if pair residual_add_u55, fragmented side: MobileNetV2 0.35/96 (10 classes) on "
    "Ethos-U55-128 (Ethos_U55_High_End_Embedded, Shared_Sram) with every aten.add kept off the "
    "NPU by an additional_checks entry: the ten residual adds split it into 11 partitions; TOSA "
    "and partition_report.txt in its _artifacts/ (build_whatif_pairs.py).",
)
def build_whatif_mv2_residual_cpu_ethosu55() -> dict:
    out = _mv2_residual_u55("whatif_mv2_residual_cpu_ethosu55", (bx._not_add_check(),))
    out["settings"]["kept_off_npu"] = "aten.add (partitioner additional_checks)"
    return out


@program(
    "whatif_mv2_residual_npu_ethosu55",
    "What-if pair residual_add_u55, fixed side: the same MobileNetV2 0.35/96 on Ethos-U55-128 "
    "without the check: one Ethos-U partition; TOSA in its _artifacts/ (build_whatif_pairs.py).",
)
def build_whatif_mv2_residual_npu_ethosu55() -> dict:
    return _mv2_residual_u55("whatif_mv2_residual_npu_ethosu55", ())


LRN_SETTINGS = {"target": "ethos-u85-128", "memory_mode": "Sram_Only"}


@program(
    "whatif_lrn_cpu_ethosu85",
    "What-if pair lrn, fragmented side: a five-conv PairNet (64x64 input) with an "
    "nn.LocalResponseNorm as features.2 on Ethos-U85-128 (Ethos_U85_SYS_DRAM_Mid, Sram_Only): "
    "its aten.avg_pool3d stays on the CPU between two Ethos-U partitions (build_whatif_pairs.py).",
)
def build_whatif_lrn_cpu_ethosu85() -> dict:
    model = pair_net(_lrn)
    example = bx._inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    out = lower_pair_program(
        "whatif_lrn_cpu_ethosu85", model, example, etrecord=True, **LRN_SETTINGS
    )
    out["settings"]["model"] = "PairNet, features.2 = LocalResponseNorm(5, 1e-4, 0.75, 2)"
    return out


@program(
    "whatif_lrn_npu_ethosu85",
    "What-if pair lrn, fixed side: the same PairNet with features.2 written as "
    "x * (k + conv1x1(x*x))^-beta (a fixed banded 1x1 convolution; the pow a TABLE) on "
    "Ethos-U85-128, Sram_Only: one Ethos-U partition (build_whatif_pairs.py).",
)
def build_whatif_lrn_npu_ethosu85() -> dict:
    model = pair_net(_lrn)
    example = bx._inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    lrn_net = pair_net(_lrn)  # the fragmented side's network, for the equivalence check
    model.features[2] = LrnAsConv(16, model.features[2])
    with torch.no_grad():  # the replacement computes what the LocalResponseNorm computes
        err = (model(example) - lrn_net(example)).abs().max().item()
    assert err < 1e-5, f"LrnAsConv differs from LocalResponseNorm by {err}"
    out = lower_pair_program("whatif_lrn_npu_ethosu85", model, example, **LRN_SETTINGS)
    out["settings"]["model"] = "PairNet, features.2 = LrnAsConv(16, LocalResponseNorm(5, ...))"
    out["settings"]["lrn_network_sha256"] = fingerprint(lrn_net, example, [])["network_sha256"]
    out["settings"]["max_abs_difference_to_lrn"] = err
    return out


FLOAT_SETTINGS = {
    "target": "ethos-u85-256",
    "memory_mode": "Dedicated_Sram_384KB",
    "system_config": "Ethos_U85_SYS_DRAM_Mid",
}


def _conv_block() -> nn.Module:
    return bx.ConvBNReLU(16, 16)


@program(
    "whatif_float_block_ethosu85",
    "What-if pair float_block, fragmented side: PairNet (64x64) with features.2 (Conv2d, "
    "BatchNorm2d, ReLU6) excluded from quantization (set_module_name('features.2', None)) on "
    "Ethos-U85-256 (Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram_384KB): it computes in float on the "
    "CPU between dequantize and quantize (build_whatif_pairs.py).",
)
def build_whatif_float_block_ethosu85() -> dict:
    model = pair_net(_conv_block)
    example = bx._inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    out = lower_pair_program(
        "whatif_float_block_ethosu85",
        model,
        example,
        float_modules=("features.2",),
        etrecord=True,
        **FLOAT_SETTINGS,
    )
    out["settings"]["model"] = "PairNet, features.2 = ConvBNReLU(16, 16), left in float"
    return out


@program(
    "whatif_quantized_ethosu85",
    "What-if pair float_block, fixed side: the same PairNet fully quantized on Ethos-U85-256, "
    "Dedicated_Sram_384KB: one Ethos-U partition (build_whatif_pairs.py).",
)
def build_whatif_quantized_ethosu85() -> dict:
    model = pair_net(_conv_block)
    example = bx._inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    out = lower_pair_program("whatif_quantized_ethosu85", model, example, **FLOAT_SETTINGS)
    out["settings"]["model"] = "PairNet, features.2 = ConvBNReLU(16, 16)"
    return out


def _upsample() -> nn.Module:
    return nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)


def _upsample_program(name: str, target: str, etrecord: bool) -> dict:
    model = pair_net(_upsample)
    example = bx._inputs((1, 3, 32, 32), 1, seed=SEED + 1)[0][0]
    out = lower_pair_program(
        name, model, example, target=target, memory_mode="Shared_Sram", etrecord=etrecord
    )
    out["settings"]["model"] = "PairNet, features.2 = Upsample(x2, bilinear)"
    return out


@program(
    "whatif_upsample_ethosu55",
    "What-if pair upsample, fragmented side: PairNet (32x32) with a bilinear x2 upsampling as "
    "features.2 on Ethos-U55-128 (Ethos_U55_High_End_Embedded, Shared_Sram): "
    "aten.upsample_bilinear2d is refused on the U55 and runs on the CPU (build_whatif_pairs.py).",
)
def build_whatif_upsample_ethosu55() -> dict:
    return _upsample_program("whatif_upsample_ethosu55", "ethos-u55-128", etrecord=True)


@program(
    "whatif_upsample_ethosu85",
    "What-if pair upsample, fixed side: the same PairNet on Ethos-U85-256 "
    "(Ethos_U85_SYS_DRAM_Mid, Shared_Sram): one Ethos-U partition (build_whatif_pairs.py).",
)
def build_whatif_upsample_ethosu85() -> dict:
    return _upsample_program("whatif_upsample_ethosu85", "ethos-u85-256", etrecord=False)


# --------------------------------------------------------------------------------------
# The pairs' manifest
# --------------------------------------------------------------------------------------

_SAME_KEYS = ("input_sha256", "calibration_sha256")


def pairs_manifest(entries: dict[str, dict]) -> dict:
    """whatif_pairs.json from the programs' recorded settings; fails when the two sides of a
    pair were not built from the same network and inputs."""
    rows = []
    for pair in PAIRS:
        frag, fixed = entries[pair.fragmented], entries[pair.fixed]
        fs, xs = frag["settings"], fixed["settings"]
        if "network_sha256" not in fs:  # built by build_examples.py: the same recipe
            fs = {**fs, **mv2_residual_u85_fingerprint()}
            frag = {**frag, "settings": fs, "built_by": "examples/build_examples.py"}
        for key in _SAME_KEYS + (("network_sha256",) if pair.same_network else ()):
            assert fs[key] == xs[key], f"{pair.name}: the two sides differ in {key}"
        if pair.kind == "replace_operator":
            assert fs["network_sha256"] == xs["lrn_network_sha256"], pair.name

        def side(entry: dict) -> dict:
            s = entry["settings"]
            flags = s["compile_flags"]
            return {
                "file": entry["files"][0],
                "built_by": entry["built_by"],
                "sidecars": entry["sidecars"],
                "accelerator": _flag(flags, "accelerator-config"),
                "system_config": _flag(flags, "system-config"),
                "memory_mode": _flag(flags, "memory-mode"),
                "network_sha256": s["network_sha256"],
            }

        rows.append(
            {
                "name": pair.name,
                "kind": pair.kind,
                "changed": pair.changed,
                "same_network": pair.same_network,
                "island_operators": list(pair.island_operators),
                "fragmented": side(frag),
                "fixed": side(fixed),
                "input_sha256": fs["input_sha256"],
                "calibration_sha256": fs["calibration_sha256"],
            }
        )
    return {
        "generator": "examples/build_whatif_pairs.py",
        "note": "The same network exported fragmented and fixed (issue 32); tests read the files.",
        "pairs": rows,
    }


def _manifest_entries(names: list[str]) -> dict[str, dict]:
    with open(os.path.join(HERE, "manifest.json")) as f:
        known = {e["name"]: e for e in json.load(f)["examples"]}
    mine = "examples/build_whatif_pairs.py"
    return {n: {**known[n], "built_by": mine} for n in names if n in known}


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def _build_in_subprocess(name: str, out: str) -> dict:
    """One program in a fresh interpreter with PYTHONHASHSEED=0 (see build_examples.py)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as td:
        result_file = os.path.join(td, "result.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", name]
        cmd += ["--out", out, "--_result", result_file]
        if subprocess.call(cmd, env=env) != 0:
            raise RuntimeError(f"worker for {name} failed")
        with open(result_file) as f:
            return json.load(f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="build only these programs")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    ap.add_argument(
        "--pairs-only",
        action="store_true",
        help=f"build nothing; rewrite {PAIRS_JSON} from the programs' entries in manifest.json",
    )
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=HERE, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker:  # child process: build one program, report its result as JSON
        os.chdir(os.path.abspath(args.out))
        torch.manual_seed(SEED)
        t0 = time.time()
        result = bx._build_recording(PROGRAMS[args._worker])
        result["build_seconds"] = round(time.time() - t0, 1)
        with open(args._result, "w") as f:
            json.dump(result, f)
        return 0
    if args.list:
        for p in PROGRAMS.values():
            print(f"{p.name:34s} {p.description}")
        return 0
    names = [] if args.pairs_only else args.only or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown program(s): {unknown}; see --list")

    out = HERE  # always the committed folder: the pairs are examples
    entries, failures = {}, {}
    for name in names:
        ex = PROGRAMS[name]
        print(f"=== {name}", flush=True)
        try:
            result = _build_in_subprocess(name, out)
            facts = bx.verify_example(name, result, out)
        except Exception as exc:
            traceback.print_exc()
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        bx.print_facts(name, facts)
        hits = bx.check_paths(out, result["files"] + result["sidecars"])
        if hits:
            failures[name] = f"absolute machine path found in {hits}"
        entries[name] = {
            **result,
            "kind": ex.kind,
            "description": ex.description,
            "facts": facts,
        }
    if entries:
        doc = bx.write_manifest(out, entries)
    else:  # --pairs-only: the README from the manifest as it is
        with open(os.path.join(out, "manifest.json")) as f:
            doc = json.load(f)
    bx.write_readme(out, doc)
    sides = [n for p in PAIRS for n in (p.fragmented, p.fixed)]
    recorded = _manifest_entries(sides)
    if not failures and all(n in recorded for n in sides):
        with open(os.path.join(out, PAIRS_JSON), "w") as f:
            json.dump(pairs_manifest(recorded), f, indent=1)
            f.write("\n")
    for n, msg in failures.items():
        print(f"FAILED {n}: {msg}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
