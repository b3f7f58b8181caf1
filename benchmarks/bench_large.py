"""A transformer-sized XNNPACK program: load, delegate decode and conversion time, and peak memory.

    python -m benchmarks.bench_large                       # builds /tmp/pte_bench/gpt_xnnpack_fp32.pte once
    python -m benchmarks.bench_large --pte some.pte        # measure any file
    python -m benchmarks.bench_large --compare examples/mv2_xnnpack_fp32.pte

The program is a 12-layer, hidden-768, vocab-50257 GPT-like decoder, fp32, lowered to XNNPACK with
delegate segments (~650 MB, generated, never committed). It is built by
`examples/build_examples.py --large` when that exists, else by the small generator below.

Each measurement runs in a fresh process, so earlier work cannot inflate a later peak:
- baseline: `import model_explorer` alone (what Model Explorer costs anyway);
- measure: the same import plus `pte_adapter`, then the peak RSS counter is reset (Linux
  `/proc/self/clear_refs`) and the file is loaded without delegates, the delegates decoded, and the
  Model Explorer graphs built and serialised. `ru_maxrss` (never reset, includes the imports) is
  reported too.
The weights are memory-mapped and never read, so the peak over the baseline should not follow the
file size; `--compare` prints the same figures for a small file to show it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path("/tmp/pte_bench")
NAME = "gpt_xnnpack_fp32"

CHILD = r"""
import json, resource, sys, time

def proc_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

t0 = time.perf_counter()
import model_explorer  # noqa: F401  (the baseline every Model Explorer session pays)
t_me = time.perf_counter() - t0
out = {"import_model_explorer_s": t_me}
if sys.argv[1] == "measure":
    import pte_adapter
    from pte_adapter.api import decode_all
    try:
        from pte_adapter.render.model_explorer import graphs_to_json, program_graphs
    except ImportError:  # renderer not there: measure load + decode only
        program_graphs = graphs_to_json = None
    import gc; gc.collect()
    out["base_kb"] = proc_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM: the peak from here on is ours
    t1 = time.perf_counter()
    program = pte_adapter.load(sys.argv[2], decode_delegates=False)
    t2 = time.perf_counter()
    decode_all(program)
    t3 = time.perf_counter()
    if program_graphs is not None:
        text = json.dumps(graphs_to_json(program_graphs(pte_adapter.analyse(program))))
        out["json_bytes"] = len(text)
    t4 = time.perf_counter()
    delegates = [d for m in program.methods for d in m.delegates]
    out.update(
        load_s=t2 - t1, decode_s=t3 - t2, render_s=t4 - t3, total_s=t4 - t1,
        peak_kb=proc_kb("VmHWM"),
        methods=len(program.methods),
        instructions=sum(len(m.instructions) for m in program.methods),
        delegates=len(delegates),
        delegate_ids=sorted({d.id for d in delegates}),
        inner_ops=sum(d.decoded.inner_op_count or 0 for d in delegates),
        decode_problems=sum(len(d.decoded.problems) + len(d.problems) for d in delegates),
        constant_bytes=sum(int(d.decoded.stats.get("constant_bytes", 0)) for d in delegates),
    )
