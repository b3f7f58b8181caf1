"""Mutation fuzzing over the real example files: the runner, and the campaigns of the bounded test
(`tests/robustness/test_fuzz.py`) and of `scripts/fuzz.py`.

What an input is: a target (`fuzz_targets.py`: which file to corrupt, which to convert, where to
aim) and a recipe (`fuzz_recipes.py`: the edits, replayable from `fuzz_regressions/*.json`).

The runner converts inside a private copy of `examples/` (so sidecar and `.ptd` lookups behave as
they do beside real files), times each input, and reports any exception that is not a
`PteFormatError` - including decoder exceptions that `delegates.registry` would otherwise turn into
a "this is a bug" problem text.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tests.support.examples import EXAMPLES
from tests.support.fuzz_recipes import Recipe, apply_recipe, mutate
from tests.support.fuzz_targets import RUNTIME_LISTS, Target, discover_targets

REGRESSIONS = Path(__file__).resolve().parent / "fuzz_regressions"
# Files a run copies: programs, bundles, data, sidecars, manifests, ETRecords (`.etrecord`, Arm's
# `_etrecord.bin`) and ETDumps.
COPIED = (".pte", ".bpte", ".ptd", ".tosa", ".json", ".etrecord", ".bin", ".etdp")


# -- running ----------------------------------------------------------------------------------


class FuzzTimeout(BaseException):  # BaseException: no `except Exception` may eat it
    """An input ran past the hard time limit."""


@dataclass
class Outcome:
    status: str  # "ok", "format" (PteFormatError), or the name of any other exception type
    seconds: float  # wall-clock time of the conversion
    cpu_seconds: float  # CPU time of the conversion (what the input costs, on a busy machine too)
    message: str = ""
    swallowed: list[str] = field(default_factory=list)  # decoder bugs the registry caught

    @property
    def bad(self) -> bool:
        return self.status not in ("ok", "format") or bool(self.swallowed)


@contextlib.contextmanager
def _decoder_watch(swallowed: list[str]) -> Iterator[None]:
    """Wrap every backend hook so that a non-format exception is recorded (then re-raised, so
    the hook's accessor still turns it into a problem text as it would for a user)."""
    from pte_adapter.delegates import hooks
    from pte_adapter.errors import PteFormatError

    orig = hooks.resolve

    def resolve(record: Any, hook: str) -> Any:
        found = orig(record, hook)
        if found is None:
            return None

        def watched(*args: Any) -> Any:
            try:
                return found(*args)
            except PteFormatError:
                raise
            except Exception as e:
                swallowed.append(f"{getattr(record, hook)}: {type(e).__name__}: {e}")
                raise

        return watched

    hooks.resolve = resolve  # type: ignore[assignment]
    try:
        yield
    finally:
        hooks.resolve = orig  # type: ignore[assignment]


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise FuzzTimeout("hard time limit")


@dataclass
class _Verdict:
    status: str = "ok"
    message: str = ""


@contextlib.contextmanager
def _classified(hard_limit: float) -> Iterator[_Verdict]:
    """Run the block under a hard time limit and say how it ended: "ok", "format" (the error
    the adapter reports), "FuzzTimeout", or the name of any other exception (a finding)."""
    from pte_adapter.errors import PteFormatError

    verdict = _Verdict()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, hard_limit)
    try:
        yield verdict
    except PteFormatError as e:
        verdict.status, verdict.message = "format", str(e)
    except FuzzTimeout:
        verdict.status, verdict.message = "FuzzTimeout", f"over {hard_limit} s"
    except Exception as e:
        verdict.status, verdict.message = type(e).__name__, str(e)[:500]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _numerics(path: Path) -> None:
    """The program's run compared with itself, as `pte-adapter numerics --reference` does: what
    reads the debug buffer and the ETDump's debug values. Raises only what the command would."""
    from pte_adapter.api import NumericsOptions, open_analysis
    from pte_adapter.render.numerics_json import numerics_json
    from pte_adapter.render.numerics_text import numerics_text

    result = open_analysis(path, numerics=NumericsOptions(reference=path))
    numerics_json(result)
    numerics_text(result, everything=True)


