"""Golden outputs (issue 48): every example's user-visible outputs, kept in `tests/golden/`.

What runs (`subjects()`), each in a folder of its own under `tests/golden/`:

- `programs/<file>/`, per program in `examples/` (`.pte`, `.bpte`): the graphs the adapter gives
  Model Explorer (`model-explorer.txt`), `summary` (text and `--json`), `size` (both), `fit`
  (`--json`, and the text with `--board`: the memory map and the gate), `check` with every limit
  at 0 (its failure lines), `ops` (text and `--json`), `report` (the HTML file as a card),
  `export` (its graph file, checked to hold the graphs Model Explorer is given, and its
  `--npu-overlay`); with an ETDump beside it, `profile` (text with `--node-data`, and `--json`);
  with an ETRecord beside it (`<stem>.etrecord`, `<stem>_etrecord.bin`), `sync` (the mapping) and
  the ETRecord's graphs as Model Explorer is given them (`model-explorer--etrecord.txt`);
- `pairs/<before>--<after>/`, per what-if pair (`examples/whatif_pairs.json`) and `FIXED_PAIRS`:
  `diff` (text and `--json`) and the two-program `report`;
- `numerics/<program>--<reference>/`, per pair of `tests/support/numerics.py`'s `NUMERICS_PAIRS`
  (one network run two ways on one input): `numerics` (text and `--json`) and `check --min-snr`;
- `cli/`: `pte-adapter --help`, `--version`, every command's `--help`, and two usage errors.

Each command runs in-process, as `pte_adapter.cli.main(argv)` with stdout and stderr captured,
from the repository's root with the example's relative path, as a user's shell would run
`pte-adapter ...` there; `fresh=True` runs each in a fresh process instead (slower, the same
text: tests/e2e/test_golden_outputs.py checks a few, `python -m scripts.golden_outputs --fresh`
all). Machine-specific text is normalised: the checkout's path is `<repo>`, the folder a command
writes its files into `<out>`. `golden_forms.stored` makes the kept text of each output.
Subjects run in a pool of fresh (spawned) processes, the largest first.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tests.support.examples import EXAMPLES, ROOT
from tests.support.golden_forms import Output, stored
from tests.support.numerics import NUMERICS_PAIRS

GOLDEN = ROOT / "tests" / "golden"
UPDATE_COMMAND = "python -m scripts.golden_outputs --update"
J = TypeVar("J")
R = TypeVar("R")

# Pairs compared by `diff` and the two-program report besides the what-if pairs.
FIXED_PAIRS = (
    ("mv2_ethosu85_full", "mv2_lrn_ethosu85"),
    ("mv2_lrn_ethosu85", "mv2_lrn2_ethosu85"),
    ("mv2_xnnpack_fp32", "mv2_xnnpack_int8"),
    ("lrn_pow_xnnpack", "lrn_rsqrt_xnnpack"),  # an ETDump beside each: the measured saving
)
CHECK_LIMITS = ("--max-partitions", "0", "--max-cpu-islands", "0", "--max-fixable-islands", "0")
BOARD = "corstone-320"  # `fit --board`: the memory map, and the gate (fits, or what does not)
OUT = "<out>"  # in a command line: the (temporary) folder it writes its files into
COLUMNS = "80"  # the width argparse wraps help to (what it uses when stdout is a pipe)

# A fresh process: the command line's own entry point, and the graphs as `graphs_json` makes them.
_FRESH_CLI = "import sys; from pte_adapter.cli import main; sys.exit(main())"
_FRESH_GRAPHS = "from tests.support.golden import print_graphs; print_graphs()"


@dataclass(frozen=True)
class Command:
    """One output: `name` is its golden file; `argv` the arguments of `pte-adapter` (`OUT/name`
    for a file it writes), or for `kind` "graphs" the program whose graphs Model Explorer is
    given; `kind` says how its stdout is kept (golden_forms)."""

    name: str
    argv: tuple[str, ...]
    kind: str = "text"

    @property
    def line(self) -> str:
        if self.kind == "graphs":
            return (
                f"model-explorer --extensions=pte_adapter {self.argv[0]}  (the graphs the adapter "
                "gives the server, as JSON: sorted keys, indent 1)"
            )
        return " ".join(("pte-adapter", *self.argv))


@dataclass(frozen=True)
class Subject:
    """A folder of goldens under tests/golden/ and the commands that make them, in order."""

    folder: str
    commands: tuple[Command, ...]
    weight: int = 0  # bytes of the programs it reads: the pool starts the largest first


def programs() -> list[Path]:
    return sorted([*EXAMPLES.glob("*.pte"), *EXAMPLES.glob("*.bpte")])


def pairs() -> list[tuple[Path, Path]]:
    names = list(FIXED_PAIRS)
    listed = EXAMPLES / "whatif_pairs.json"
    if listed.exists():
        for pair in json.loads(listed.read_text()).get("pairs", []):
            names.append((Path(pair["fragmented"]["file"]).stem, Path(pair["fixed"]["file"]).stem))
    found = [(EXAMPLES / f"{a}.pte", EXAMPLES / f"{b}.pte") for a, b in names]
    return [(a, b) for a, b in found if a.exists() and b.exists()]


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def program_subject(pte: Path) -> Subject:
    rel = _relative(pte)
    commands = [
        Command("model-explorer.txt", (rel,), "graphs"),
        Command("summary.txt", ("summary", rel)),
        Command("summary--json.txt", ("summary", "--json", rel), "json"),
        Command("size.txt", ("size", rel)),
        Command("size--json.txt", ("size", "--json", rel), "json"),
        Command("fit--json.txt", ("fit", "--json", rel), "json"),
        Command("fit--board.txt", ("fit", "--board", BOARD, rel)),
        Command("check.txt", ("check", *CHECK_LIMITS, rel)),
        Command("ops.txt", ("ops", rel)),
        Command("ops--json.txt", ("ops", "--json", rel), "json"),
        Command("report.txt", ("report", "-o", f"{OUT}/report.html", rel)),
        Command(
            "export.txt",
            ("export", "-o", f"{OUT}/graph.json", "--npu-overlay", f"{OUT}/npu-overlay.json", rel),
        ),
    ]
    if "ethosu" in pte.stem:  # the one backend with per-partition estimate detail to show
        commands.append(Command("summary--verbose.txt", ("summary", "--verbose", rel)))
    etdump = pte.with_suffix(".etdp")
    if etdump.exists():
        commands += [
            Command("profile.txt", ("profile", "--node-data", f"{OUT}/node-data.json", rel)),
            Command("profile--json.txt", ("profile", "--json", rel, _relative(etdump)), "json"),
        ]
    for etrecord in (pte.with_suffix(".etrecord"), pte.with_name(f"{pte.stem}_etrecord.bin")):
        if etrecord.exists():
            commands += [
                Command("sync.txt", ("sync", rel), "json"),
                Command("model-explorer--etrecord.txt", (_relative(etrecord),), "graphs"),
            ]
            break
    return Subject(f"programs/{pte.name}", tuple(commands), pte.stat().st_size)


def pair_subject(before: Path, after: Path) -> Subject:
    a, b = _relative(before), _relative(after)
    commands = (
        Command("diff.txt", ("diff", a, b)),
        Command("diff--json.txt", ("diff", "--json", a, b), "json"),
        Command("report.txt", ("report", "-o", f"{OUT}/report.html", a, b)),
    )
    size = before.stat().st_size + after.stat().st_size
    return Subject(f"pairs/{before.name}--{after.name}", commands, size)


def numerics_subject(program: Path, reference: Path) -> Subject:
    """The numeric gap of a run against a reference run of the same network and input."""
    a, b = _relative(program), _relative(reference)
    commands = (
        Command("numerics.txt", ("numerics", a, "--reference", b)),
        Command("numerics--json.txt", ("numerics", "--json", a, "--reference", b), "json"),
        Command("check--min-snr.txt", ("check", "--min-snr", "30", a, "--reference", b)),
    )
    size = program.stat().st_size + reference.stat().st_size
    return Subject(f"numerics/{program.name}--{reference.name}", commands, size)


def cli_subject() -> Subject:
    from pte_adapter.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    first = _relative(programs()[0])
    commands = [
        Command("help.txt", ("--help",)),
        Command("version.txt", ("--version",)),
        *(Command(f"{name}--help.txt", (name, "--help")) for name in sub.choices),
        Command("error-no-such-file.txt", ("summary", "examples/no-such-file.pte")),
        Command("error-check-without-a-limit.txt", ("check", first)),
    ]
    return Subject("cli", tuple(commands))


def subjects(only: Iterable[str] = ()) -> list[Subject]:
    """Every subject; with `only` (example stems or file names), those that read one of them."""
    wanted = set(only)

    def chosen(*paths: Path) -> bool:
        return not wanted or any(p.stem in wanted or p.name in wanted for p in paths)

    found = [program_subject(p) for p in programs() if chosen(p)]
    found += [pair_subject(a, b) for a, b in pairs() if chosen(a, b)]
    found += [
        numerics_subject(EXAMPLES / f"{a}.pte", EXAMPLES / f"{b}.pte")
        for a, b in NUMERICS_PAIRS
        if chosen(EXAMPLES / f"{a}.pte", EXAMPLES / f"{b}.pte")
    ]
    return [*found, cli_subject()] if not wanted else found


def command_at(path: str) -> Command:
    """The command whose golden is `path` (under tests/golden/)."""
    folder, name = path.rsplit("/", 1)
    for subject in subjects():
        for command in subject.commands if subject.folder == folder else ():
            if command.name == name:
                return command
    raise KeyError(path)


# -- running one subject ------------------------------------------------------------------------


def graphs_json(program: str | Path) -> str:
    """The graphs the adapter gives Model Explorer's server for `program`, as JSON: as the server
    makes them into JSON (`convert_adapter_response`) in the form the adapter hands them over
    (explorer/served.py, so that form is checked on every example too)."""
    from model_explorer.utils import convert_adapter_response

    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.explorer.served import served

    sent = convert_adapter_response({"graphs": served(convert_path(program))})
    return json.dumps(sent["graphs"], indent=1, sort_keys=True)


def print_graphs() -> None:
    """`graphs_json` of the program named by the command line, in a fresh process (`--fresh`);
    what it raises is one line on stderr, as `_in_process` records it."""
    try:
        sys.stdout.write(graphs_json(sys.argv[1]))
    except Exception as e:
        sys.stderr.write(f"{type(e).__name__}: {e}")
        sys.exit(1)


@contextlib.contextmanager
def _as_a_user() -> Iterator[Path]:
    """From the repository's root, with the help width fixed; yields a temporary folder."""
    cwd, columns = os.getcwd(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
            os.chdir(ROOT)
            yield Path(tmp)
    finally:
        os.chdir(cwd)
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _in_process(command: Command) -> Output:
    """`command` run by `pte_adapter.cli.main` in this process, its stdout and stderr captured."""
    if command.kind == "graphs":
        try:
            return Output(command.line, command.kind, 0, graphs_json(ROOT / command.argv[0]))
        except Exception as e:
            return Output(command.line, command.kind, raised=f"{type(e).__name__}: {e}")
    from pte_adapter.cli import main

    out, err = io.StringIO(), io.StringIO()
    # catch_warnings: a warning shows each time, as in a fresh process
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        try:
            code: int | None = main(list(command.argv))
        except SystemExit as e:  # argparse: --help, --version, a usage error
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return Output(command.line, command.kind, code, out.getvalue(), err.getvalue())


def _fresh(command: Command) -> Output:
    """`command` run in a fresh Python process, as `pte-adapter ...` runs from a shell."""
    import pte_adapter

    src = str(Path(pte_adapter.__file__).parent.parent)  # this process's code, in that one too
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "COLUMNS": COLUMNS,
        "PYTHONPATH": os.pathsep.join(filter(None, (src, path))),
    }
    if command.kind == "graphs":
        argv = [sys.executable, "-c", _FRESH_GRAPHS, str(ROOT / command.argv[0])]
    else:
        argv = [sys.executable, "-c", _FRESH_CLI, *command.argv]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    if command.kind == "graphs" and done.returncode:
        return Output(command.line, command.kind, raised=stderr)
    return Output(command.line, command.kind, done.returncode, stdout, stderr)


