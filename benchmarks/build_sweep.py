#!/usr/bin/env python3
"""Build the NPU-estimate sweep: small networks through the real Arm flow, then Vela per config.

Every network is a plain ``torch.nn`` model with seeded random weights, quantized with
``EthosUQuantizer`` and lowered with ``EthosUPartitioner`` (TOSA, then Vela through ExecuTorch's
Ethos-U backend), once for the Ethos-U55 TOSA profile (``ethos-u55-128``) and once for the U85
profile (``ethos-u85-256``), keeping each partition's intermediate ``.tosa``. Vela is then run
again on every partition's ``.tosa`` for each configuration of the case list (accelerator,
system config, memory mode of Vela's bundled ``vela.ini``): that gives the configuration's own
command stream without a new export, plus Vela's estimate of it:

- ``*_vela.npz`` (``cmd_data``: the command stream the adapter decodes),
- ``*_per-layer.csv`` (``--verbose-performance``: cycles and access cycles per memory per layer),
- ``*_summary_*.csv`` (the totals),
- ``*_debug.xml`` (``--enable-debug-db``: its ``queue`` table maps command-stream offsets to
  Vela's scheduled operations, which is how the benchmark matches operations).

Usage (from the repository root; everything goes to the git-ignored ``bench_out/sweep``)::

    nice -n 10 python -m benchmarks.build_sweep              # exports + Vela runs
    python -m benchmarks.build_sweep --list                  # networks and cases
    python -m benchmarks.build_sweep --only conv3x3_s1 res_add
    python -m benchmarks.build_sweep --vela-only             # re-run Vela on existing exports
    python -m benchmarks.build_sweep --examples-only         # the shipped examples' sidecars

Exports run one at a time (about 10-60 s each on this machine); Vela runs take a second each.
``bench_out/sweep/manifest.json`` lists every case; ``benchmarks/bench_npu_estimate.py`` reads it.
The committed subset for the tests is cut from it by ``benchmarks/bench_npu_estimate.py
--write-subset``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OUT = ROOT / "bench_out" / "sweep"
SEED = 20261201

# --------------------------------------------------------------------------------------
# Configurations (names from Vela's bundled vela.ini)
# --------------------------------------------------------------------------------------

U55_BASE = ("ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram")
U85_BASE = ("ethos-u85-256", "Ethos_U85_SYS_DRAM_Mid", "Shared_Sram")
U55_CONFIGS = [
    (f"ethos-u55-{macs}", system, mode)
    for macs in (64, 128, 256)
    for system in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded")
    for mode in ("Shared_Sram", "Sram_Only")
]
U85_CONFIGS = [
    (f"ethos-u85-{macs}", system, mode)
    for macs in (128, 256, 512, 1024, 2048)
    for system, modes in (
        ("Ethos_U85_SYS_DRAM_Low", ("Shared_Sram", "Dedicated_Sram_384KB")),
        ("Ethos_U85_SYS_DRAM_Mid", ("Shared_Sram", "Sram_Only")),
        ("Ethos_U85_SYS_DRAM_High", ("Dedicated_Sram_384KB", "Shared_Sram")),
        ("Ethos_U85_SYS_Flash_Low", ("Shared_Sram",)),
        ("Ethos_U85_SYS_Flash_High", ("Shared_Sram", "Sram_Only")),
    )
    for mode in modes
]
EXTRA_U55 = 2  # configurations per network beside the base one
EXTRA_U85 = 3


# --------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------


@dataclass
class Network:
    name: str
    what: str
    make: Callable[[], object]
    shape: tuple[int, ...]
    families: tuple[str, ...] = ("u55", "u85")
    held_out: bool = False  # not looked at while fitting the model; reported apart
    extra: dict[str, int] = field(default_factory=dict)  # family -> extra configurations


NETWORKS: dict[str, Network] = {}


def network(name: str, what: str, shape: tuple[int, ...], **kw: object) -> Callable:
    def deco(fn: Callable[[], object]) -> Callable[[], object]:
        NETWORKS[name] = Network(name, what, fn, shape, **kw)  # type: ignore[arg-type]
        return fn

    return deco


def _nn():  # torch is imported only when building
    import torch.nn as nn

    return nn


def _conv_net(cin: int, cout: int, k, s=1, p=0, d=1, groups=1, act: str | None = "relu"):
    nn = _nn()
    layers = [nn.Conv2d(cin, cout, k, s, p, dilation=d, groups=groups), nn.BatchNorm2d(cout)]
    if act == "relu":
        layers.append(nn.ReLU())
    elif act == "relu6":
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


@network("conv1x1", "1x1 convolution 16->32 at 32x32", (1, 16, 32, 32))
def _conv1x1():
    return _conv_net(16, 32, 1)


@network("conv3x3_s1", "3x3 convolution, stride 1, pad 1, 16->32 at 32x32", (1, 16, 32, 32))
def _conv3x3_s1():
    return _conv_net(16, 32, 3, 1, 1)


@network("conv3x3_s2", "3x3 convolution, stride 2, pad 1, 16->32 at 32x32", (1, 16, 32, 32))
def _conv3x3_s2():
    return _conv_net(16, 32, 3, 2, 1)


@network("conv3x3_valid", "3x3 convolution without padding, 16->24 at 30x30", (1, 16, 30, 30))
def _conv3x3_valid():
    return _conv_net(16, 24, 3, 1, 0)


@network("conv5x5", "5x5 convolution, pad 2, 8->16 at 32x32", (1, 8, 32, 32))
def _conv5x5():
    return _conv_net(8, 16, 5, 1, 2)


@network("conv7x7_s2", "7x7/2 stem convolution 3->16 at 64x64", (1, 3, 64, 64))
def _conv7x7_s2():
    return _conv_net(3, 16, 7, 2, 3)


@network("conv3x3_wide", "3x3 convolution 64->128 at 16x16", (1, 64, 16, 16))
def _conv3x3_wide():
    return _conv_net(64, 128, 3, 1, 1)


@network("conv3x3_dil2", "3x3 convolution, dilation 2, 16->16 at 32x32", (1, 16, 32, 32))
def _conv3x3_dil2():
    return _conv_net(16, 16, 3, 1, 2, d=2)


@network("conv1x7", "1x7 convolution, 32->32 at 24x24", (1, 32, 24, 24))
def _conv1x7():
    return _conv_net(32, 32, (1, 7), 1, (0, 3))


@network("dw3x3_s1", "depthwise 3x3, stride 1, 32 channels at 32x32", (1, 32, 32, 32))
def _dw3x3_s1():
    return _conv_net(32, 32, 3, 1, 1, groups=32, act="relu6")


@network("dw3x3_s2", "depthwise 3x3, stride 2, 48 channels at 32x32", (1, 48, 32, 32))
def _dw3x3_s2():
    return _conv_net(48, 48, 3, 2, 1, groups=48, act="relu6")


@network("dw5x5_mult2", "depthwise 5x5, channel multiplier 2, 16->32 at 24x24", (1, 16, 24, 24))
def _dw5x5_mult2():
    return _conv_net(16, 32, 5, 1, 2, groups=16)


def _res_block(c: int, mul: bool = False):
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = _conv_net(c, c, 3, 1, 1)
            self.b = _conv_net(c, c, 3, 1, 1, act=None)
            self.g = _conv_net(c, c, 1, act=None) if mul else None

        def forward(self, x):
            y = self.b(self.a(x))
            if self.g is not None:
                return y * self.g(x)
            return (x + y).relu()

    return Block()


@network(
    "res_add", "residual block: two 3x3 convolutions and an add, 16 ch at 32x32", (1, 16, 32, 32)
)
def _res_add():
    return _res_block(16)


@network("res_mul", "two branches multiplied elementwise, 16 ch at 32x32", (1, 16, 32, 32))
def _res_mul():
    return _res_block(16, mul=True)


@network("avgpool2x2", "3x3 convolution then 2x2 average pooling, 24 ch at 32x32", (1, 8, 32, 32))
def _avgpool():
    nn = _nn()
    return nn.Sequential(_conv_net(8, 24, 3, 1, 1), nn.AvgPool2d(2))


@network("maxpool3x3_s2", "convolution then 3x3/2 max pooling, 24 ch at 32x32", (1, 8, 32, 32))
def _maxpool():
    nn = _nn()
    return nn.Sequential(_conv_net(8, 24, 3, 1, 1), nn.MaxPool2d(3, 2, 1))


@network("gap_fc", "convolution, global average pooling, fully connected 32->10", (1, 8, 16, 16))
def _gap_fc():
    nn = _nn()
    return nn.Sequential(
        _conv_net(8, 32, 3, 1, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)
    )


@network("resize_nearest", "convolution then 2x nearest upsampling, 16 ch at 16x16", (1, 8, 16, 16))
def _resize_nearest():
    nn = _nn()
    return nn.Sequential(_conv_net(8, 16, 3, 1, 1), nn.Upsample(scale_factor=2, mode="nearest"))


@network(
    "resize_bilinear", "convolution then 2x bilinear upsampling, 16 ch at 16x16", (1, 8, 16, 16)
)
def _resize_bilinear():
    nn = _nn()
    return nn.Sequential(
        _conv_net(8, 16, 3, 1, 1),
        nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
    )


@network("transpose_hw", "convolution, swap H and W, convolution, 16 ch at 16x24", (1, 8, 16, 24))
def _transpose_hw():
    import torch.nn as nn

    class T(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = _conv_net(8, 16, 3, 1, 1)
            self.b = _conv_net(16, 16, 3, 1, 1)

        def forward(self, x):
            return self.b(self.a(x).permute(0, 1, 3, 2).contiguous())

    return T()


@network(
    "concat", "two convolution branches concatenated on channels, 16 ch at 32x32", (1, 16, 32, 32)
)
def _concat():
    import torch
    import torch.nn as nn

    class C(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = _conv_net(16, 16, 1)
            self.b = _conv_net(16, 24, 3, 1, 1)
            self.c = _conv_net(40, 16, 1)

        def forward(self, x):
            return self.c(torch.cat([self.a(x), self.b(x)], dim=1))

    return C()


@network("fc", "fully connected 512->256->10 with ReLU", (1, 512))
def _fc():
    nn = _nn()
    return nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


@network("matmul", "two projections multiplied (attention scores), 32 tokens x 64", (1, 32, 64))
def _matmul():
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(64, 64)
            self.k = nn.Linear(64, 64)

        def forward(self, x):
            return self.q(x) @ self.k(x).transpose(1, 2)

    return M()


@network("act_sigmoid", "convolution + sigmoid (table lookup), 16 ch at 32x32", (1, 8, 32, 32))
def _act_sigmoid():
    nn = _nn()
    return nn.Sequential(_conv_net(8, 16, 3, 1, 1, act=None), nn.Sigmoid())


@network("act_tanh_hswish", "convolutions with tanh and hardswish, 16 ch at 32x32", (1, 8, 32, 32))
def _act_tanh():
    nn = _nn()
    return nn.Sequential(
        _conv_net(8, 16, 3, 1, 1, act=None),
        nn.Tanh(),
        _conv_net(16, 16, 1, act=None),
        nn.Hardswish(),
    )


@network(
    "act_clamp_leaky",
    "convolutions with clamp(-1, 2) and leaky ReLU, 16 ch at 32x32",
    (1, 8, 32, 32),
)
def _act_clamp():
    nn = _nn()
    return nn.Sequential(
        _conv_net(8, 16, 3, 1, 1, act=None),
        nn.Hardtanh(-1.0, 2.0),
        _conv_net(16, 16, 1, act=None),
        nn.LeakyReLU(0.1),
    )


def _lrn():
    return _nn().LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0)


@network("split1", "convolutions split by one CPU operator (LocalResponseNorm)", (1, 8, 32, 32))
def _split1():
    nn = _nn()
    return nn.Sequential(_conv_net(8, 16, 3, 1, 1), _lrn(), _conv_net(16, 16, 3, 1, 1))


@network("split2", "convolutions split by two CPU operators (LocalResponseNorm)", (1, 8, 32, 32))
def _split2():
    nn = _nn()
    return nn.Sequential(
        _conv_net(8, 16, 3, 1, 1),
        _lrn(),
        _conv_net(16, 24, 3, 2, 1),
        _lrn(),
        _conv_net(24, 24, 3, 1, 1),
    )


@network("mv2_w035_r96", "MobileNetV2 0.35 at 96x96, fully delegated", (1, 3, 96, 96))
def _mv2():
    from examples.models.mobilenet import mobilenet_v2

    return mobilenet_v2(0.35, seed=SEED)


@network(
    "resnet_lrn2",
    "ResNet-style (stem, residual blocks, max/avg pooling, FC) split into three Ethos-U "
    "partitions by two LocalResponseNorm layers",
    (1, 3, 64, 64),
    held_out=True,
)
def _resnet_lrn2():
    import torch.nn as nn

    class R(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(_conv_net(3, 16, 3, 2, 1), nn.MaxPool2d(3, 2, 1))
            self.b1 = _res_block(16)
            self.n1 = _lrn()
            self.down = _conv_net(16, 32, 3, 2, 1)
            self.b2 = _res_block(32)
            self.n2 = _lrn()
            self.b3 = _res_block(32)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

        def forward(self, x):
            x = self.n1(self.b1(self.stem(x)))
            x = self.n2(self.b2(self.down(x)))
            return self.head(self.b3(x))

    return R()


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


def cases_for(index: int, net: Network) -> list[tuple[str, tuple[str, str, str]]]:
    """(family, (accelerator, system config, memory mode)): the base config first, then a
    rotation through the others so that every configuration is used by some network."""
    out: list[tuple[str, tuple[str, str, str]]] = []
    for family, base, configs, extra in (
        ("u55", U55_BASE, U55_CONFIGS, EXTRA_U55),
        ("u85", U85_BASE, U85_CONFIGS, EXTRA_U85),
    ):
        if family not in net.families:
            continue
        out.append((family, base))
        others = [c for c in configs if c != base]
        n = net.extra.get(family, extra)
        for k in range(n):
            out.append((family, others[((index * n + k) * 7) % len(others)]))
    return out


def case_id(net: str, config: tuple[str, str, str]) -> str:
    accel, system, mode = config
    return f"{net}/{accel}/{system.removeprefix('Ethos_')}/{mode}"


# --------------------------------------------------------------------------------------
# Export (the real Arm flow)
# --------------------------------------------------------------------------------------


def export(net: Network, family: str, folder: Path) -> dict:
    """Quantize and lower `net` for the family's base accelerator; keep the .tosa sidecars."""
    import torch
    from examples.lowering import arm_lower, ethosu_spec
    from examples.models import seeded

    base = U55_BASE if family == "u55" else U85_BASE
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        torch.manual_seed(SEED)
        model = seeded(net.make, seed=SEED)
        g = torch.Generator().manual_seed(SEED)
        example = (torch.randn(*net.shape, generator=g),)
        spec = ethosu_spec(base[0], "artifacts", system_config=base[1], memory_mode=base[2])
        prog = arm_lower(model, example, spec, backend="ethosu", extract_delegate_segments=True)
        with open("program.pte", "wb") as f:
            prog.write_to_file(f)
        flags = spec.compiler_flags
    finally:
        os.chdir(cwd)
    art = folder / "artifacts"
    for junk in ("out.tosa", "output"):
        p = art / junk
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return {"flags": list(flags) if not isinstance(flags, str) else shlex.split(flags)}


