"""Broken runtime operator lists (`--runtime-ops`): hand-broken copies of the real lists in
examples/runtimes and seeded edits of them, a FIFO and a giant. Each is one `PteFormatError` line
naming the file and the line, never quoting the file; nothing else escapes."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from pte_adapter.container.runtime_list import MAX_BYTES, parse_runtime_list, read_runtime_list
from pte_adapter.errors import LimitExceededError, PteFormatError
from tests.support.corruption import Outcomes
from tests.support.examples import EXAMPLES

RUNTIMES = EXAMPLES / "runtimes"
PIP = RUNTIMES / "pip_portable_lib.txt"
SELECTED = sorted(RUNTIMES.glob("*.selected_operators.yaml"))


def _refusal(data: bytes) -> str:
    with pytest.raises(PteFormatError) as e:
        parse_runtime_list(data, "list", "runtime list list")
    return str(e.value)


YAML = SELECTED[0].read_text()


BAD_LISTS: list[tuple[bytes, str]] = [
    (b"", "empty: it names no operator"),
    (b"# only a comment\n\n", "empty"),
    (b"[]", "an empty list"),
    (PIP.read_bytes()[:200] + b"\xff\xfe", "not UTF-8 at byte 200"),
    (b"aten::add.out\n\x1b]52;c;\x07\n", "a control character on line 2"),
    (b'{"operators": {}}', "a flow mapping (JSON object) is not a runtime list"),
    (b"print('aten::add.out')\n", "line 1: not an operator name"),
    (b"aten::add.out\naten::mul out\n", "line 2: not an operator name"),
    (YAML.replace("build_features", "model").encode(), "top-level key(s)"),
    (b"name: mv2\nversion: 3\n", "top-level key(s)"),
    (b"debug_info: []\n", "no operators, et_kernel_metadata or include_all_operators"),
    (b"operators:\n- aten::add.out\n", "operators: a list, not a mapping"),
    (YAML.replace("is_root_operator: true", "is_root_operator: maybe", 1).encode(), "not true"),
    (YAML.replace("debug_info:", "colour: red\n    debug_info:", 1).encode(), "does not know"),
    (b"a: &x [1]\nb: *x\n", "line 1: an anchor is not read"),
    (b"operators: !!python/object {}\n", "line 1: a tag is not read"),
    (b"operators: |\n  aten::add.out\n", "line 1: a block scalar is not read"),
    (b"operators:\n\t- x\n", "line 2: a tab in the indentation"),
    (b"operators:\n  a:\n b: 1\n", "line 3: unexpected indentation"),
    (b"[aten::add.out, 'x\n", "does not close"),
    (b"---\nx: 1\n---\ny: 2\n", "line 3: a second document"),
    (("[" * 40 + "]" * 40).encode(), "nested deeper than 32"),
    (("operators:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 40))).encode(), "deeper"),
    (b"operators:\n  aten::add.out:\n    - 1\n  - 2\n", "line 4"),
]


@pytest.mark.parametrize(("data", "says"), BAD_LISTS, ids=[s for _, s in BAD_LISTS])
def test_a_bad_list_is_one_clear_line(data: bytes, says: str) -> None:
    text = _refusal(data)
    assert says in text and "\n" not in text and text.startswith("runtime list list: "), text


def test_refusals_never_quote_the_file() -> None:
    secret = "SECRETNAME"
    for data in (
        f"{secret} {secret}\n".encode(),
        f"{secret}: 1\n".encode(),
        f"operators:\n  {secret}: 3\n".encode(),
    ):
        assert secret not in _refusal(data)


# Bytes that mean something to YAML or to the reader: an edit with one of them is a structural one.
_SYNTAX = b":-[]{}'\"#&*!|>\t\n\x00\xff "


def test_byte_edits_of_real_lists_are_read_or_refused() -> None:
    """Seeded edits of every real list, mostly to YAML's own characters: each reads or is one
    PteFormatError, nothing else. A reader that accepts anything fails the count: an edit that
    puts a control byte, a tab or an unclosed quote into a list is refused."""
    rng = random.Random(47)
    outcomes: Outcomes[object] = Outcomes("runtime lists")
    for path in [PIP, *SELECTED]:
        clean = path.read_bytes()
        for i in range(300):
            data = bytearray(clean)
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(len(data))] = rng.choice(_SYNTAX)
            outcomes.attempt((path.name, i), parse_runtime_list, bytes(data), "x")
    assert outcomes.tried == 900
    assert 0.5 < outcomes.rejected_share < 1.0, outcomes


def test_read_before_the_bytes_a_fifo_and_a_giant(tmp_path: Path) -> None:
    fifo = tmp_path / "ops.txt"
    os.mkfifo(fifo)
    with pytest.raises(PteFormatError, match="FIFO"):
        read_runtime_list(fifo)
    giant = tmp_path / "giant.yaml"
    giant.write_bytes(PIP.read_bytes())
    os.truncate(giant, MAX_BYTES + 1)
    with pytest.raises(LimitExceededError, match=f"limit {MAX_BYTES}"):
        read_runtime_list(giant)


def _plain(doc: object) -> bool:
    """Only what our reader makes: strings, booleans, nulls, lists and mappings of strings."""
    if isinstance(doc, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in doc.items())
    if isinstance(doc, list):
        return all(_plain(v) for v in doc)
    return doc is None or isinstance(doc, (str, bool))


def test_what_both_readers_accept_they_read_alike() -> None:
    """Seeded edits of the real YAML lists: whenever ours reads one and PyYAML reads it to the
    kinds of values ours makes, the two readings are equal (ours refuses more: anchors, tags,
    multi-line scalars)."""
    import yaml

    from pte_adapter.container.yaml_lite import lines_of, parse

    rng = random.Random(4747)
    outcomes: Outcomes[object] = Outcomes("edited YAML lists")
    compared = 0
    for path in SELECTED:
        clean = path.read_bytes()
        for i in range(400):
            data = bytearray(clean)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.choice(_SYNTAX[:-3])
            text = bytes(data).decode("utf-8", "replace")
            ours = outcomes.attempt((path.name, i), lambda t=text: parse(lines_of(t, "x"), "x"))
            if (path.name, i) in outcomes.rejected:
                continue
            try:
                theirs = yaml.safe_load(text)
            except yaml.YAMLError:
                continue
            if _plain(theirs):
                assert ours == theirs, text
                compared += 1
    assert 0.2 < outcomes.rejected_share < 0.95, outcomes
    assert compared > 100