def run_input(
    path: Path, hard_limit: float = 30.0, to_json: bool = True, numerics: bool = False
) -> Outcome:
    """Convert one file (and serialise its graphs, as the server does) and classify the result;
    with `numerics`, also compare its run with itself.

    `seconds` times the conversion (and the comparison) only.
    """
    from pte_adapter.explorer.convert import convert_path
    from pte_adapter.render.model_explorer import graphs_to_json

    swallowed: list[str] = []
    t0, c0 = time.perf_counter(), time.process_time()
    elapsed = cpu = None
    with _decoder_watch(swallowed), _classified(hard_limit) as verdict:
        graphs = convert_path(path)
        if numerics:
            _numerics(path)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        if to_json:
            graphs_to_json(graphs)
    if elapsed is None or cpu is None:
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Outcome(verdict.status, elapsed, cpu, verdict.message, list(swallowed))


_NEEDS: dict[Path, Any] = {}  # each program's needs, read once per worker (it is not mutated)


def run_runtime_list(listed: Path, program: Path, hard_limit: float = 30.0) -> Outcome:
    """Read a (mutated) runtime operator list and check the program's needs against it, with
    every view of the check (`pte-adapter ops --runtime-ops`), and classify the result."""
    from pte_adapter.analysis.load_check import check_load
    from pte_adapter.api import open_analysis
    from pte_adapter.container.runtime_list import read_runtime_list
    from pte_adapter.render.load_report import ops_json, ops_text

    if program not in _NEEDS:
        _NEEDS[program] = open_analysis(program, profile=False).needs
    t0, c0 = time.perf_counter(), time.process_time()
    with _classified(hard_limit) as verdict:
        check = check_load(_NEEDS[program], read_runtime_list(listed), ["XnnpackBackend"])
        ops_text(check.needs, check)
        ops_json(check.needs, check)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Outcome(verdict.status, elapsed, cpu, verdict.message)