def pte_partitions(pte: Path) -> list[dict]:
    """Each Ethos-U delegate of the program: its index, command stream and compile flags."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from pte_adapter.delegates.ethosu.binstream import parse_bin_stream

    program = deserialize_pte_binary(pte.read_bytes()).program
    out = []
    for plan in program.execution_plan:
        for i, d in enumerate(plan.delegates):
            if d.id != "EthosUBackend":
                continue
            data = bytes(program.backend_delegate_data[d.processed.index].data)
            cmd = parse_bin_stream(memoryview(data)).data("cmd_data")
            specs = {c.key: bytes(c.value).decode(errors="replace") for c in d.compile_specs}
            out.append(
                {
                    "method": plan.name,
                    "delegate": i,
                    "cmd_data": bytes(cmd) if cmd is not None else b"",
                    "flags": specs.get("compile_flags", ""),
                }
            )
    return out


# --------------------------------------------------------------------------------------
# Vela
# --------------------------------------------------------------------------------------


def vela_exe() -> list[str]:
    exe = Path(sys.executable).with_name("vela")
    return [str(exe)] if exe.exists() else [shutil.which("vela") or "vela"]


def run_vela(tosa: Path, config: tuple[str, str, str], out: Path) -> str:
    """Compile `tosa` for `config` into `out`; '' or the error."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    accel, system, mode = config
    cmd = [
        *vela_exe(),
        f"--accelerator-config={accel}",
        "--config=Arm/vela.ini",
        f"--system-config={system}",
        f"--memory-mode={mode}",
        "--output-format=raw",
        f"--output-dir={out}",
        "--verbose-performance",
        "--enable-debug-db",
        str(tosa),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    (out / "vela_stdout.txt").write_text(proc.stdout[-20000:])
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"Vela failed (exit {proc.returncode}): {tail[0]}"
    return ""


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def build(names: list[str], vela_only: bool) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("exports", {})
    manifest.setdefault("cases", {})
    failures = 0
    for index, net in enumerate(NETWORKS.values()):
        if names and net.name not in names:
            continue
        cases = cases_for(index, net)
        for family in net.families:
            folder = OUT / "exports" / f"{net.name}_{family}"
            if not _exported(net, family, folder, vela_only, manifest):
                failures += 1
                continue
            parts = pte_partitions(folder / "program.pte")
            tosas = sorted(p for p in (folder / "artifacts").glob("*.tosa"))
            for fam, config in cases:
                if fam != family:
                    continue
                cid = case_id(net.name, config)
                case, failed = _vela_case(net, family, config, cid, tosas, parts)
                failures += failed
                manifest["cases"][cid] = case
                print(f"  {cid}: {len(case['partitions'])} partition(s)", flush=True)
            manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    _delegates_by_tag(manifest)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"{len(manifest['cases'])} cases in {manifest_path}; {failures} failure(s)")
    return 1 if failures else 0


