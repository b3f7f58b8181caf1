"""Hostile input (issue 7): mutated real files raise nothing but PteFormatError, quickly, in bounded
memory; every input the fuzzer ever broke the adapter with is replayed.

The bounded run uses the same targets, mutators and workers as `scripts/fuzz.py` (see
`tests/support/fuzz*.py`): bit flips, byte and u32 sets, truncation, splices of two files, vector
lengths inflated, union tags changed and offsets redirected (at field positions recorded from the
project's own reader), aimed at the program, at each delegate payload kind (Ethos-U blocks and
command stream, TOSA, XNNPACK, VGF, Vulkan, Core ML), at `.ptd` files and at sidecar `.tosa` files.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import fuzz as fs
from tests.support.examples import EXAMPLES
from tests.support.fuzz_recipes import apply_recipe
from tests.support.fuzz_structure import m_structure, payload_structure
from tests.support.fuzz_targets import KIND_BY_BACKEND, Target

ITERATIONS = 1500
SEED = 20260
MAX_CPU_SECONDS = 2.0
# CPU time is what an input costs; wall time only catches a hang (a shared CI machine under load
# took over 15 s of wall time for inputs that cost well under a second of CPU).
MAX_WALL_SECONDS = 120.0
MAX_RSS_MIB = 1536


def test_bounded_fuzz_run() -> None:
    snapshot = fs.snapshot_examples()
    try:
        with mp.get_context("fork").Pool(2, fs.worker_init, (str(snapshot), SEED, 2048)) as pool:
            results: list[dict[str, Any]] = list(
                pool.imap_unordered(fs.work, range(ITERATIONS), chunksize=20)
            )
    finally:
        shutil.rmtree(snapshot, ignore_errors=True)
    kinds = {r["kind"] for r in results}
    assert {
        "pte",
        "ethos-u",
        "tosa",
        "xnnpack",
        "vgf",
        "vulkan",
        "coreml",
        "ptd",
        "sidecar-tosa",
        "tosa-file",
        "etrecord",
        "etrecord-graph",
        "bundle",
        "etdump",
        "runtime-list",
        "debug-buffer",
        "etdump-debug",
    } <= kinds
    bad = [r for r in results if r["status"] not in ("ok", "format") or r.get("swallowed")]
    assert not bad, "\n".join(
        f"#{r['i']} {r['target']}: {r['status']} {r['message'][:200]} {r['swallowed']} "
        f"recipe={json.dumps(r['recipe'])}"
        for r in bad[:10]
    )
    assert any(r["status"] == "format" for r in results)  # the mutations do break files
    # A corrupt side file is a problem on the view, never a lost program.
    side_files = ("etrecord", "etdump", "debug-buffer", "etdump-debug")
    lost = [r for r in results if r["kind"] in side_files and r["status"] != "ok"]
    assert not lost, [(r["target"], r["message"][:200], r["recipe"]) for r in lost[:5]]
    slow = [r for r in results if r["cpu"] > MAX_CPU_SECONDS or r["seconds"] > MAX_WALL_SECONDS]
    assert not slow, [(r["target"], r["cpu"], r["seconds"], r.get("recipe")) for r in slow[:5]]
    assert max(r["rss"] for r in results) < MAX_RSS_MIB


def _regressions() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(fs.REGRESSIONS.glob("*.json")):
        for i, entry in enumerate(json.loads(path.read_text())):
            out.append((f"{path.stem}[{i}]", entry))
    return out


REGRESSIONS = _regressions()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> fs.Workspace:
    return fs.Workspace(tmp_path_factory.mktemp("fuzz-regressions"))


def test_regressions_exist() -> None:
    assert REGRESSIONS, f"no recipes in {fs.REGRESSIONS}"


@pytest.mark.parametrize("entry", [e for _, e in REGRESSIONS], ids=[n for n, _ in REGRESSIONS])
def test_regression(entry: dict[str, Any], workspace: fs.Workspace) -> None:
    """A stored crashing input, rebuilt from its example: now only ever a PteFormatError (or a
    conversion with problems), in under 2 s of CPU."""
    assert (EXAMPLES / entry["mutate"]).exists(), f"example {entry['mutate']} is missing"
    target = Target("regression", entry["convert"], entry["mutate"], [])
    outcome = workspace.run(target, entry["recipe"])
    assert not outcome.bad, (outcome.status, outcome.message, outcome.swallowed)
    assert outcome.cpu_seconds < MAX_CPU_SECONDS, outcome.cpu_seconds


# The payloads the structure-aware mutator is aimed at here, and the groups it must find in each
# (the transformer's Vulkan payload is the one with value lists).
STRUCTURED = {
    "vulkan_transformer.pte": {"chain", "values", "args", "items", "lists", "dims", "lengths"},
    "coreml_small.pte": {"numbers", "tags", "lengths", "manifest"},
}
STRUCTURE_RUNS = 10  # per payload; the bounded run draws the mutator among all the others too


def _first_payload(name: str) -> tuple[str, int, int]:
    from pte_adapter.api import load

    delegate = next(
        d
        for m in load(EXAMPLES / name).methods
        for d in m.delegates
        if d.payload_offset is not None and d.payload_size is not None
    )
    assert delegate.payload_offset is not None and delegate.payload_size is not None
    lo = delegate.payload_offset
    return KIND_BY_BACKEND[delegate.id], lo, lo + delegate.payload_size


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_structure_aware_mutations(name: str, workspace: fs.Workspace) -> None:
    """The structure the mutator aims at is where it says (call arguments and list items name
    values, dimensions are small, the index's numbers are digits), and what it makes of it (shared
    tables, repeated references, lists of lists, huge counts and dimensions, rewritten index
    numbers, lengths and tags) is only ever a PteFormatError or a view, in under 2 s of CPU."""
    kind, lo, hi = _first_payload(name)
    data = (EXAMPLES / name).read_bytes()
    structure = payload_structure(kind, data, lo, hi)
    assert STRUCTURED[name] <= set(structure), sorted(structure)

    def u32(pos: int) -> int:
        return int.from_bytes(data[pos : pos + 4], "little")

    if kind == "vulkan":
        values = len(structure["values"])
        assert all(u32(p) < values for p in structure["args"] + structure["items"])
        assert all(u32(p) < 1 << 16 for p in structure["dims"])
        assert all(lo <= table < hi for _, table in structure["chain"] + structure["values"])
    else:
        assert all(data[p : p + n].isdigit() for p, n in structure["numbers"])
    target = Target(kind, name, name, [(lo, hi)], structure=structure)
    rng = random.Random(f"{SEED}:{name}")
    for _ in range(STRUCTURE_RUNS):
        recipe = m_structure(rng, target, data, [])
        assert recipe and all(lo <= edit[1] < hi for edit in recipe), recipe
        outcome = workspace.run(target, recipe)
        assert not outcome.bad, (outcome.status, outcome.message, outcome.swallowed, recipe)
        assert outcome.cpu_seconds < MAX_CPU_SECONDS, (outcome.cpu_seconds, recipe)


def test_recipes_apply_as_documented() -> None:
    data = bytes(range(16))
    assert apply_recipe(data, [["set", 2, "ffff"]])[:5] == bytes([0, 1, 255, 255, 4])
    assert apply_recipe(data, [["xor", 0, "01"]])[0] == 1
    assert apply_recipe(data, [["truncate", 3]]) == bytes([0, 1, 2])
    assert apply_recipe(data, [["delete", 1, 14]]) == bytes([0, 15])
    assert apply_recipe(data, [["insert", 1, "aa"]])[:3] == bytes([0, 0xAA, 1])
    assert apply_recipe(data, [["fill", 16, 3, "0102"]])[16:] == bytes([1, 2] * 3)


def test_the_harness_sees_swallowed_decoder_bugs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoder exception the registry turns into a problem text still counts as a failure."""
    from pte_adapter.delegates.vgf import decode as vgf

    def broken(payload: memoryview, ctx: object) -> object:
        raise KeyError("boom")

    monkeypatch.setattr(vgf, "decode", broken)
    path = tmp_path / "vgf_small.pte"
    shutil.copyfile(EXAMPLES / "vgf_small.pte", path)
    outcome = fs.run_input(path)
    assert outcome.status == "ok" and outcome.bad and "KeyError" in outcome.swallowed[0]
