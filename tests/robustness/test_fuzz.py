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
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import fuzz as fs
from tests.support.examples import EXAMPLES
from tests.support.fuzz_recipes import apply_recipe
from tests.support.fuzz_targets import Target

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
