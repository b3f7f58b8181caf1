"""Pick a decoder for a delegate payload and make sure its failure stays inside that delegate.

Which decoder reads which backend, and which magic bytes identify a payload, is in each backend's
record (`pte_adapter.backends`); `hook` imports any of a record's hooks by name. A payload whose id is unknown is still sniffed by its magic bytes;
anything else gets the opaque view (id, compile specs, size, a hex/ASCII preview) so the file
always opens. A decoder that is missing from the install and a decoder that fails (a bug) are
reported differently: only the first is "not available".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pte_adapter.backends import BACKENDS, sniff
from pte_adapter.container.sources import DataSources
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate
from pte_adapter.program.model import Delegate, Program


@dataclass
class DecodeContext:
    """What a decoder may know besides the payload bytes."""

    delegate_id: str
    compile_specs: dict[str, bytes] = field(default_factory=dict)
    sources: DataSources | None = None  # resolves named-data keys (.pte segments, .ptd files)
    pte_path: Path | None = None
    payload_offset: int | None = None  # absolute offset of the payload in the .pte (for errors)

    def spec_text(self, key: str) -> str | None:
        raw = self.compile_specs.get(key)
        return None if raw is None else raw.decode("utf-8", errors="replace")

    def missing_constants(self, keys: list[str]) -> str:
        """The problem of a payload whose constants name data found in neither the .pte nor a
        .ptd beside it (`keys`: the named-data keys not found, in the payload's order)."""
        return (
            f"{len(keys)} constant(s) name data that is in neither the .pte nor a .ptd "
            f"beside it (first key {keys[0]!r})"
            + (f"; searched {self.sources.searched()}" if self.sources is not None else "")
        )


Decoder = Callable[[memoryview, DecodeContext], DecodedDelegate]


def hex_preview(payload: memoryview, n: int = 64) -> str:
    head = bytes(payload[:n])
    hexpart = head.hex(" ")
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in head)
    more = " ..." if len(payload) > n else ""
    return f"{hexpart}{more} |{text}|"


class Verdict(NamedTuple):
    """What a backend's partitioner rules (`Backend.partition_rules`) say of one CPU kernel."""

    backend: str  # whose rules: "Arm TOSA-1.0+INT+int16+int4+cf", "XNNPACK"
    kind: str  # not_listed | u55 | rank | int64 | not_quantized | not_quantized_or_check | ...
    text: str  # one line, naming the rules' version (or the partitioner's report)
    by: str = "rules"  # "rules": evaluated from the .pte; "partitioner": its own report says so
    # Another target of the same backend whose rules accept the kernel ("Ethos-U85"), else "".
    accepted_on: str = ""


class KernelOrigin(NamedTuple):
    """Where a CPU kernel came from, as far as the analysis knows: the third argument of a
    `partition_rules` judge. Operators are `namespace.name` ("aten.linear")."""

    operators: tuple[str, ...]  # the edge operators of the kernel's layer, before any CPU pass
    nodes: tuple[str, ...] = ()  # their edge-graph node names (from the ETRecord)
    rewritten: bool = False  # a CPU pass made the kernel of those operators (it is none of them)
    recorded: bool = True  # the ETRecord says so; False: only the backends' rewrite tables do
    # Its floating-point inputs all come from dequantize kernels and its results all go into
    # quantize kernels: the quantizer may have annotated it, and something else kept it off.
    between_qdq: bool = False


# `OperatorPrice.operations` of a kernel the delegate's compiler folds into the operation before it
# (a clamp after a convolution).
FUSED = "fused"


class OperatorPrice(NamedTuple):
    """What one CPU kernel would cost if the neighbouring delegate ran it
    (`Backend.price_operators`): the operations its compiler would emit, priced with the same
    per-operation model as the delegate's own estimate. `cycles` is None when the model cannot
    price it (`why_not` says why); 0 for a kernel that vanishes there (a view, the glue)."""

    instruction: int
    operator: str  # "aten.add"
    operations: tuple[str, ...]  # what the delegate would run: ("ELEMENTWISE ADD",)
    cycles: int | None
    why_not: str = ""


