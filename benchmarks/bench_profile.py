"""Where the conversion time goes, per phase, and ours against Arm's adapter as whole processes.

    python -m benchmarks.bench_profile                       # the L-layer programs in bench_out/large
    python -m benchmarks.bench_profile --pte a.pte b.pte     # any files
    python -m benchmarks.bench_profile --no-peer --repeat 3  # phases only
    python -m benchmarks.bench_profile --cprofile 25 --pte a.pte   # + the top 25 functions
    python -m benchmarks.bench_profile --browser 5           # + bench_browser.py on each file

The L-layer programs (`gpt{48,192}_d64_{portable,xnnpack}.pte`: the benchmarks' GPT shape with 48
or 192 blocks at hidden 64) are built by
`python -m examples.build_examples --large --out bench_out/large --only gpt48_d64_portable ...`;
the 650 MB GPT by `benchmarks/bench_large.py` (into /tmp/pte_bench); pass it with `--pte`.

Two tables, all CPU time (user + system; the machine is shared, so wall time says little):

1. Phases, in a fresh process per file, the conversion run `--repeat` times after one warm-up, the
   median per phase: reading the container, decoding the delegates, the side files, each step of
   `analysis/program_analysis.py: analyse_method`, the render plan (`render/plan/`), the Model
   Explorer builder (`render/model_explorer.py`) and Model Explorer's own serialisation, as its
   server does it (`dataclasses.asdict` of every graph, then `json.dumps`). The phases are timed
   by wrapping the functions where their callers look them up, so the real path runs.
2. Whole processes, ours and the peer (`pte-adapter-model-explorer` 0.2.0 in `bench_out/peer_venv`,
   made as `benchmarks/bench_browser.py` does) alternately, `--runs` times each, both with that
   venv's interpreter and Model Explorer (ours from `src/`; Model Explorer imports torch whenever it
   is installed, and the peer's venv has none, so neither pays for it): import
   `model_explorer` and the adapter, `Adapter.convert`, then the server's `convert_adapter_response`
   and `json.dumps`. The CPU time (user + system) of the process up to the end of that
   serialisation (`time.process_time()` in the child: what a request costs a running server), the
   whole process's CPU time with the interpreter's exit (`os.wait4`) beside it, and the peak RSS;
   the figure is the median of the pairwise ratios ours/peer. Then the whole process's phases, each
   a median, ours / peer: the interpreter's start with Model Explorer's import, the adapter's
   `main`, `convert`, the server's `asdict`, its `json.dumps`, and the exit. Per node (each adapter's own nodes:
   they draw different numbers for the same program): `convert` alone and the adapter's import +
   `convert` (its whole share: most of our modules are imported with `main`, a few inside
   `convert`), and the JSON bytes.

The phase table's heading gives the key/values per node (the attributes and port metadata Model
Explorer serialises) and the JSON bytes per node.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / "bench_out" / "large"
DEFAULT_NAMES = [
    "gpt48_d64_portable",
    "gpt48_d64_xnnpack",
    "gpt192_d64_portable",
    "gpt192_d64_xnnpack",
]
PEER = "pte-adapter-model-explorer==0.2.0"
PEER_MODULE = "pte_adapter_model_explorer"

# (phase, module, function): each function is wrapped in the module its caller reads it from.
PHASES_CHILD = r"""
import dataclasses, importlib, json, statistics, sys, time