def _link_or_copy(src: Path, dst: Path) -> None:
    """A hard link where the file system allows it (the snapshot and the workers' copies share
    /dev/shm), else a copy. Safe because a workspace never writes into a file: `_write` puts a new
    inode in its place. Copies cost the examples' size per worker, and a pool under load replaces
    many workers (436 copies, 22 GB of /dev/shm, were seen before the links)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _place_examples(source: Path, root: Path) -> None:
    """The example files of `source` (not the workers' folders inside a snapshot) under `root`,
    linked where the file system allows it."""
    for src in source.rglob("*"):
        if ".workers" in src.relative_to(source).parts:
            continue
        if src.is_file() and (src.suffix in COPIED or src.parent.name == RUNTIME_LISTS):
            dst = root / src.relative_to(source)
            dst.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(src, dst)


class Workspace:
    """A private snapshot of examples/ in which one file at a time is replaced by mutated bytes.

    Everything (target discovery, splices, clean bytes) uses the snapshot, so examples being
    rebuilt while a run goes on cannot change what the run means.
    """

    def __init__(self, root: Path, source: Path = EXAMPLES) -> None:
        self.root = root
        _place_examples(source, root)
        self._clean: dict[str, bytes] = {}

    def names(self) -> list[tuple[str, int]]:
        """(name, size) of every file a splice may take its tail from."""
        return sorted(
            (str(p.relative_to(self.root)), p.stat().st_size)
            for p in self.root.rglob("*")
            if p.suffix in (".pte", ".ptd", ".tosa")
        )

    def clean(self, rel: str) -> bytes:
        if rel not in self._clean:
            self._clean[rel] = (self.root / rel).read_bytes()
        return self._clean[rel]

    def _write(self, rel: str, data: bytes) -> None:
        # A new inode each time: a conversion's stale memory map never sees the bytes change.
        dst = self.root / rel
        tmp = dst.with_name(dst.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, dst)

    def mutated(self, target: Target, recipe: Recipe) -> bytes:
        return apply_recipe(self.clean(target.mutate), recipe, self.root)

    def run(
        self, target: Target, recipe: Recipe, hard_limit: float = 30.0, to_json: bool = True
    ) -> Outcome:
        self.clean(target.mutate)
        self._write(target.mutate, self.mutated(target, recipe))
        try:
            if Path(target.mutate).parent.name == RUNTIME_LISTS:
                return run_runtime_list(self.root / target.mutate, self.root / target.convert)
            return run_input(self.root / target.convert, hard_limit, to_json, target.numerics)
        finally:
            self._write(target.mutate, self.clean(target.mutate))


def pick_target(rng: random.Random, targets: list[Target], root: Path) -> Target:
    """A kind uniformly, then a target of that kind: any one 2% of the time, else smaller
    files (cheaper to convert) much more often.

    Sizes, not timings, weigh the choice so that a seed always gives the same inputs.
    """
    kinds = sorted({t.kind for t in targets})
    kind = rng.choice(kinds)
    pool = [t for t in targets if t.kind == kind]
    if rng.random() < 0.02:
        return rng.choice(pool)
    weights = [
        1.0
        / (
            (root / t.convert).stat().st_size / 2**20
            + (root / t.mutate).stat().st_size / 2**20
            + 0.05
        )
        ** 2
        for t in pool
    ]
    return rng.choices(pool, weights)[0]


def minimise(ws: Workspace, target: Target, recipe: Recipe, status: str) -> Recipe:
    """Drop edits while the input still fails the same way (recipes are short; greedy is enough)."""

    def same(r: Recipe) -> bool:
        o = ws.run(target, r)
        return o.status == status or (status == "swallowed" and bool(o.swallowed))

    i = 0
    while i < len(recipe) and len(recipe) > 1:
        trial = recipe[:i] + recipe[i + 1 :]
        if same(trial):
            recipe = trial
        else:
            i += 1
    return recipe


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- campaigns (the test's bounded run and scripts/fuzz.py) -----------------------------------

_STATE: dict[str, Any] = {}


def tmp_dir() -> str | None:
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def snapshot_examples() -> Path:
    """Copy the example files once; workers copy this snapshot (a run sees one set of files)."""
    import tempfile

    snapshot = Path(tempfile.mkdtemp(prefix="pte-fuzz-snapshot-", dir=tmp_dir()))
    _place_examples(EXAMPLES, snapshot)
    return snapshot


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def worker_init(snapshot: str, seed: int, mem_limit_mib: int) -> None:
    """Pool initialiser: a private workspace, its targets, and an address-space limit.

    It never raises: a pool replaces a worker whose initialiser fails, forever (a harness that no
    longer fit the reader once made hundreds of workers, each with its workspace, until memory ran
    out). The failure is kept and `work` raises it, so the run fails at once with its cause."""
    try:
        _init_worker(snapshot, seed, mem_limit_mib)
    except Exception:
        import traceback

        _STATE["init_error"] = traceback.format_exc()


def _init_worker(snapshot: str, seed: int, mem_limit_mib: int) -> None:
    import resource
    import tempfile

    # Inside the snapshot's folder, so removing the snapshot removes every worker's copy too.
    (Path(snapshot) / ".workers").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="worker-", dir=Path(snapshot) / ".workers"))
    ws = Workspace(root, Path(snapshot))
    targets = discover_targets(root)
    if mem_limit_mib:
        limit = mem_limit_mib * 2**20 + _vm_size()
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _STATE.update(ws=ws, targets=targets, names=ws.names(), seed=seed)


def _worker_state() -> dict[str, Any]:
    """The worker's state, for every task the pool runs; raises its initialiser's failure."""
    if "init_error" in _STATE:
        raise RuntimeError(f"the fuzz worker could not start:\n{_STATE['init_error']}")
    return _STATE


def make_input(i: int) -> tuple[Target, str, Recipe]:
    """Input `i` of the campaign: a function of the seed, `i` and the snapshot only."""
    _worker_state()
    rng = random.Random(f"{_STATE['seed']}:{i}")
    ws: Workspace = _STATE["ws"]
    target = pick_target(rng, _STATE["targets"], ws.root)
    label, recipe = mutate(rng, target, ws.clean(target.mutate), _STATE["names"])
    return target, label, recipe


def work(i: int) -> dict[str, Any]:
    target, label, recipe = make_input(i)
    ws: Workspace = _STATE["ws"]
    # Serialising the graphs (as the server does) costs as much as converting: do it for some.
    outcome = ws.run(target, recipe, hard_limit=20.0, to_json=i % 20 == 0)
    result: dict[str, Any] = {
        "i": i,
        "kind": target.kind,
        "target": target.name,
        "mutator": label.split("(")[0],
        "status": outcome.status,
        "seconds": outcome.seconds,
        "cpu": outcome.cpu_seconds,
        "rss": peak_rss_mib(),
    }
    if outcome.bad or outcome.cpu_seconds > 1.0:
        result.update(
            message=outcome.message,
            swallowed=outcome.swallowed[:3],
            recipe=recipe,
            convert=target.convert,
            mutate=target.mutate,
        )
    return result


def minimise_item(item: dict[str, Any]) -> Recipe:
    state = _worker_state()
    ws: Workspace = state["ws"]
    target = next(t for t in state["targets"] if t.name == item["target"])
    status = "swallowed" if item["swallowed"] else item["status"]
    return minimise(ws, target, item["recipe"], status)
