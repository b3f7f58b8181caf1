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

Conventions are those of build_examples.py (whose helpers, in common.py, lowering.py and etrecords.py, this script imports): one fresh
process per program with PYTHONHASHSEED=0, every toolchain path relative to the output folder,
`<stem>.memory.json` (ExecuTorch's own memory plan) for every program, the intermediate `.tosa`
of every partition in `<stem>_artifacts/` (the fragmented MobileNetV2 on Ethos-U85 excepted: it
is the existing example, built without them), and the rows of manifest.json and README.md.

Usage (from the repository root)::

    python -m examples.build_whatif_pairs                 # every program of every pair
    python -m examples.build_whatif_pairs --only whatif_lrn_cpu_ethosu85
    python -m examples.build_whatif_pairs --list
    python -m examples.build_whatif_pairs --pairs-only    # rewrite whatif_pairs.json, README.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from examples.builders.ethosu import ethosu_example
from examples.common import (
    EXAMPLES,
    HERE,
    Example,
    build_in_subprocess,
    check_paths,
    example,
    inputs,
    prune_artifacts,
    reset_outputs,
    run_worker,
    write_pte,
)
from examples.etrecords import captured_partition_rejections, save_etrecord
from examples.lowering import arm_partition_report, ethosu_spec, not_add_check, quantize_pt2e
from examples.manifest import write_manifest
from examples.models import SEED
from examples.models.mobilenet import mobilenet_v2, mobilenet_v2_classes
from examples.models.pairs import LrnAsConv, conv_block, lrn, pair_net, upsample
from examples.readme import write_readme
from examples.verify import print_facts, verify_example

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
# Fingerprints: the two sides of a pair share network and inputs
# --------------------------------------------------------------------------------------


def _sha(tensors: Iterator[tuple[str, torch.Tensor]]) -> str:
    h = hashlib.sha256()
    for name, t in tensors:
        h.update(name.encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def fingerprint(model: torch.nn.Module, example: torch.Tensor, calib: list) -> dict[str, str]:
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
    model: torch.nn.Module,
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
    (etrecords.save_etrecord: the layers an island came from, for the what-if's fix)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    art = f"{name}_artifacts"
    reset_outputs(f"{name}.pte", art, f"{name}.etrecord", f"{name}.rejections.json")
    kw = {"memory_mode": memory_mode}
    if system_config:
        kw["system_config"] = system_config
    spec = ethosu_spec(target, art, **kw)
    calib = inputs(tuple(example.shape), calib_n)
    qep = _quantized(model, example, spec, float_modules, calib)
    partitioner = EthosUPartitioner(spec, additional_checks=list(checks) or None)
    with captured_partition_rejections() as rejections, arm_partition_report():
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=etrecord,
        )
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [write_pte(prog, name)]
    if etrecord:
        save_etrecord(prog, name, rejections)
        files += [f"{name}.etrecord", f"{name}.rejections.json"]
    prune_artifacts(art)  # out.tosa and output/out_vela.npz repeat the last partition
    settings = {
        "input": list(example.shape),
        "target": target,
        "system_config": _flag(spec.compiler_flags, "system-config"),
        "memory_mode": memory_mode,
        "compile_flags": spec.compiler_flags,
        "tosa_spec": str(spec.tosa_spec),
        "quantization": "INT8 per-channel symmetric (EthosUQuantizer)"
        + (f"; left in float: {', '.join(float_modules)}" if float_modules else ""),
        "extract_delegate_segments": False,
        **fingerprint(model, example, calib),
    }
    return {"files": files, "sidecars": [art], "settings": settings}


def _quantized(model, example, spec, float_modules: tuple[str, ...], calib: list):
    """The model quantized with EthosUQuantizer, INT8 per-channel symmetric, `float_modules`
    left in float, calibrated on `calib`."""
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )

    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    for module in float_modules:
        quantizer.set_module_name(module, None)
    return quantize_pt2e(model, (example,), quantizer, calib)


def _flag(spec_flags: list[str], key: str) -> str | None:
    return next((f.split("=", 1)[1] for f in spec_flags if f.startswith(f"--{key}=")), None)


# --------------------------------------------------------------------------------------
# The programs
# --------------------------------------------------------------------------------------

PROGRAMS: dict[str, Example] = {}


def program(name: str, description: str):
    def deco(fn):
        example(name, "ethos-u", description)(fn)  # a row of manifest.json and README.md
        PROGRAMS[name] = EXAMPLES[name]
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
    out = ethosu_example(
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
    model = mobilenet_v2(0.35)
    example = torch.randn(1, 3, 96, 96)
    return fingerprint(model, example, inputs((1, 3, 96, 96), 4))


def _mv2_residual_u55(name: str, checks: tuple) -> dict:
    model = mobilenet_v2_classes(0.35, 10)
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
    out = _mv2_residual_u55("whatif_mv2_residual_cpu_ethosu55", (not_add_check(),))
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
    model = pair_net(lrn)
    example = inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
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
    model = pair_net(lrn)
    example = inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    lrn_net = pair_net(lrn)  # the fragmented side's network, for the equivalence check
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


@program(
    "whatif_float_block_ethosu85",
    "What-if pair float_block, fragmented side: PairNet (64x64) with features.2 (Conv2d, "
    "BatchNorm2d, ReLU6) excluded from quantization (set_module_name('features.2', None)) on "
    "Ethos-U85-256 (Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram_384KB): it computes in float on the "
    "CPU between dequantize and quantize (build_whatif_pairs.py).",
)
def build_whatif_float_block_ethosu85() -> dict:
    model = pair_net(conv_block)
    example = inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
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
    model = pair_net(conv_block)
    example = inputs((1, 3, 64, 64), 1, seed=SEED + 1)[0][0]
    out = lower_pair_program("whatif_quantized_ethosu85", model, example, **FLOAT_SETTINGS)
    out["settings"]["model"] = "PairNet, features.2 = ConvBNReLU(16, 16)"
    return out


def _upsample_program(name: str, target: str, etrecord: bool) -> dict:
    model = pair_net(upsample)
    example = inputs((1, 3, 32, 32), 1, seed=SEED + 1)[0][0]
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


def build_programs(names: list[str], out: str) -> tuple[dict, dict]:
    """Build each program in a fresh process and verify it: manifest entries and failures."""
    entries, failures = {}, {}
    for name in names:
        ex = PROGRAMS[name]
        print(f"=== {name}", flush=True)
        try:
            result = build_in_subprocess("examples.build_whatif_pairs", name, out)
            facts = verify_example(name, result, out)
        except Exception as exc:
            traceback.print_exc()
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        print_facts(name, facts)
        hits = check_paths(out, result["files"] + result["sidecars"])
        if hits:
            failures[name] = f"absolute machine path found in {hits}"
        entries[name] = {**result, "kind": ex.kind, "description": ex.description, "facts": facts}
    return entries, failures


def write_pairs(out: str) -> None:
    """whatif_pairs.json, when every side of every pair is in manifest.json."""
    sides = [n for p in PAIRS for n in (p.fragmented, p.fixed)]
    recorded = _manifest_entries(sides)
    if all(n in recorded for n in sides):
        with open(os.path.join(out, PAIRS_JSON), "w") as f:
            json.dump(pairs_manifest(recorded), f, indent=1)
            f.write("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
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
        return run_worker(PROGRAMS[args._worker], args.out, args._result)
    if args.list:
        for p in PROGRAMS.values():
            print(f"{p.name:34s} {p.description}")
        return 0
    names = [] if args.pairs_only else args.only or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown program(s): {unknown}; see --list")
    out = HERE  # always the committed folder: the pairs are examples
    entries, failures = build_programs(names, out)
    if entries:
        doc = write_manifest(out, entries)
    else:  # --pairs-only: the README from the manifest as it is
        with open(os.path.join(out, "manifest.json")) as f:
            doc = json.load(f)
    write_readme(out, doc)
    if not failures:
        write_pairs(out)
    for n, msg in failures.items():
        print(f"FAILED {n}: {msg}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