PHASES = [
    ("read: map + container", "pte_adapter.api", "map_file"),
    ("read: map + container", "pte_adapter.api", "read_container"),
    ("delegates: decode", "pte_adapter.api", "decode_all"),
    ("side files", "pte_adapter.api", "attach_side_files"),
    ("side files", "pte_adapter.api", "attach_partition_reports"),
    ("side files", "pte_adapter.api", "choose_etrecord"),
    ("side files", "pte_adapter.api", "choose_etdump"),
    ("analysis: source match", "pte_adapter.analysis.program_analysis", "match_source"),
    ("analysis: partitions", "pte_adapter.analysis.program_analysis", "partition_method"),
    ("analysis: reasons", "pte_adapter.analysis.program_analysis", "why_not_delegated"),
    ("analysis: partition sources", "pte_adapter.analysis.program_analysis", "partition_sources"),
    ("analysis: estimate", "pte_adapter.analysis.program_analysis", "method_estimate"),
    ("analysis: constants", "pte_adapter.analysis.program_analysis", "method_constants"),
    ("analysis: memory", "pte_adapter.analysis.program_analysis", "method_memory"),
    ("analysis: summary", "pte_adapter.analysis.program_analysis", "method_summary"),
    ("analysis: roles", "pte_adapter.analysis.program_analysis", "partition_roles"),
    ("analysis: roles", "pte_adapter.analysis.program_analysis", "instruction_role_ids"),
    ("analysis: blocks", "pte_adapter.analysis.program_analysis", "fold_partitions"),
    ("analysis: bundle", "pte_adapter.analysis.bundle", "analyse_bundle"),
    ("analysis: what-if", "pte_adapter.analysis.program_analysis", "method_what_if"),
    ("profile: ETDump placed", "pte_adapter.analysis.profile.join", "join_profile"),
    ("profile: measured", "pte_adapter.analysis.profile.measure", "measure_program"),
    ("render: plan", "pte_adapter.explorer.convert", "program_plan"),
    ("render: Model Explorer builder", "pte_adapter.explorer.convert", "build_graphs"),
]
# Phases every program passes through: one that never ran is wrapped where no caller looks.
ALWAYS = ["read: map + container", "analysis: partitions", "render: plan",
          "render: Model Explorer builder"]
spent = {}

# Imported by `analyse` where they are used, so wrapped where they are defined; a tree from
# before (`--src`) imported them at the top of program_analysis, and there they are wrapped.
WHEN_USED = ("analyse_bundle", "join_profile", "measure_program")

def wrap(phase, module, name):
    mod = importlib.import_module(module)
    older = importlib.import_module("pte_adapter.analysis.program_analysis")
    if name in WHEN_USED and hasattr(older, name):
        mod = older
    fn = getattr(mod, name)
    def timed(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[phase] = spent.get(phase, 0.0) + time.process_time() - t
    setattr(mod, name, timed)

import model_explorer  # noqa: F401
from pte_adapter.explorer.convert import convert_path
try:
    from pte_adapter.explorer.served import served
except ImportError:  # an older tree (`--src`): the graphs were handed over as they are
    served = list
for phase in PHASES:
    wrap(*phase)

_NAMES = {}

def plain(obj):
    # The same value as dataclasses.asdict, by a walker that knows the field names of each class
    # and that strings, numbers and None need no copy: what a cheaper serialisation could cost.
    names = _NAMES.get(type(obj))
    if names is None and dataclasses.is_dataclass(obj):
        names = _NAMES[type(obj)] = [f.name for f in dataclasses.fields(obj)]
    if names is not None:
        return {n: plain(getattr(obj, n)) for n in names}
    if type(obj) is list:
        return [plain(v) for v in obj]
    if type(obj) is dict:
        return {k: plain(v) for k, v in obj.items()}
    return obj

def shared(obj, memo):
    # The same again, each object's dicts made once however often it is handed over (the builder
    # shares key/values, styles and empty lists; json.dumps does not mind shared dicts): what
    # the server's serialisation of the same JSON could cost at least.
    got = memo.get(id(obj))
    if got is not None:
        return got
    names = _NAMES.get(type(obj))
    if names is None and dataclasses.is_dataclass(obj):
        names = _NAMES[type(obj)] = [f.name for f in dataclasses.fields(obj)]
    if names is not None:
        got = {n: shared(getattr(obj, n), memo) for n in names}
    elif type(obj) is list:
        got = [shared(v, memo) for v in obj]
    elif type(obj) is dict:
        got = {k: shared(v, memo) for k, v in obj.items()}
    else:
        return obj
    memo[id(obj)] = got
    return got

def visits(obj, seen):
    # What `asdict` visits (dataclasses, lists and dicts, leaves), and how many distinct objects.
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj):
        n = 1
        for name in _NAMES.get(type(obj)) or [f.name for f in dataclasses.fields(obj)]:
            n += visits(getattr(obj, name), seen)
        return n
    if type(obj) is list:
        return 1 + sum(visits(v, seen) for v in obj)
    if type(obj) is dict:
        return 1 + sum(visits(k, seen) + visits(v, seen) for k, v in obj.items())
    return 1