def _exported(net: Network, family: str, folder: Path, vela_only: bool, manifest: dict) -> bool:
    """Export the network for the family unless `vela_only` and it is there; False on failure."""
    key = folder.name
    if vela_only and (folder / "program.pte").exists():
        return True
    print(f"export {key} ...", flush=True)
    t0 = time.time()
    try:
        info = export(net, family, folder)
    except Exception:
        traceback.print_exc()
        manifest["exports"][key] = {"error": traceback.format_exc()[-2000:]}
        return False
    info["seconds"] = round(time.time() - t0, 1)
    manifest["exports"][key] = info
    return True


def _vela_case(
    net: Network, family: str, config: tuple, cid: str, tosas: list[Path], parts: list[dict]
) -> tuple[dict, int]:
    """Vela on every partition's .tosa for one configuration; the case and its failure count."""
    import numpy as np

    case: dict = {
        "network": net.name,
        "what": net.what,
        "family": family,
        "accelerator": config[0],
        "system_config": config[1],
        "memory_mode": config[2],
        "held_out": net.held_out,
        "base": config == (U55_BASE if family == "u55" else U85_BASE),
        "partitions": [],
    }
    failures = 0
    for tosa in tosas:
        tag = tosa.name.split("_TOSA")[0]
        out = OUT / "vela" / cid / tag
        err = run_vela(tosa, config, out)
        entry: dict = {"tag": tag, "dir": str(out.relative_to(OUT))}
        if err:
            entry["error"] = err
            failures += 1
        else:
            with np.load(next(out.glob("*_vela.npz")), allow_pickle=True) as d:
                cmd = d["cmd_data"].tobytes()
            for p in parts:
                if p["cmd_data"] == cmd:
                    entry["delegate"] = p["delegate"]
                    entry["method"] = p["method"]
                    entry["identical_to_pte"] = True
        case["partitions"].append(entry)
    return case, failures