def _normalised(output: Output, out_dir: Path) -> Output:
    """`output` with the folder it wrote into as `<out>` and the checkout as `<repo>`."""
    spellings = [
        (spelling, token)
        for path, token in ((out_dir, OUT), (out_dir.parent, "<tmp>"), (ROOT, "<repo>"))
        for spelling in dict.fromkeys((str(path), str(path.resolve())))
    ]

    def text(t: str) -> str:
        for spelling, token in spellings:
            t = t.replace(spelling, token)
        return t

    def data(b: bytes) -> bytes:
        for spelling, token in spellings:
            b = b.replace(spelling.encode(), token.encode())
        return b

    output.stdout, output.stderr = text(output.stdout), text(output.stderr)
    output.raised = text(output.raised) if output.raised is not None else None
    output.files = {name: data(b) for name, b in output.files.items()}
    return output


def run(command: Command, tmp: Path, fresh: bool = False) -> Output:
    """One command's output, normalised; `tmp` holds the folder it writes into."""
    out_dir = tmp / command.name
    out_dir.mkdir(parents=True)
    argv = tuple(a.replace(OUT, str(out_dir)) for a in command.argv)
    resolved = Command(command.name, argv, command.kind)
    output = _fresh(resolved) if fresh else _in_process(resolved)
    output.command = command.line
    output.files = {p.name: p.read_bytes() for p in sorted(out_dir.iterdir())}
    return _normalised(output, out_dir)