def once(path):
    spent.clear()
    t = time.process_time()
    graphs = convert_path(path)
    t_conv = time.process_time()
    data = {"graphs": [dataclasses.asdict(g) for g in served(graphs)]}  # as the adapter hands them
    t_asdict = time.process_time()
    body = json.dumps(data)
    t_end = time.process_time()
    t_plain = time.process_time()
    cheap = [plain(g) for g in graphs]
    t_plain = time.process_time() - t_plain
    assert cheap == data["graphs"]
    t_shared = time.process_time()
    memo = {}
    made_once = [shared(g, memo) for g in graphs]
    t_shared = time.process_time() - t_shared
    assert json.dumps({"graphs": made_once}) == body
    del memo, made_once
    row = dict(spent)
    row["Model Explorer: asdict"] = t_asdict - t_conv
    row["Model Explorer: json.dumps"] = t_end - t_asdict
    row["other (glue, analyse's own loops)"] = (t_conv - t) - sum(spent.values())
    row["total"] = t_end - t
    row["(not in total) the same dicts, walked cheaply"] = t_plain
    row["(not in total) ... each shared object once"] = t_shared
    nodes = sum(len(g.nodes) for g in graphs)
    return row, nodes, len(body), key_values(graphs)

def key_values(graphs):
    # What Model Explorer serialises per node: attributes and the port metadata's key/values.
    n = 0
    for g in graphs:
        for node in g.nodes:
            n += len(node.attrs)
            for meta in node.inputsMetadata + node.outputsMetadata:
                n += len(meta.attrs)
    return n

path, repeat = sys.argv[1], int(sys.argv[2])
once(path)  # warm-up: lazy imports, compiled patterns
unseen = [p for p in ALWAYS if p not in spent]
if unseen:
    raise SystemExit(f"phases never timed (wrapped where no caller looks them up): {unseen}")
rows = []
for _ in range(repeat):
    row, nodes, size, kvs = once(path)
    rows.append(row)
order = [p for p, _, _ in PHASES]
order = list(dict.fromkeys(order + list(rows[0])))
med = {k: statistics.median(r.get(k, 0.0) for r in rows) for k in order}
graphs = convert_path(path)
seen = set()
n_visits = sum(visits(g, seen) for g in graphs)
print(json.dumps({"phases": med, "nodes": nodes, "json_bytes": size, "key_values": kvs,
                  "asdict_visits": n_visits, "distinct_objects": len(seen)}))
"""

# One whole conversion as Model Explorer's server runs it: argv = module, path.
WHOLE_CHILD = r"""
import importlib, inspect, json, sys, time
import model_explorer
from model_explorer.utils import convert_adapter_response

def adapter_class(module_name):
    # As Model Explorer's extension manager: it imports `<extension>.main`.
    mod = importlib.import_module(f"{module_name}.main")
    for _, obj in inspect.getmembers(mod, inspect.isclass):
        if issubclass(obj, model_explorer.Adapter) and obj is not model_explorer.Adapter:
            return obj
    raise SystemExit(f"no Adapter in {module_name}.main")

started = time.process_time()  # Model Explorer's import is what came before
adapter = adapter_class(sys.argv[1])()
imported = time.process_time()
resp = adapter.convert(sys.argv[2], {})
converted = time.process_time()  # the adapter's own share ends here: import + convert
plain = convert_adapter_response(resp)  # the server's dataclasses.asdict of each graph
as_dicts = time.process_time()
body = json.dumps(plain)
graphs = resp.get("graphs") or [g for c in resp["graphCollections"] for g in c.graphs]
cpu = time.process_time()  # import + convert + serialise: what a request costs a server
nodes = sum(len(g.nodes) for g in graphs)
print(json.dumps({"nodes": nodes, "json_bytes": len(body), "cpu": cpu,
                  "convert": converted - imported, "adapter": converted - started,
                  "import_model_explorer": started, "import_adapter": imported - started,
                  "asdict": as_dicts - converted, "json_dumps": cpu - as_dicts}))
