"""Hostile runtime operator lists (issue 47): `pte-adapter ops --runtime-ops LIST` reads a file a
stranger may have written, so the hostile corpus (`hostile.py`, which adds these to its `CASES`
and runs `ops` with `{folder}/runtime_ops.txt` on every case) has one folder per attack on it:
each the Arm example beside a list that is a FIFO, a sparse giant, a bracket staircase, an alias
bomb, one endless line, the largest honest list, or names full of escape sequences. `scale`
multiplies the hostile part, past the size cap where that is the point."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support.examples import EXAMPLES

PROGRAM = "lrn_cortex_m_qdq_ethosu85"  # calls aten::avg_pool3d.out and Arm's cortex_m kernels
LIST_NAME = "runtime_ops.txt"  # what hostile.COMMANDS pass to --runtime-ops
PIP = EXAMPLES / "runtimes" / "pip_portable_lib.txt"

Builder = Callable[[Path, int], Path]
RUNTIME_LIST_CASES: dict[str, Builder] = {}


def _case(fn: Builder) -> Builder:
    RUNTIME_LIST_CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def _program(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{PROGRAM}.pte"
    shutil.copyfile(EXAMPLES / f"{PROGRAM}.pte", pte)
    return pte


def _limit() -> int:
    from pte_adapter.container.runtime_list import MAX_BYTES

    return MAX_BYTES


@_case
def case_runtime_list_fifo(folder: Path, scale: int) -> Path:
    """The list is a FIFO (reading it would block forever)."""
    pte = _program(folder)
    os.mkfifo(folder / LIST_NAME)
    return pte


@_case
def case_runtime_list_giant(folder: Path, scale: int) -> Path:
    """A sparse list just past the size cap (times `scale`), starting with real names."""
    pte = _program(folder)
    shutil.copyfile(PIP, folder / LIST_NAME)
    os.truncate(folder / LIST_NAME, (_limit() + 1) * scale)
    return pte


@_case
def case_runtime_list_brackets(folder: Path, scale: int) -> Path:
    """A flow sequence nested 20,000 x scale deep (a recursive reader's stack)."""
    pte = _program(folder)
    depth = min(20_000 * scale, _limit() // 2)
    (folder / LIST_NAME).write_text("[" * depth + "]" * depth)
    return pte


@_case
def case_runtime_list_alias_bomb(folder: Path, scale: int) -> Path:
    """YAML anchors and aliases that would expand to 10**(9 + scale) strings."""
    pte = _program(folder)
    lines = ['a: &a ["aten::add.out", "aten::add.out", "aten::add.out"]']
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]"
        for i in range(9 + scale)
    ]
    (folder / LIST_NAME).write_text("\n".join(lines) + "\n")
    return pte


@_case
def case_runtime_list_endless_line(folder: Path, scale: int) -> Path:
    """One line of letters to just under the cap (past it at ten times)."""
    pte = _program(folder)
    size = _limit() - 16 if scale == 1 else _limit() * scale
    (folder / LIST_NAME).write_bytes(b"aten::x" + b"a" * size)
    return pte


@_case
def case_runtime_list_largest(folder: Path, scale: int) -> Path:
    """The most names and kernel keys a list under the cap holds, at every scale: read and
    checked in full."""
    pte = _program(folder)
    entry = "  ns::op{i}.out:\n  - v1/6;0,1,2,3|6;0,1,2,3\n  - v1/1;0,1|1;0,1\n  - default\n"
    count = (_limit() - 64) // len(entry.format(i=100_000))
    text = "et_kernel_metadata:\n" + "".join(entry.format(i=i) for i in range(count))
    (folder / LIST_NAME).write_text(text + "operators: {}\n")
    return pte


@_case
def case_runtime_list_escapes(folder: Path, scale: int) -> Path:
    """Quoted names holding terminal escape sequences (a clipboard write, a title), and a
    kernel key the program does not use: the check runs, and nothing of the list's is echoed."""
    pte = _program(folder)
    bad = ['"\\x1b]52;c;SGVsbG8=\\x07', '"\\x1b]0;owned\\x07', '"\\x9b31m']
    lines = ["operators:"] + [f'  {b}{i}": {{}}' for i in range(10 * scale) for b in bad]
    lines += ["  aten::avg_pool3d.out: {}", "et_kernel_metadata:", "  aten::avg_pool3d.out:"]
    lines += ["  - v1/1;0,1,2,3", *(f'  {b}{i}":\n  - default' for i in range(scale) for b in bad)]
    (folder / LIST_NAME).write_text("\n".join(lines) + "\n")
    return pte
