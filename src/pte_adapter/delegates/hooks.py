"""The one door to a backend's package: every hook's type, one accessor per hook, one failure policy.

A `Backend` record (`pte_adapter.backends`) names its package's hooks as "module:function" strings,
imported only when used, so a broken decoder cannot stop a file opening. Nothing outside
`delegates/` imports a backend package: it calls the accessor of the hook here, which imports the
function, checks it exists, calls it, and keeps its failure inside one problem.

The failure policy, the same for every hook: a hook whose module is not installed, whose function
is not there (a typo in a record), or which raises (a bug) leaves a problem that names the backend,
the hook and its target (`HookFailure`), on the delegate it was called for (or where the caller
shows problems: `size`'s, a method's, the program's); the view goes on without what the hook would
have added. Never a crash, never a silent "unavailable". A `PteFormatError` a hook raises is the
file's fault, not the hook's: the caller words it (`"EthosUBackend payload: ..."`).

The hooks (`docs/contributing.md`, "Adding a backend", has the same table):

| hook | the function's type |
|---|---|
| `decoder` | `Decoder`: the payload as neutral graphs and numbers |
| `layout` | `LayoutHook`: where each byte of the payload goes (`pte-adapter size`) |
| `side_files` | `SideFilesHook`: attaches what its export's intermediate files say |
| `artifact_folders` | `ArtifactFoldersHook`: the folders a delegate names for those files |
| `partition_rules` | `PartitionRulesHook`: a judge of why its partitioner refused a CPU kernel |
| `partition_report` | `PartitionReportHook`: the partitioner's own report of the export |
| `cpu_rewrites` | `CpuRewritesHook`: what its CPU passes make a kernel from |
| `price_operators` | `PriceOperatorsHook`: CPU kernels priced inside the delegate (the what-if) |
| `profile_events` | `ProfileEventsHook`: its own ETDump events placed on its decoded nodes |
| `file_reader` | `FileReaderHook`: a bare file of its payload format as graphs |
| `compiler_check` | `CompilerCheckHook`: its compiler run on request, beside our estimate |
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from pte_adapter.backends import Backend
from pte_adapter.container.sources import DataSources
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DecodedDelegate, DelegateGraph, PartitionerReport
from pte_adapter.program.model import Delegate, Method, Program

# -- what the hooks are given and give back ---------------------------------------------------------


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


@dataclass
class PayloadSpan:
    """A part of a payload for `size`: absolute file offsets (the payload's own offset added)."""

    kind: str
    name: str
    offset: int  # absolute in the .pte
    size: int
    children: list[PayloadSpan] = field(default_factory=list)
    detail: dict[str, str | int] = field(default_factory=dict)


@dataclass
class PayloadLayout:
    """Where the bytes of one payload go: spans that do not overlap; whatever they leave uncovered
    the caller labels as `filler_kind`. A layout reuses its decoder's readers and never reads
    constant bytes itself."""

    spans: list[PayloadSpan] = field(default_factory=list)
    filler_kind: str = "payload_structure"  # what the uncovered bytes are
    filler_name: str = "payload structure"
    # Named-data keys the payload refers to -> what uses them (e.g. "XNNPACK constant 3").
    named_keys: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class Verdict(NamedTuple):
    """What a backend's partitioner rules (`partition_rules`) say of one CPU kernel."""

    backend: str  # whose rules: "Arm TOSA-1.0+INT+int16+int4+cf", "XNNPACK"
    kind: str  # not_listed | u55 | rank | int64 | not_quantized | not_quantized_or_check | ...
    text: str  # one line, naming the rules' version (or the partitioner's report)
    by: str = "rules"  # "rules": evaluated from the .pte; "partitioner": its own report says so
    # Another target of the same backend whose rules accept the kernel, as a sentence says it
    # ("an Ethos-U85"), and the one whose rules refused it ("the Ethos-U55"); else "".
    accepted_on: str = ""
    refused_on: str = ""


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
    """What one CPU kernel would cost if the neighbouring delegate ran it (`price_operators`): the
    operations its compiler would emit, priced with the same per-operation model as the
    delegate's own estimate. `cycles` is None when the model cannot price it (`why_not` says
    why); 0 for a kernel that vanishes there (a view, the glue)."""

    instruction: int
    operator: str  # "aten.add"
    operations: tuple[str, ...]  # what the delegate would run: ("ELEMENTWISE ADD",)
    cycles: int | None
    why_not: str = ""


class KernelRewrites(NamedTuple):
    """What a backend's CPU passes make a CPU kernel from (`cpu_rewrites`): operators are
    `namespace.name`, e.g. "aten.linear" for "cortex_m::quantized_linear.out"."""

    made_from: frozenset[str] = frozenset()  # the edge operators its passes turn into this kernel
    # Those it takes the place of: it computes the value their node computed (the same shape).
    replaces: frozenset[str] = frozenset()


# A partition_rules judge: (instruction, operator, origin) -> what each rule says.
Judge = Callable[[int, str, KernelOrigin | None], list[Verdict]]
# Per run, the (event name, time) a delegate logged, in order.
ProfileRuns = list[list[tuple[str, float]]]
# Per node its time in each run, and fused node -> the node whose operator ran it.
NodeTimes = tuple[dict[str, list[float]], dict[str, str]]


# -- the hooks' types ---------------------------------------------------------------------------------


class Decoder(Protocol):
    def __call__(self, payload: memoryview, ctx: DecodeContext, /) -> DecodedDelegate: ...


class LayoutHook(Protocol):
    def __call__(
        self, payload: memoryview, base: int, sources: DataSources | None, /
    ) -> PayloadLayout: ...


class SideFilesHook(Protocol):
    def __call__(self, program: Program, delegates: list[Delegate], /) -> None: ...


class ArtifactFoldersHook(Protocol):
    def __call__(self, pte_path: Path, delegate: Delegate, /) -> list[Path]: ...


class PartitionRulesHook(Protocol):
    def __call__(self, method: Method, delegates: list[Delegate], /) -> Judge: ...


class PartitionReportHook(Protocol):
    def __call__(self, pte_path: Path, delegate: Delegate, /) -> PartitionerReport | None: ...


class CpuRewritesHook(Protocol):
    def __call__(self, kernel: str, /) -> KernelRewrites: ...


class PriceOperatorsHook(Protocol):
    def __call__(
        self, method: Method, instructions: list[int], delegate: Delegate, /
    ) -> list[OperatorPrice]: ...


class ProfileEventsHook(Protocol):
    def __call__(self, graph: DelegateGraph, runs: ProfileRuns, /) -> NodeTimes | None: ...


class FileReaderHook(Protocol):
    def __call__(self, path: Path, /) -> list[DelegateGraph]: ...


class CompilerCheckHook(Protocol):
    def __call__(
        self, program: Program, delegates: list[Delegate], timeout: float, /
    ) -> list[dict[str, Any]]: ...


# Each hook field of `Backend` and the type of the function it names: what the hook test checks
# every record against (tests/unit/delegates/test_hooks.py).
HOOK_TYPES: dict[str, type] = {
    "decoder": Decoder,
    "layout": LayoutHook,
    "side_files": SideFilesHook,
    "artifact_folders": ArtifactFoldersHook,
    "partition_rules": PartitionRulesHook,
    "partition_report": PartitionReportHook,
    "cpu_rewrites": CpuRewritesHook,
    "price_operators": PriceOperatorsHook,
    "profile_events": ProfileEventsHook,
    "file_reader": FileReaderHook,
    "compiler_check": CompilerCheckHook,
}


# -- the failure policy ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HookFailure:
    """A hook that could not be used: its module is not installed (`missing`), or it is not
    there or raised (a bug). Its text names the backend, the hook and its target."""

    backend: str
    hook: str
    target: str
    error: str
    missing: bool = False

    def __str__(self) -> str:
        where = f"{self.backend}'s {self.hook} hook ({self.target})"
        if self.missing:
            return f"{where} is not available in this install ({self.error})"
        return (
            f"{where} failed ({self.error}); this is a bug in pte_adapter, please report it with "
            "the file"
        )


class HookError(Exception):
    """Raised only by `resolve`: the hook cannot be used (`failure` says why)."""

    def __init__(self, failure: HookFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


def resolve(record: Backend, hook: str) -> Callable[..., Any] | None:
    """The function a record's hook names, imported; None when the record has no such hook.
    Raises `HookError` when it cannot be had: a module that is not installed (only that is
    "missing"), an error while importing one that is, or no such function in it."""
    target: str | None = getattr(record, hook)
    if target is None:
        return None
    module, _, func = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        missing = e.name is not None and (module == e.name or module.startswith(e.name + "."))
        raise HookError(HookFailure(record.id, hook, target, str(e), missing)) from e
    except Exception as e:
        raise HookError(HookFailure(record.id, hook, target, _error(e))) from e
    found = getattr(mod, func, None)
    if not callable(found):
        error = f"{module} has no function {func!r}"
        raise HookError(HookFailure(record.id, hook, target, error))
    return found  # type: ignore[no-any-return]


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _call(
    record: Backend,
    hook: str,
    problems: list[str],
    args: tuple[Any, ...],
    format_error: str | None = None,
    passes: tuple[type[Exception], ...] = (),
) -> Any:
    """The hook called with `args`; `_FAILED` (and a problem) when it cannot be used or raises.
    A PteFormatError is the input's fault: worded `format_error + str(e)` when given, else
    propagated to the caller, who says what was malformed; so are the exceptions in `passes`."""
    try:
        fn = resolve(record, hook)
    except HookError as e:
        problems.append(str(e.failure))
        return _FAILED
    if fn is None:
        return _FAILED
    try:
        return fn(*args)
    except PteFormatError as e:
        if format_error is None:
            raise
        problems.append(f"{format_error}{e}")
    except passes:
        raise
    except Exception as e:  # a bug in the hook must not lose the view
        problems.append(str(HookFailure(record.id, hook, str(getattr(record, hook)), _error(e))))
    return _FAILED


class _Failed:
    pass


_FAILED: Any = _Failed()


def _ok(value: object) -> bool:
    return value is not _FAILED


# -- one accessor per hook --------------------------------------------------------------------------


def decode(record: Backend, payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    """The `decoder` hook: the payload decoded, never raising; what failed is in `problems`."""
    problems: list[str] = []
    found = _call(record, "decoder", problems, (payload, ctx), f"{record.id} payload: ")
    result: DecodedDelegate = found if _ok(found) else DecodedDelegate()
    result.problems[:0] = problems
    return result


def layout(
    record: Backend, payload: memoryview, base: int, sources: DataSources | None
) -> PayloadLayout:
    """The `layout` hook; a backend without one, or a payload it cannot read, is one opaque span."""
    problems: list[str] = []
    found = _call(record, "layout", problems, (payload, base, sources), "")
    if _ok(found):
        out: PayloadLayout = found
        return out
    how = "unreadable, not broken down" if problems else "parts not broken down"
    return PayloadLayout(
        filler_kind="payload_opaque",
        filler_name=f"{record.id} payload ({how})",
        problems=problems,
    )


def attach_side_files(record: Backend, program: Program, delegates: list[Delegate]) -> None:
    """The `side_files` hook, once for the program's delegates whose records name it."""
    problems: list[str] = []
    _call(record, "side_files", problems, (program, delegates), "side files not read: ")
    for delegate in delegates:
        delegate.decoded.problems += problems


def artifact_folders(record: Backend, pte_path: Path, delegate: Delegate) -> list[Path]:
    """The `artifact_folders` hook: [] when it fails (said on the delegate)."""
    found = _call(record, "artifact_folders", delegate.decoded.problems, (pte_path, delegate), "")
    return list(found) if _ok(found) else []


def partition_report(record: Backend, pte_path: Path, delegate: Delegate) -> None:
    """The `partition_report` hook: the report put on the delegate; an unreadable one is a problem
    of the delegate."""
    found = _call(
        record,
        "partition_report",
        delegate.decoded.problems,
        (pte_path, delegate),
        "partitioner report not used: ",
    )
    if _ok(found):
        delegate.decoded.partitioner_report = found


def partition_rules(record: Backend, method: Method, delegates: list[Delegate]) -> Judge | None:
    """The `partition_rules` hook's judge for these delegates of one partitioner, guarded: a judge
    that raises says nothing of that kernel, and the failure is a problem on the delegates."""
    problems: list[str] = []
    judge = _call(record, "partition_rules", problems, (method, delegates))
    _report(problems, delegates)
    if not _ok(judge):
        return None
    failed: list[str] = []

    def guarded(index: int, operator: str, origin: KernelOrigin | None) -> list[Verdict]:
        try:
            verdicts: list[Verdict] = judge(index, operator, origin)
            return verdicts
        except Exception as e:
            if not failed:  # said once per method, not once per kernel
                failed.append(_error(e))
                text = HookFailure(
                    record.id, "partition_rules", str(record.partition_rules), failed[0]
                )
                _report([str(text)], delegates)
            return []

    return guarded


def cpu_rewrites(record: Backend, problems: list[str]) -> Callable[[str], KernelRewrites] | None:
    """The `cpu_rewrites` hook, guarded: a table that raises rewrites nothing (said once in
    `problems`)."""
    try:
        table = resolve(record, "cpu_rewrites")
    except HookError as e:
        problems.append(str(e.failure))
        return None
    if table is None:
        return None
    found = table

    def guarded(kernel: str) -> KernelRewrites:
        try:
            rewrites: KernelRewrites = found(kernel)
            return rewrites
        except Exception as e:
            text = str(HookFailure(record.id, "cpu_rewrites", str(record.cpu_rewrites), _error(e)))
            if text not in problems:
                problems.append(text)
            return KernelRewrites()

    return guarded


def price_operators(
    record: Backend, method: Method, instructions: list[int], delegate: Delegate
) -> list[OperatorPrice] | None:
    """The `price_operators` hook; None when it fails (said on the delegate)."""
    found = _call(
        record, "price_operators", delegate.decoded.problems, (method, instructions, delegate), ""
    )
    return list(found) if _ok(found) else None


def profile_events(
    record: Backend, graph: DelegateGraph, runs: ProfileRuns, problems: list[str]
) -> NodeTimes | None:
    """The `profile_events` hook; None when the events cannot be placed or it fails (in
    `problems`)."""
    found = _call(record, "profile_events", problems, (graph, runs), "")
    if not _ok(found):
        return None
    placed: NodeTimes | None = found
    return placed


def read_file(record: Backend, path: Path) -> list[DelegateGraph]:
    """The `file_reader` hook: a bare file's graphs. A file that cannot be opened or read, or a
    hook that fails, is a `PteFormatError` naming the file (the file is the whole view)."""
    problems: list[str] = []
    try:
        found = _call(record, "file_reader", problems, (path,), passes=(OSError,))
    except OSError as e:  # missing, a folder, unreadable: the same error a .pte gives
        raise PteFormatError(f"cannot open: {e.strerror or e}", part=str(path)) from e
    if not _ok(found):
        raise PteFormatError(problems[0] if problems else "no reader", part=str(path))
    graphs: list[DelegateGraph] = found
    return graphs


def compiler_check(
    record: Backend, program: Program, delegates: list[Delegate], timeout: float
) -> list[dict[str, Any]]:
    """The `compiler_check` hook: the backend's compiler run on request, one row per delegate; a
    hook that fails is one row with its error."""
    problems: list[str] = []
    found = _call(record, "compiler_check", problems, (program, delegates, timeout), "")
    if _ok(found):
        rows: list[dict[str, Any]] = found
        return rows
    return [{"backend": record.id, "error": p} for p in problems]


def _report(problems: list[str], delegates: list[Delegate]) -> None:
    for delegate in delegates:
        for p in problems:
            if p not in delegate.decoded.problems:
                delegate.decoded.problems.append(p)