"""


def ensure_peer_python(out: Path) -> Path:
    venv = out / "peer_venv"
    python = venv / "bin" / "python"
    if not (venv / "bin" / "model-explorer").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PEER], check=True)
    return python


def child(argv: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, Any], float, int]:
    """Run a child; its JSON line, its CPU seconds (user + system) and its peak RSS in kB."""
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({p.returncode}): {text[-500:]}")
    return json.loads(text.strip().splitlines()[-1]), ru.ru_utime + ru.ru_stime, ru.ru_maxrss


SRC = ROOT / "src"  # `--src`: another checkout's, for a before/after


def our_env(with_src: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if with_src:
        env["PYTHONPATH"] = str(SRC)
    return env


def phases(pte: Path, repeat: int) -> None:
    r, _, _ = child([sys.executable, "-c", PHASES_CHILD, str(pte), str(repeat)], our_env())
    total = r["phases"]["total"]
    print(
        f"\n{pte.name}: {int(r['nodes'])} nodes, {r['key_values'] / r['nodes']:.2f} key/values "
        f"and {r['json_bytes'] / r['nodes']:.0f} JSON bytes per node, "
        f"JSON {r['json_bytes'] / 1024:.0f} KiB, {r['asdict_visits'] / r['nodes']:.1f} objects "
        f"per node for `asdict` to visit ({r['distinct_objects'] / r['nodes']:.1f} distinct) "
        f"(CPU ms, median of {repeat} after a warm-up)"
    )
    for name, s in r["phases"].items():
        if name != "total" and not name.startswith("("):
            print(f"  {name:36s} {s * 1000:8.1f}  {100 * s / total:5.1f} %")
    print(f"  {'total':36s} {total * 1000:8.1f}  ({total * 1e6 / r['nodes']:.0f} us per node)")
    for name, s in r["phases"].items():
        if name.startswith("("):
            print(f"  {name:36s} {s * 1000:8.1f}")


def whole(pte: Path, runs: int, peer_python: Path) -> None:
    # Both in the peer's venv: the same interpreter and Model Explorer, and no torch (Model
    # Explorer imports torch when it is installed, which would cost either side seconds).
    ours_cmd = [str(peer_python), "-c", WHOLE_CHILD, "pte_adapter", str(pte)]
    peer_cmd = [str(peer_python), "-c", WHOLE_CHILD, PEER_MODULE, str(pte)]
    ours, peer = [], []
    for _ in range(runs):  # alternately, so a change of load hits both
        ours.append(child(ours_cmd, our_env()))
        peer.append(child(peer_cmd, our_env(with_src=False)))
    pairs = list(zip(ours, peer, strict=True))
    ratio = statistics.median(o[0]["cpu"] / p[0]["cpu"] for o, p in pairs)
    exit_ratio = statistics.median(o[1] / p[1] for o, p in pairs)
    n_ours, n_peer = ours[0][0]["nodes"], peer[0][0]["nodes"]

    def per_node(key: str) -> str:
        # Per node: the two adapters draw different numbers of nodes for the same program.
        us_ours = statistics.median(o[0][key] for o in ours) * 1e6 / n_ours
        us_peer = statistics.median(p[0][key] for p in peer) * 1e6 / n_peer
        r = statistics.median((o[0][key] / n_ours) / (p[0][key] / n_peer) for o, p in pairs)
        return f"{us_ours:4.0f} / {us_peer:4.0f} us {r:.2f}x"

    print(
        f"{pte.name:28s} nodes {int(n_ours):6d} / {int(n_peer):6d}  "
        f"CPU {statistics.median(o[0]['cpu'] for o in ours):6.2f} / "
        f"{statistics.median(p[0]['cpu'] for p in peer):6.2f} s  "
        f"ours/peer {ratio:.2f}x  "
        f"with exit {statistics.median(o[1] for o in ours):5.2f} / "
        f"{statistics.median(p[1] for p in peer):5.2f} s {exit_ratio:.2f}x  "
        f"per node: convert {per_node('convert')}, import + convert {per_node('adapter')}  "
        f"JSON per node {ours[0][0]['json_bytes'] / n_ours:5.0f} / "
        f"{peer[0][0]['json_bytes'] / n_peer:5.0f} B  "
        f"peak RSS {max(o[2] for o in ours) / 1024:4.0f} / {max(p[2] for p in peer) / 1024:4.0f} MiB"
    )
    print_whole_phases(ours, peer)


# The whole process's phases, in the order they happen (CPU seconds in the child; the exit is the
# process's CPU by `os.wait4` less the child's CPU at the end of the serialisation).
WHOLE_PHASES = [
    ("start + import model_explorer", "import_model_explorer"),
    ("import the adapter's main", "import_adapter"),
    ("convert", "convert"),
    ("Model Explorer: asdict", "asdict"),
    ("Model Explorer: json.dumps", "json_dumps"),
]


def print_whole_phases(ours: list[Any], peer: list[Any]) -> None:
    def med(runs: list[Any], key: str) -> float:
        if key == "exit":
            return statistics.median(r[1] - r[0]["cpu"] for r in runs)
        if key == "whole":
            return statistics.median(r[1] for r in runs)
        return statistics.median(r[0][key] for r in runs)

    for label, key in [*WHOLE_PHASES, ("the interpreter's exit", "exit"), ("whole", "whole")]:
        o, p = med(ours, key), med(peer, key)
        ratio = f"{o / p:5.2f}x" if p > 0 else "     "
        print(f"    {label:32s} {o * 1000:7.0f} / {p * 1000:7.0f} ms  {ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pte", type=Path, nargs="+", help="these files instead of the L-layer ones")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the L-layer ones are")
    ap.add_argument("--repeat", type=int, default=5, help="in-process runs per phase table")
    ap.add_argument("--runs", type=int, default=5, help="whole-process runs per adapter")
    ap.add_argument("--no-peer", action="store_true", help="phases only")
    ap.add_argument("--no-phases", action="store_true", help="whole processes only")
    ap.add_argument(
        "--cprofile",
        type=int,
        default=0,
        metavar="N",
        help="also print the top N functions by own time (one conversion each)",
    )
    ap.add_argument(
        "--browser",
        type=int,
        default=0,
        metavar="N",
        help="also run benchmarks/bench_browser.py on each file, N runs per adapter "
        "(first screen and expand; minutes per file on the 192-layer programs)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench_out")
    ap.add_argument(
        "--src",
        type=Path,
        default=ROOT / "src",
        help="measure the pte_adapter of this source tree (e.g. an older checkout's)",
    )
    args = ap.parse_args()
    global SRC
    SRC = args.src.resolve()
    files = args.pte or [args.dir / f"{n}.pte" for n in DEFAULT_NAMES]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)} (see this script's docstring)")
    if not args.no_phases:
        for f in files:
            phases(f, args.repeat)
            if args.cprofile:
                cprofile(f, args.cprofile)
    if not args.no_peer:
        peer_python = ensure_peer_python(args.out)
        # Our modules as pip would install them, compiled: the peer's are (site-packages).
        subprocess.run(
            [str(peer_python), "-m", "compileall", "-q", str(SRC)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"\nwhole process, ours / peer ({PEER}), median of {args.runs} alternating runs")
        print("(each adapter's modules imported with its `main`, the rest inside `convert`):")
        for f in files:
            whole(f, args.runs, peer_python)
    if args.browser:
        for f in files:  # the same script as on its own, so both print the same table
            cmd = [sys.executable, "-m", "benchmarks.bench_browser", "--pte", str(f)]
            cmd += ["--repeat", str(args.browser), "--out", str(args.out)]
            subprocess.run(cmd, check=True, cwd=ROOT, env=our_env())


CPROFILE_CHILD = r"""
import cProfile, dataclasses, json, pstats, sys
import model_explorer  # noqa: F401
from pte_adapter.explorer.convert import convert_path
convert_path(sys.argv[1])
prof = cProfile.Profile()
prof.enable()
body = json.dumps({"graphs": [dataclasses.asdict(g) for g in convert_path(sys.argv[1])]})
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(int(sys.argv[2]))
"""


def cprofile(pte: Path, top: int) -> None:
    r = subprocess.run(
        [sys.executable, "-c", CPROFILE_CHILD, str(pte), str(top)],
        env=our_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    print(r.stdout)


if __name__ == "__main__":
    main()