def _delegates_by_tag(manifest: dict) -> None:
    """Delegate indices for the other configurations: the same tag as in the base compile (where
    the base compile's command stream matched a delegate of the program)."""
    by_tag: dict[tuple[str, str, str], int] = {}
    for case in manifest["cases"].values():
        if case["base"]:
            for p in case["partitions"]:
                if "delegate" in p:
                    by_tag[(case["network"], case["family"], p["tag"])] = p["delegate"]
    for case in manifest["cases"].values():
        for p in case["partitions"]:
            p.setdefault("delegate", by_tag.get((case["network"], case["family"], p["tag"])))


def _flag(flags: str, name: str) -> str:
    for word in shlex.split(flags):
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return ""


def build_example_cases() -> int:
    """The shipped Ethos-U examples (examples/*.pte with their *_artifacts sidecars) as cases of
    their own configuration: each sidecar compiled by Vela with the delegate's own flags."""
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("exports", {})
    manifest.setdefault("cases", {})
    failures = 0
    for pte in sorted(EXAMPLES.glob("*.pte")):
        art = EXAMPLES / f"{pte.stem}_artifacts"
        if b"vela_bin_stream" not in pte.read_bytes() or not art.is_dir():
            continue
        parts = pte_partitions(pte)
        if not parts:
            continue
        flags = parts[0]["flags"]
        config = (
            _flag(flags, "--accelerator-config"),
            _flag(flags, "--system-config"),
            _flag(flags, "--memory-mode"),
        )
        cid = case_id(f"example:{pte.stem}", config)
        case = {
            "network": f"example:{pte.stem}",
            "what": f"the shipped example {pte.name}",
            "family": "u85" if "u85" in config[0] else "u55",
            "accelerator": config[0],
            "system_config": config[1],
            "memory_mode": config[2],
            "held_out": False,
            "base": True,
            "partitions": [],
        }
        for tosa in sorted(art.glob("*.tosa")):
            if tosa.name == "out.tosa":
                continue
            tag = tosa.name.split("_TOSA")[0]
            out = OUT / "vela" / cid / tag
            err = run_vela(tosa, config, out)
            entry: dict = {"tag": tag, "dir": str(out.relative_to(OUT))}
            if err:
                entry["error"] = err
                failures += 1
            else:
                import numpy as np

                with np.load(next(out.glob("*_vela.npz")), allow_pickle=True) as d:
                    cmd = d["cmd_data"].tobytes()
                for p in parts:
                    if p["cmd_data"] == cmd:
                        entry.update(delegate=p["delegate"], method=p["method"])
                        entry["identical_to_pte"] = True
            case["partitions"].append(entry)
        manifest["cases"][cid] = case
        print(f"  {cid}: {len(case['partitions'])} partition(s)", flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NETWORK", default=[])
    ap.add_argument("--list", action="store_true", help="list networks and cases")
    ap.add_argument("--vela-only", action="store_true", help="reuse existing exports")
    ap.add_argument(
        "--examples-only",
        action="store_true",
        help="only the shipped Ethos-U examples (their sidecars, their own flags)",
    )
    args = ap.parse_args(argv)
    if args.list:
        n = 0
        for index, net in enumerate(NETWORKS.values()):
            print(f"{net.name:<18} {net.what}{'  [held out]' if net.held_out else ''}")
            for _family, config in cases_for(index, net):
                print(f"    {case_id(net.name, config)}")
                n += 1
        print(f"{len(NETWORKS)} networks, {n} cases")
        return 0
    if args.examples_only:
        return build_example_cases()
    status = build(args.only, args.vela_only)
    if not args.only:
        status |= build_example_cases()
    return status


if __name__ == "__main__":
    sys.exit(main())
