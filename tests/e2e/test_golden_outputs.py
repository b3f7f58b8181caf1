"""Every example's user-visible outputs against the goldens in tests/golden/ (issue 48).

The goldens are what `python -m scripts.golden_outputs --update` writes: what runs is in
tests/support/golden.py, how each output is kept (whole, abridged, or a card of digests) in
tests/support/golden_forms.py. A change to what users see fails here, naming the file and showing
its first differing lines; when the change is meant, regenerate the goldens and commit them with
it, so the reviewer sees what users will see differently.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support import golden
from tests.support.golden_forms import Output, stored

SUBJECTS = golden.subjects()

# Between them every kind of output: text, JSON whole and abridged, the graphs, the report,
# `export`'s files, `profile`'s node data, stderr and a failing exit code (`check`).
PLANTED = ("mv2_lrn_ethosu85", "tiny_gpt_xnnpack")

# Run again in fresh processes: a failing check (stderr, exit 1), a summary naming paths in the
# checkout, a report (a file written), a help text (its width) and the graphs.
FRESH = (
    "programs/mv2_lrn_ethosu85.pte/check.txt",
    "programs/whatif_mv2_residual_cpu_ethosu55.pte/summary.txt",
    "programs/mv2_lrn_ethosu85.pte/report.txt",
    "cli/fit--help.txt",
    "programs/two_methods.pte/model-explorer.txt",
)


@pytest.fixture(scope="module")
def produced() -> golden.Produced:
    """Every output, as its golden text; those of the PLANTED programs also whole."""
    keep = [s.folder for s in golden.subjects(PLANTED) if s.folder.startswith("programs/")]
    return golden.produce(SUBJECTS, golden.workers(), keep=keep)


@pytest.mark.parametrize("subject", SUBJECTS, ids=[s.folder for s in SUBJECTS])
def test_the_outputs_are_the_goldens(subject: golden.Subject, produced: golden.Produced) -> None:
    mine = {k: v for k, v in produced.texts.items() if k.startswith(f"{subject.folder}/")}
    found = golden.differences(golden.read(subject.folder), mine)
    assert not found, golden.failure_message(found)


def test_every_golden_belongs_to_an_output() -> None:
    """A golden left behind by a removed example or command fails too."""
    folders = tuple(f"{s.folder}/" for s in SUBJECTS)
    stale = [path for path in golden.read() if not path.startswith(folders)]
    assert not stale, (
        f"goldens of no subject (run `{golden.UPDATE_COMMAND}`, which removes them): {stale}"
    )


def _digit_positions(text: str) -> list[int]:
    return [i for i, c in enumerate(text) if c in "123456789"]


def _planted(text: str) -> Iterator[tuple[int, str]]:
    """`text` with one digit changed, at its first digit, two in between and its last: a digit
    for another keeps JSON valid JSON (the change is in a value, as a regression would be). Text
    without a digit gets a newline more."""
    digits = _digit_positions(text)
    if not digits:
        yield len(text), text + "\n"
        return
    for i in sorted(
        {digits[0], digits[len(digits) // 3], digits[2 * len(digits) // 3], digits[-1]}
    ):
        yield i, text[:i] + ("2" if text[i] == "1" else "1") + text[i + 1 :]


def plants(output: Output) -> Iterator[tuple[str, Output]]:
    """`output` changed in one place: its exit code, or one digit of its stdout, its stderr or
    one of its files (a newline more where there is no digit: an empty stderr)."""
    if output.exit is not None:
        yield "exit", dataclasses.replace(output, exit=output.exit + 1)
    for part in ("stdout", "stderr"):
        for i, changed in _planted(getattr(output, part)):
            yield f"{part}[{i}]", dataclasses.replace(output, **{part: changed})
    for name, data in output.files.items():
        for i, changed in _planted(data.decode()):
            files = {**output.files, name: changed.encode()}
            yield f"{name}[{i}]", dataclasses.replace(output, files=files)


def test_a_planted_change_to_any_output_fails(produced: golden.Produced) -> None:
    """Each output of two programs, changed in one place at a time (its exit code, or one digit
    at four places of its stdout, stderr and each file it writes), no longer matches its golden:
    the failure names the file and shows the changed lines; where the golden keeps digests (the
    graphs, the report, long JSON), it also shows the part that changed, not only the whole's."""
    goldens = golden.read()
    kinds, tried = set(), 0
    assert len(produced.outputs) > 20
    for path, output in produced.outputs.items():
        assert stored(output) == goldens[path], path  # unchanged, it matches
        for where, changed in plants(output):
            found = golden.differences({path: goldens[path]}, {path: stored(changed)})
            assert len(found) == 1 and found[0].startswith(f"{path} differs:"), (path, where)
            diff = found[0].splitlines()[3:]  # below "differs:", "--- golden", "+++ now"
            added = [x for x in diff if x.startswith("    +")]
            assert added or any(x.startswith("    -") for x in diff), (path, where, found[0])
            part = where.split("[")[0]
            in_parts = (bool(added) and "abridged" in added[0]) or part == "report.html"
            if in_parts or (output.kind == "graphs" and part == "stdout"):
                assert len(added) >= 2, (path, where, found[0])  # the whole's digest and a part's
            kinds.add((output.kind, part))
            tried += 1
    assert {("graphs", "stdout"), ("json", "stdout"), ("text", "stderr"), ("text", "exit")} <= kinds
    assert {("text", "report.html"), ("text", "graph.json"), ("text", "node-data.json")} <= kinds
    assert tried > 100, tried


def test_a_fresh_process_prints_the_goldens() -> None:
    """The goldens are made in-process (`main(argv)`, stdout captured); a fresh process, as a user
    runs the command, prints the same (`python -m scripts.golden_outputs --fresh` checks all)."""
    commands = [golden.command_at(path) for path in FRESH]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(len(commands)) as pool:
        texts = list(
            pool.map(lambda c: stored(golden.run(c, Path(tmp) / str(id(c)), fresh=True)), commands)
        )
    found = golden.differences(
        {p: golden.read()[p] for p in FRESH}, dict(zip(FRESH, texts, strict=True))
    )
    assert not found, golden.failure_message(found)
