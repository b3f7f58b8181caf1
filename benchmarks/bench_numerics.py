"""The numeric gap of a run with over a thousand logged outputs: time per phase and per output.

    python -m benchmarks.bench_numerics                  # builds and records bench_out/numerics/
    python -m benchmarks.bench_numerics --layers 1000    # a deeper network
    python -m benchmarks.bench_numerics --pte f.pte      # another program (run by the pip runtime)

The program is a plain `torch.nn` stack of `--layers` (default 600) Linear + ReLU pairs at width
32, exported to the portable kernels with its ETRecord: one run logs an output per kernel, 1,200
and more. It is run once by ExecuTorch's Python runtime with a debug buffer (the export extra;
never committed). The measurement runs in a fresh process without torch, `--repeat` times (median,
CPU time: the machine is shared):

- the conversion Model Explorer makes of the program with that ETDump beside it (no numbers
  compared: the measured-time view; the debug buffer is only noted);
- `numerics` with values only (every logged output of the first run decoded, its statistics);
- `numerics --reference` with the same program and run (two sides placed and joined by layer,
  every row's metrics), and the same with the reference's values already read (the join alone);

with the logged outputs of the ETDump (all runs) and of the run compared, and the time per output.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BUILD = r"""
import sys, torch
from executorch.exir import to_edge
layers, out = int(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
net = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(32, 32), torch.nn.ReLU())])
edge = to_edge(torch.export.export(net.eval(), (torch.randn(1, 32),)), generate_etrecord=True)
prog = edge.to_executorch()
with open(out, "wb") as f:
    prog.write_to_file(f)
prog.get_etrecord().save(out[:-4] + ".etrecord")
"""

RECORD = r"""
import sys, torch
import executorch.kernels.quantized
from executorch.extension.pybindings.portable_lib import _load_for_executorch
pte, etdump, buffer, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
module = _load_for_executorch(pte, enable_etdump=True, debug_buffer_size=256 << 20)
meta = module.method_meta("forward")
gen = torch.Generator().manual_seed(0)
inputs = []
for i in range(meta.num_inputs()):
    t = meta.input_tensor_meta(i)
    sizes = tuple(t.sizes())
    if int(t.dtype()) in (3, 4):
        inputs.append(torch.randint(0, 8, sizes, generator=gen))
    else:
        inputs.append(torch.rand(sizes, generator=gen))
for _ in range(runs):
    module.run_method("forward", tuple(inputs))
module.write_etdump_result_to_file(etdump, buffer)
"""

MEASURE = r"""
import json, statistics, sys, time
from pathlib import Path

pte, repeat = Path(sys.argv[1]), int(sys.argv[2])
from pte_adapter.api import NumericsOptions, open_analysis
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.numerics_json import numerics_json

def cpu(fn):
    times = []
    for _ in range(repeat + 1):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return statistics.median(times[1:]), out

convert, _ = cpu(lambda: convert_path(pte))
alone, result = cpu(lambda: numerics_json(open_analysis(pte, numerics=NumericsOptions())))
joined, ref = cpu(lambda: numerics_json(open_analysis(pte, numerics=NumericsOptions(reference=pte))))
n = open_analysis(pte, numerics=NumericsOptions()).numerics
compared = sum(len(m["numerics"]["rows"]) for m in result["methods"])
rows = sum(len(m["numerics"]["rows"]) for m in ref["methods"])
print(json.dumps({
    "convert_s": convert, "values_s": alone, "reference_s": joined,
    "logged_outputs": n.logged_outputs, "outputs_of_the_run": compared, "rows_joined": rows,
}))
"""


def record(pte: Path, out: Path, runs: int) -> Path:
    """A copy of `pte` (with its ETRecord) and its run's ETDump and debug buffer in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    copy = out / pte.name
    shutil.copyfile(pte, copy)
    etrecord = pte.with_suffix(".etrecord")
    if etrecord.exists():
        shutil.copyfile(etrecord, copy.with_suffix(".etrecord"))
    etdump, buffer = copy.with_suffix(".etdp"), out / f"{pte.stem}.debug_buffer.bin"
    if not etdump.exists() or not buffer.exists():
        cmd = [sys.executable, "-c", RECORD, str(copy), str(etdump), str(buffer), str(runs)]
        subprocess.run(cmd, check=True, capture_output=True)
    return copy


def build(layers: int, out: Path) -> Path:
    """The deep network's program and ETRecord in `out` (made once)."""
    out.mkdir(parents=True, exist_ok=True)
    pte = out / f"deep{layers}.pte"
    if not pte.exists():
        subprocess.run([sys.executable, "-c", BUILD, str(layers), str(pte)], check=True)
    return pte


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pte", type=Path, help="a program to run instead of the deep network")
    ap.add_argument("--layers", type=int, default=600)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "bench_out" / "numerics")
    args = ap.parse_args()
    pte = args.pte or build(args.layers, args.out / "built")
    copy = record(pte, args.out / f"{pte.stem}_{args.runs}", args.runs)
    env_path = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(copy), str(args.repeat)],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    fig = json.loads(done.stdout.strip().splitlines()[-1])
    per = fig["outputs_of_the_run"] or 1
    print(
        f"{copy.name}: {fig['logged_outputs']} logged outputs in the ETDump "
        f"({args.runs} runs), {fig['outputs_of_the_run']} in the run compared"
    )
    print(f"  conversion (measured time, no numbers)   {fig['convert_s'] * 1000:8.1f} ms CPU")
    print(
        f"  numerics, values only                    {fig['values_s'] * 1000:8.1f} ms CPU "
        f"({fig['values_s'] / per * 1e6:.0f} us per output)"
    )
    print(
        f"  numerics --reference itself ({fig['rows_joined']} rows)   "
        f"{fig['reference_s'] * 1000:8.1f} ms CPU "
        f"({fig['reference_s'] / per * 1e6:.0f} us per output)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
