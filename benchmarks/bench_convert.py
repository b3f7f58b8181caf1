"""Convert time and peak memory for a large program: cost must follow instructions, not weights.

    python -m benchmarks.bench_convert                   # builds bench_out/large_portable.pte once
    python -m benchmarks.bench_convert --pte some.pte    # measure any file

Prints, for a fresh process each: RSS after `import model_explorer` + `pte_adapter` (the baseline),
then the peak RSS during a full conversion (load + decode + Model Explorer graphs + JSON, the peak
counter reset after the imports so their spike does not hide ours), with times.
The large program (600 MB of fp32 Linear weights, undelegated, generated here, never committed)
needs the export extra (torch, executorch).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = r"""
import json, sys, time

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0

def reset_peak():
    # Linux: writing 5 to clear_refs resets VmHWM (peak RSS), so import spikes do not hide ours.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

t0 = time.perf_counter()
import model_explorer  # noqa: F401
import pte_adapter
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.model_explorer import graphs_to_json
t_import = time.perf_counter() - t0
import gc; gc.collect()
base = status("VmRSS")
reset_peak()
if sys.argv[1] == "convert":
    t1 = time.perf_counter()
    program = pte_adapter.load(sys.argv[2])
    t_load = time.perf_counter() - t1
    graphs = convert_path(sys.argv[2])
    text = json.dumps(graphs_to_json(graphs))
    t_total = time.perf_counter() - t1
    peak = status("VmHWM")
    n_ins = sum(len(m.instructions) for m in program.methods)
    print(json.dumps({"import_s": t_import, "load_s": t_load, "convert_s": t_total,
                      "peak_kb": peak, "base_kb": base, "instructions": n_ins,
                      "json_bytes": len(text)}))
else:
    print(json.dumps({"import_s": t_import, "peak_kb": status("VmHWM"), "base_kb": base}))
"""


def build_large(out: Path, size_mb: int) -> Path:
    import torch
    from executorch.exir import to_edge

    hidden = 4096
    layers = max(1, size_mb * 1024 * 1024 // (hidden * hidden * 4))

    class Large(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(
                torch.nn.Linear(hidden, hidden) for _ in range(layers)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(Large().eval(), (torch.randn(1, hidden),))
        program = to_edge(ep).to_executorch()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        program.write_to_file(f)
    return out


def run(mode: str, pte: Path | None = None) -> dict[str, float]:
    args = [sys.executable, "-c", MEASURE, mode] + ([str(pte)] if pte else [])
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pte", type=Path, help="measure this file instead of the generated one")
    ap.add_argument("--size-mb", type=int, default=600)
    ap.add_argument("--out", type=Path, default=ROOT / "bench_out")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    pte = args.pte
    if pte is None:
        pte = args.out / f"large_portable_{args.size_mb}mb.pte"
        if not pte.exists():
            t = time.perf_counter()
            build_large(pte, args.size_mb)
            print(f"built {pte} in {time.perf_counter() - t:.0f} s")
    size = pte.stat().st_size
    base = min((run("baseline") for _ in range(args.repeat)), key=lambda r: r["peak_kb"])
    conv = min((run("convert", pte) for _ in range(args.repeat)), key=lambda r: r["convert_s"])
    print(
        f"file                 {pte.name}: {size / 2**20:.1f} MiB, "
        f"{int(conv['instructions'])} instructions"
    )
    print(
        f"baseline RSS         {base['base_kb'] / 1024:.1f} MiB "
        f"(after import model_explorer + pte_adapter, {base['import_s']:.2f} s)"
    )
    print(
        f"convert peak RSS     {conv['peak_kb'] / 1024:.1f} MiB "
        f"(+{(conv['peak_kb'] - conv['base_kb']) / 1024:.1f} MiB over the same process "
        "after its imports; peak reset after import)"
    )
    print(f"load()               {conv['load_s'] * 1000:.1f} ms")
    print(
        f"load + graphs + JSON {conv['convert_s'] * 1000:.1f} ms "
        f"(best of {args.repeat}; JSON {conv['json_bytes'] / 1024:.0f} KiB)"
    )


if __name__ == "__main__":
    main()
