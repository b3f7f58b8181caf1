"""Write every example's user-visible outputs into one folder, to compare two trees with `diff -r`.

A restructuring must not change what a user sees by accident (issue 37): run this on the tree
before and the tree after, then `diff -r before/ after/` lists every difference. Per program in
`examples/` (`.pte` and `.bpte`): the Model Explorer graphs as the server serialises them
(`<name>.me.json`), `summary`, `summary --json`, `size`, `size --json`, `fit --json`, `check`
and the HTML `report`; per pair in `examples/whatif_pairs.json` and a few fixed pairs, `diff`
(text and `--json`) and the two-program report; with an ETDump beside a program, `profile --json`.

    python scripts/golden_outputs.py OUT_DIR [--src SRC] [--only NAME ...]

`--src` runs another tree's `src/` (a worktree) with this script. Each command runs in a
fresh process, as a user runs it; its exit code is recorded in the output file's first line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# Pairs compared by `diff` and the two-program report besides the what-if pairs.
FIXED_PAIRS = (
    ("mv2_ethosu85_full", "mv2_lrn_ethosu85"),
    ("mv2_lrn_ethosu85", "mv2_lrn2_ethosu85"),
    ("mv2_xnnpack_fp32", "mv2_xnnpack_int8"),
)

# The Model Explorer graphs, serialised as the server does (asdict, then json).
ME_JSON = """
import dataclasses, json, sys
from pte_adapter.explorer.convert import convert_path
graphs = convert_path(sys.argv[1])
print(json.dumps([dataclasses.asdict(g) for g in graphs], indent=1, sort_keys=True))
"""


def _programs(only: list[str]) -> list[Path]:
    found = sorted([*EXAMPLES.glob("*.pte"), *EXAMPLES.glob("*.bpte")])
    return [p for p in found if not only or p.stem in only]


def _pairs(only: list[str]) -> list[tuple[Path, Path]]:
    names = list(FIXED_PAIRS)
    pairs_file = EXAMPLES / "whatif_pairs.json"
    if pairs_file.exists():
        for pair in json.loads(pairs_file.read_text()).get("pairs", []):
            names.append((Path(pair["fragmented"]["file"]).stem, Path(pair["fixed"]["file"]).stem))
    out = []
    for before, after in names:
        a, b = EXAMPLES / f"{before}.pte", EXAMPLES / f"{after}.pte"
        if a.exists() and b.exists() and (not only or before in only or after in only):
            out.append((a, b))
    return out


def _jobs(
    programs: list[Path], pairs: list[tuple[Path, Path]], out: Path
) -> list[tuple[list[str], Path]]:
    cli = [sys.executable, "-c", "import sys; from pte_adapter.cli import main; sys.exit(main())"]
    # `-c`, not `-m`: the command-line package is reached by the same entry point whatever its layout.
    jobs: list[tuple[list[str], Path]] = []
    for pte in programs:
        n = pte.name
        jobs += [
            ([sys.executable, "-c", ME_JSON, str(pte)], out / f"{n}.me.json"),
            ([*cli, "summary", str(pte)], out / f"{n}.summary.txt"),
            ([*cli, "summary", "--json", str(pte)], out / f"{n}.summary.json"),
            ([*cli, "size", str(pte)], out / f"{n}.size.txt"),
            ([*cli, "size", "--json", str(pte)], out / f"{n}.size.json"),
            ([*cli, "fit", "--json", str(pte)], out / f"{n}.fit.json"),
            (
                [
                    *cli,
                    "check",
                    "--max-partitions",
                    "0",
                    "--max-cpu-islands",
                    "0",
                    "--max-fixable-islands",
                    "0",
                    str(pte),
                ],
                out / f"{n}.check.txt",
            ),
            ([*cli, "report", "-o", f"{n}.report.html", str(pte)], out / f"{n}.report.log"),
        ]
        etdump = pte.with_suffix(".etdp")
        if etdump.exists():
            jobs.append(
                ([*cli, "profile", "--json", str(pte), str(etdump)], out / f"{n}.profile.json")
            )
    for a, b in pairs:
        stem = f"{a.stem}__{b.stem}"
        jobs += [
            ([*cli, "diff", str(a), str(b)], out / f"{stem}.diff.txt"),
            ([*cli, "diff", "--json", str(a), str(b)], out / f"{stem}.diff.json"),
            (
                [*cli, "report", "-o", f"{stem}.report.html", str(a), str(b)],
                out / f"{stem}.report.log",
            ),
        ]
    return jobs


def _run(job: tuple[list[str], Path], env: dict[str, str]) -> None:
    command, target = job  # run in the output folder: a report is written there by a relative name
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=target.parent)
    text = done.stdout + (f"\n--- stderr\n{done.stderr}" if done.stderr else "")
    # The checkout's own path is not an output: two worktrees must compare equal.
    target.write_text(f"exit {done.returncode}\n{text}".replace(str(ROOT), "<repo>"))
    report = target.with_suffix(".html")
    if report.exists():
        report.write_text(report.read_text().replace(str(ROOT), "<repo>"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the tree's src/ to run")
    parser.add_argument("--only", nargs="*", default=[], help="example stems")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(args.src.resolve()), "COLUMNS": "120", "TZ": "UTC"}
    jobs = _jobs(_programs(args.only), _pairs(args.only), args.out.resolve())
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda job: _run(job, env), jobs))
    print(f"{len(jobs)} outputs in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