def outputs(subject: Subject, fresh: bool = False) -> dict[str, Output]:
    """Path under tests/golden/ -> the output of each of the subject's commands."""
    found: dict[str, Output] = {}
    with _as_a_user() as tmp:
        graphs = None
        for command in subject.commands:
            output = run(command, tmp, fresh)
            if command.kind == "graphs" and output.raised is None:
                graphs = output.stdout
            if "graph.json" in output.files and graphs is not None:
                given = json.loads(output.files["graph.json"]).get("graphs")
                output.same_graphs = given == json.loads(graphs)
            found[f"{subject.folder}/{command.name}"] = output
    return found


def _full_texts(job: tuple[Subject, bool, Path]) -> list[str]:
    """Every output whole into `folder` (`--full`): the text with nothing abridged, and the files
    the command wrote beside it, in `<name>.files/`. The paths written."""
    subject, fresh, folder = job
    written = []
    for path, output in outputs(subject, fresh).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = f"$ {output.command}\nexit {output.exit}\n--- stdout\n{output.stdout}"
        text += f"--- stderr\n{output.stderr}" if output.stderr else ""
        target.write_text(text + (f"raised {output.raised}\n" if output.raised else ""))
        for name, data in output.files.items():
            (folder / f"{path}.files").mkdir(exist_ok=True)
            (folder / f"{path}.files" / name).write_bytes(data)
        written.append(path)
    return written


