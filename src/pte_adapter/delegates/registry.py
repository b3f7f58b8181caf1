"""Run the hooks over a program: decode every payload, attach side files and partitioner reports,
gather the folders its delegates name; each through its accessor in `hooks.py`, never raising.

Which decoder reads which backend, and which magic bytes identify a payload, is in each backend's
record (`pte_adapter.backends`). A payload whose id is unknown is still sniffed by its magic bytes;
anything else gets the opaque view (id, compile specs, size, a hex/ASCII preview) so the file
always opens. A hook that fails is a problem on its delegate (`hooks.py`'s one policy).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pte_adapter.backends import BACKENDS, Backend, sniff
from pte_adapter.delegates import hooks
from pte_adapter.delegates.hooks import DecodeContext
from pte_adapter.program.delegate_graph import DecodedDelegate
from pte_adapter.program.model import Delegate, Program


def hex_preview(payload: memoryview, n: int = 64) -> str:
    head = bytes(payload[:n])
    hexpart = head.hex(" ")
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in head)
    more = " ..." if len(payload) > n else ""
    return f"{hexpart}{more} |{text}|"


def _delegates_with(program: Program, hook_name: str) -> Iterator[tuple[Delegate, Backend]]:
    """Each delegate of the program whose backend's record has the hook, with the record."""
    for method in program.methods:
        for delegate in method.delegates:
            info = BACKENDS.get(delegate.id)
            if info is not None and getattr(info, hook_name) is not None:
                yield delegate, info


def attach_partition_reports(program: Program) -> None:
    """Give each delegate the partitioner's own report of its export, where its backend knows
    where to look (`Backend.partition_report`); an unreadable one is a problem of the delegate."""
    if program.path is None:
        return
    for delegate, record in _delegates_with(program, "partition_report"):
        hooks.partition_report(record, program.path, delegate)


def attach_side_files(program: Program) -> None:
    """Let each backend that finds side files (`Backend.side_files`) attach what they say to its
    delegates: each such hook once, with the program's delegates whose records name it; call after
    every payload is decoded."""
    if program.path is None:
        return
    by_hook: dict[str, tuple[Backend, list[Delegate]]] = {}
    for delegate, record in _delegates_with(program, "side_files"):
        assert record.side_files is not None
        by_hook.setdefault(record.side_files, (record, []))[1].append(delegate)
    for record, delegates in by_hook.values():
        hooks.attach_side_files(record, program, delegates)


def artifact_folders(program: Program) -> tuple[Path, ...]:
    """The folders, other than the program's own and those directly in it, that its delegates name
    for their side files (`Backend.artifact_folders`), each once, in the order first named."""
    if program.path is None:
        return ()
    folders: dict[Path, None] = {}
    for delegate, record in _delegates_with(program, "artifact_folders"):
        folders.update(dict.fromkeys(hooks.artifact_folders(record, program.path, delegate)))
    return tuple(folders)


def compiler_checks(program: Program, timeout: float) -> list[dict[str, Any]]:
    """Each backend's compiler run on request on its delegates (`Backend.compiler_check`: Vela for
    Ethos-U, `pte-adapter vela`), one row per delegate; annotates their graphs."""
    by_hook: dict[str, tuple[Backend, list[Delegate]]] = {}
    for delegate, record in _delegates_with(program, "compiler_check"):
        assert record.compiler_check is not None
        by_hook.setdefault(record.compiler_check, (record, []))[1].append(delegate)
    rows: list[dict[str, Any]] = []
    for record, delegates in by_hook.values():
        rows += hooks.compiler_check(record, program, delegates, timeout)
    return rows


def decode_payload(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    """Decode one payload; never raises. Problems end up in `DecodedDelegate.problems`."""
    info = BACKENDS.get(ctx.delegate_id)
    backend = ctx.delegate_id if info is not None and info.decoder else sniff(payload)
    record = BACKENDS[backend] if backend is not None else None
    result = hooks.decode(record, payload, ctx) if record is not None else DecodedDelegate()
    if not result.graphs or result.problems:  # a decoded payload is its graph: no hex needed
        result.summary.setdefault("payload_preview", hex_preview(payload))
    if backend is not None and backend != ctx.delegate_id:
        result.summary["payload_recognised_as"] = backend
    return result