class KernelRewrites(NamedTuple):
    """What a backend's CPU passes make a CPU kernel from (`Backend.cpu_rewrites`): operators are
    `namespace.name`, e.g. "aten.linear" for "cortex_m::quantized_linear.out"."""

    made_from: frozenset[str] = frozenset()  # the edge operators its passes turn into this kernel
    # Those it takes the place of: it computes the value their node computed (the same shape).
    replaces: frozenset[str] = frozenset()


class DecoderUnavailable(Exception):
    """The decoder's module is not part of this install (not a bug in it)."""


def hook(target: str) -> Callable[..., Any]:
    """Import a backend hook named "module:function" (`Backend.decoder`, `.layout`, ...). Only a
    missing module is `DecoderUnavailable`; an error raised while importing a module that exists
    is a bug and propagates as it is."""
    module, _, func = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and (module == e.name or module.startswith(e.name + ".")):
            raise DecoderUnavailable(str(e)) from e
        raise
    found: Callable[..., Any] | None = getattr(mod, func, None)
    if found is None:
        raise AttributeError(f"{module} has no function {func!r}")
    return found


def _delegates_with(program: Program, hook_name: str) -> Iterator[tuple[Delegate, str]]:
    """Each delegate of the program whose backend's record has the hook, with the hook's target."""
    for method in program.methods:
        for delegate in method.delegates:
            info = BACKENDS.get(delegate.id)
            target = getattr(info, hook_name) if info is not None else None
            if target is not None:
                yield delegate, target


def attach_partition_reports(program: Program) -> None:
    """Give each delegate the partitioner's own report of its export, where its backend knows
    where to look (`Backend.partition_report`); an unreadable one is a problem of the delegate."""
    if program.path is None:
        return
    for delegate, target in _delegates_with(program, "partition_report"):
        try:
            report = hook(target)(program.path, delegate)
        except DecoderUnavailable:
            continue
        except PteFormatError as e:
            delegate.decoded.problems.append(f"partitioner report not used: {e}")
            continue
        delegate.decoded.partitioner_report = report


def attach_side_files(program: Program) -> None:
    """Let each backend that finds side files (`Backend.side_files`) attach what they say to its
    delegates: each such hook once, with the program's delegates whose records name it; call after
    every payload is decoded."""
    if program.path is None:
        return
    by_hook: dict[str, list[Delegate]] = {}
    for delegate, target in _delegates_with(program, "side_files"):
        by_hook.setdefault(target, []).append(delegate)
    for target, delegates in by_hook.items():
        try:
            attach = hook(target)
        except DecoderUnavailable:
            continue
        attach(program, delegates)


def artifact_folders(program: Program) -> tuple[Path, ...]:
    """The folders, other than the program's own and those directly in it, that its delegates name
    for their side files (`Backend.artifact_folders`), each once, in the order first named."""
    if program.path is None:
        return ()
    folders: dict[Path, None] = {}
    for delegate, target in _delegates_with(program, "artifact_folders"):
        try:
            named = hook(target)(program.path, delegate)
        except DecoderUnavailable:
            continue
        folders.update(dict.fromkeys(named))
    return tuple(folders)


def decode_payload(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    """Decode one payload; never raises. Problems end up in `DecodedDelegate.problems`."""
    info = BACKENDS.get(ctx.delegate_id)
    backend = ctx.delegate_id if info is not None and info.decoder else sniff(payload)
    result: DecodedDelegate | None = None
    problems: list[str] = []
    target = BACKENDS[backend].decoder if backend is not None else None
    if backend is not None and target is not None:
        try:
            decoder: Decoder = hook(target)
            result = decoder(payload, ctx)
        except DecoderUnavailable as e:
            problems.append(f"no decoder for {backend} payloads is available in this install ({e})")
        except PteFormatError as e:
            problems.append(f"{backend} payload: {e}")
        except Exception as e:  # a decoder bug must not lose the whole file
            problems.append(
                f"{backend} payload could not be decoded ({type(e).__name__}: {e}); "
                "this is a bug in pte_adapter, please report it with the file"
            )
    if result is None:
        result = DecodedDelegate()
    result.problems[:0] = problems
    if not result.graphs or result.problems:  # a decoded payload is its graph: no hex needed
        result.summary.setdefault("payload_preview", hex_preview(payload))
    if backend is not None and backend != ctx.delegate_id:
        result.summary["payload_recognised_as"] = backend
    return result