def _golden_job(job: tuple[Subject, bool, bool]) -> tuple[dict[str, str], dict[str, Output]]:
    subject, fresh, keep = job
    made = outputs(subject, fresh)
    return {path: stored(o) for path, o in made.items()}, made if keep else {}


def workers() -> int:
    """One process per core, at most four."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


@dataclass
class Produced:
    """What `produce` made: path under tests/golden/ -> golden text; and the outputs themselves
    of the subjects asked for (`keep`)."""

    texts: dict[str, str]
    outputs: dict[str, Output]


def produce(
    chosen: list[Subject], jobs: int = 1, fresh: bool = False, keep: Iterable[str] = ()
) -> Produced:
    """Every output of `chosen` as its golden text; the outputs too of the subjects whose folders
    are in `keep`. With `jobs` > 1 in a pool of spawned processes, the largest subjects first."""
    kept = set(keep)
    order = sorted(chosen, key=lambda s: -s.weight)
    texts: dict[str, str] = {}
    made: dict[str, Output] = {}
    for some_texts, some in _pool_map(
        _golden_job, [(s, fresh, s.folder in kept) for s in order], jobs
    ):
        texts.update(some_texts)
        made.update(some)
    return Produced(dict(sorted(texts.items())), made)


def write_full(chosen: list[Subject], folder: Path, jobs: int = 1, fresh: bool = False) -> int:
    order = sorted(chosen, key=lambda s: -s.weight)
    return sum(len(p) for p in _pool_map(_full_texts, [(s, fresh, folder) for s in order], jobs))


def _pool_map(function: Callable[[J], R], work: list[J], jobs: int) -> list[R]:
    """`function` over `work`: here with one job, else in a pool of spawned processes (a fresh
    interpreter each, nothing inherited from this one's state), results in the order they end."""
    if jobs <= 1:
        return [function(j) for j in work]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        return list(pool.imap_unordered(function, work))


# -- the goldens on disk ------------------------------------------------------------------------


def read(folder: str = "") -> dict[str, str]:
    """Path under tests/golden/ -> text, for every golden under `folder` (all with "")."""
    base = GOLDEN / folder
    if not base.is_dir():
        return {}
    return {
        p.relative_to(GOLDEN).as_posix(): p.read_bytes().decode()
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def write(produced: dict[str, str], chosen: list[Subject], everything: bool) -> list[str]:
    """Write the goldens that changed and remove those of `chosen` no longer made (with
    `everything`, every golden no longer made). The paths changed, added or removed."""
    kept = read() if everything else {k: v for s in chosen for k, v in read(s.folder).items()}
    changed = []
    for path, text in produced.items():
        if kept.get(path) != text:
            target = GOLDEN / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode())
            changed.append(path)
    for path in sorted(kept.keys() - produced.keys()):
        (GOLDEN / path).unlink()
        changed.append(path)
    for folder in sorted(GOLDEN.rglob("*"), reverse=True):  # folders left empty
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return changed


# -- what differs --------------------------------------------------------------------------------

DIFF_LINES = 30  # of each file's diff in a failure message
LINE_WIDTH = 200


def differences(goldens: dict[str, str], produced: dict[str, str]) -> list[str]:
    """One message per path whose golden and output differ: which file, and the first lines of
    their unified diff."""
    found = []
    for path in sorted(goldens.keys() | produced.keys()):
        golden, now = goldens.get(path), produced.get(path)
        if golden == now:
            continue
        if golden is None:
            found.append(f"{path}: a new output, no golden yet")
        elif now is None:
            found.append(f"{path}: a golden whose output is no longer made")
        else:
            found.append(f"{path} differs:\n{first_differences(golden, now)}")
    return found


def first_differences(golden: str, now: str) -> str:
    lines = list(
        difflib.unified_diff(
            golden.splitlines(), now.splitlines(), "golden", "now", n=1, lineterm=""
        )
    )
    shown = [
        line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH] + " ..."
        for line in lines[:DIFF_LINES]
    ]
    more = len(lines) - len(shown)
    return "\n".join(
        ["    " + s for s in shown] + ([f"    ({more} more diff lines)"] if more else [])
    )


def failure_message(found: list[str]) -> str:
    return (
        f"{len(found)} output(s) differ from tests/golden/. If the change is meant, run "
        f"`{UPDATE_COMMAND}` and commit the goldens with it (review `git diff tests/golden`; "
        "where only a digest changed, `python -m scripts.golden_outputs --full DIR` on both trees "
        "and `diff -r` show the whole):\n\n" + "\n\n".join(found)
    )