out["ru_maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out["rss_kb"] = proc_kb("VmRSS")
print(json.dumps(out))
"""


def build(out_dir: Path) -> Path:
    """The large program: via the examples script if it has `--large`, else generated here."""
    pte = out_dir / f"{NAME}.pte"
    if pte.exists():
        return pte
    out_dir.mkdir(parents=True, exist_ok=True)
    script = ROOT / "examples" / "build_examples.py"
    t = time.perf_counter()
    if script.exists() and "--large" in script.read_text():
        cmd = [sys.executable, "-m", "examples.build_examples", "--large", "--only", NAME]
        subprocess.run([*cmd, "--out", str(out_dir.resolve())], check=True, cwd=ROOT)
    else:
        _generate(pte)
    print(f"built {pte} in {time.perf_counter() - t:.0f} s", flush=True)
    return pte


def _generate(path: Path, layers: int = 12, hidden: int = 768, vocab: int = 50257) -> None:
    """Fallback generator: a GPT-like decoder with random weights, XNNPACK-lowered."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = torch.nn.LayerNorm(hidden)
            self.attn = torch.nn.MultiheadAttention(hidden, 12, batch_first=True)
            self.ln2 = torch.nn.LayerNorm(hidden)
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(hidden, 4 * hidden),
                torch.nn.GELU(),
                torch.nn.Linear(4 * hidden, hidden),
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class Gpt(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, hidden)
            self.pos = torch.nn.Embedding(128, hidden)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(layers))
            self.head = torch.nn.Linear(hidden, vocab, bias=False)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(Gpt().eval(), (torch.randint(0, vocab, (1, 128)),))
        prog = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch(
            ExecutorchBackendConfig(extract_delegate_segments=True)
        )
    with open(path, "wb") as f:
        prog.write_to_file(f)


def run(mode: str, pte: Path | None = None) -> dict[str, object]:
    cmd = [sys.executable, "-c", CHILD, mode] + ([str(pte)] if pte is not None else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _mib(kb: object) -> str:
    return f"{float(str(kb)) / 1024:.1f} MiB"


def report(pte: Path, repeat: int, base: dict[str, object]) -> dict[str, object]:
    runs = [run("measure", pte) for _ in range(repeat)]
    best = min(runs, key=lambda r: float(str(r["total_s"])))
    peak = max(float(str(r["peak_kb"])) for r in runs)
    ms = {k: float(str(best[k])) * 1000 for k in ("load_s", "decode_s", "render_s", "total_s")}
    print(f"\n{pte.name}: {pte.stat().st_size / 2**20:.1f} MiB")
    print(
        f"  {best['methods']} method(s), {best['instructions']} instructions, "
        f"{best['delegates']} delegates {best['delegate_ids']}, {best['inner_ops']} delegate ops, "
        f"{float(str(best['constant_bytes'])) / 2**20:.1f} MiB delegate constants, "
        f"{best['decode_problems']} problems"
    )
    print(
        f"  load (no delegates) {ms['load_s']:.1f} ms | delegate decode {ms['decode_s']:.1f} ms | "
        f"graphs + JSON {ms['render_s']:.1f} ms | total {ms['total_s']:.1f} ms (best of {repeat})"
    )
    print(
        f"  peak RSS after imports {_mib(peak)} (+{_mib(peak - float(str(best['base_kb'])))} over "
        f"the same process before loading); ru_maxrss incl. imports {_mib(best['ru_maxrss_kb'])}"
    )
    print(f"  baseline `import model_explorer` alone: ru_maxrss {_mib(base['ru_maxrss_kb'])}")
    html_s, html_bytes = html_report(pte)
    print(f"  HTML report (`pte-adapter report`): {html_bytes / 1024:.0f} KiB in {html_s:.1f} s")
    return best


def html_report(pte: Path) -> tuple[float, int]:
    """Seconds and bytes of `pte-adapter report` on the program (it must stay a file one can
    attach: well under 5 MB)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        t = time.perf_counter()
        code = "import sys; from pte_adapter.cli import main; sys.exit(main(sys.argv[1:]))"
        cmd = [sys.executable, "-c", code, "report", str(pte), "-o", str(out)]
        subprocess.run(cmd, capture_output=True, check=True, cwd=ROOT)
        return time.perf_counter() - t, out.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pte", type=Path, help="measure this file instead of the generated one")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="where the large program is built"
    )
    ap.add_argument("--compare", type=Path, action="append", default=[], help="also measure these")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    pte = args.pte if args.pte is not None else build(args.out)
    base = min(
        (run("baseline") for _ in range(args.repeat)), key=lambda r: float(str(r["ru_maxrss_kb"]))
    )
    for p in [pte, *args.compare]:
        report(p, args.repeat, base)


if __name__ == "__main__":
    main()
