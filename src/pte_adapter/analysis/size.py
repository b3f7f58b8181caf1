"""Where the bytes of a `.pte` go: a byte-exact tree of the file, for `pte-adapter size`.

Every byte of the file is in exactly one leaf: the 8-byte header, the extended header, the program
FlatBuffer (minus the delegate payloads and constant buffers stored inline in it), each segment
(delegate payloads, the constant segment, mutable data, named data) and, inside delegate payloads,
their parts (each backend's `layout` hook, `delegates/hooks.py`). Bytes nothing claims are named for where they sit
(padding between segments, payload padding), so the leaves always add up to the file size: a part
that overlaps another (a corrupt file) is clipped and reported as a problem instead.

Constant tensors are listed with the instructions that read them; named data with what uses it;
external `.ptd` data (not part of the file) separately.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from pte_adapter.analysis.size_constants import ConstantEntry, delegate_constants
from pte_adapter.backends import backend_info
from pte_adapter.container._generated import program_schema as S
from pte_adapter.container.pte import PteFile
from pte_adapter.delegates import hooks
from pte_adapter.delegates.hooks import PayloadSpan
from pte_adapter.errors import PteFormatError
from pte_adapter.program.model import Delegate, InstructionKind, Method, Program, Tensor
from pte_adapter.wording import shape_text

FILE_HEADER_BYTES = 8  # u32 root offset + identifier "ET12"


@dataclass
class SizePart:
    kind: str  # stable machine name, e.g. "delegate_payload", "npu_weights", "padding"
    name: str  # what a person reads
    offset: int  # absolute in the .pte
    size: int
    children: list[SizePart] = field(default_factory=list)  # cover [offset, offset+size) exactly
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def end(self) -> int:
        return self.offset + self.size

    def leaves(self) -> list[SizePart]:
        if not self.children:
            return [self]
        return [leaf for c in self.children for leaf in c.leaves()]


@dataclass
class NamedEntry:
    key: str
    nbytes: int
    source: str  # file holding the bytes
    used_by: list[str]


@dataclass
class ExternalFile:
    file: str
    size: int
    referenced_bytes: int  # bytes of entries this program refers to
    entries: list[NamedEntry]


@dataclass
class SizeReport:
    file: str
    file_size: int
    root: SizePart
    constants: list[ConstantEntry]
    named_data: list[NamedEntry]
    external: list[ExternalFile]
    problems: list[str]

    def leaves(self) -> list[SizePart]:
        return self.root.leaves()

    def totals(self) -> dict[str, int]:
        """Bytes per leaf kind, largest first; they add up to the file size."""
        out: Counter[str] = Counter()
        for leaf in self.leaves():
            out[leaf.kind] += leaf.size
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def delegate_totals(self) -> dict[str, dict[str, int]]:
        """Per delegate payload part name ("forward delegate 0"): bytes per leaf kind."""
        out: dict[str, dict[str, int]] = {}

        def walk(part: SizePart) -> None:
            if part.kind == "delegate_payload":
                totals: Counter[str] = Counter()
                for leaf in part.leaves():
                    totals[leaf.kind] += leaf.size
                for label in part.detail.get("delegates", []):
                    out[label] = dict(totals)
                return
            for c in part.children:
                walk(c)

        walk(self.root)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "file_size": self.file_size,
            "totals": self.totals(),
            "delegates": self.delegate_totals(),
            "layout": asdict(self.root),
            "constants": [asdict(c) for c in self.constants],
            "named_data": [asdict(n) for n in self.named_data],
            "external": [asdict(e) for e in self.external],
            "problems": list(self.problems),
        }


def cover(parent: SizePart, filler_kind: str, filler_name: str, problems: list[str]) -> None:
    """Sort `parent.children`, clip overlaps (reported) and fill the gaps with filler parts, so
    the children cover the parent exactly."""
    out: list[SizePart] = []
    pos = parent.offset
    for c in sorted(parent.children, key=lambda p: (p.offset, -p.size)):
        if c.size <= 0:
            continue
        if c.offset < pos or c.end > parent.end:
            lo, hi = max(c.offset, pos), min(c.end, parent.end)
            problems.append(
                f"{c.name} [{c.offset}, {c.end}) overlaps another part or lies outside "
                f"{parent.name} [{parent.offset}, {parent.end}); counted from {lo} to {hi}"
            )
            if lo >= hi:
                continue
            c = SizePart(c.kind, c.name, lo, hi - lo, [], c.detail)
        if c.offset > pos:
            out.append(SizePart(filler_kind, filler_name, pos, c.offset - pos))
        out.append(c)
        pos = c.end
    if out and pos < parent.end:
        out.append(SizePart(filler_kind, filler_name, pos, parent.end - pos))
    parent.children = out


def _from_payload_span(s: PayloadSpan, problems: list[str]) -> SizePart:
    part = SizePart(
        s.kind,
        s.name,
        s.offset,
        s.size,
        [_from_payload_span(c, problems) for c in s.children],
        dict(s.detail),
    )
    if part.children:
        cover(part, "padding", "padding", problems)
    return part


class _Builder:
    def __init__(self, program: Program, pte: PteFile) -> None:
        self.program = program
        self.pte = pte
        self.problems: list[str] = []
        self.named_users: dict[str, list[str]] = defaultdict(list)
        # (kind, buffer index) -> [(method, value index, tensor)]
        self.tensors_of: dict[tuple[str, int], list[tuple[Method, int, Tensor]]] = defaultdict(list)
        self.readers_of: dict[tuple[str, int], list[int]] = defaultdict(list)  # (method, value)
        self.readers: dict[tuple[int, int], list[str]] = defaultdict(list)
        self.constants: list[ConstantEntry] = []
        self._index_constants()

    # -- who reads what ------------------------------------------------------------------------

    def _index_constants(self) -> None:
        for mi, m in enumerate(self.program.methods):
            for v in m.values:
                t = m.tensor(v.index)
                if t is not None and t.constant is not None:
                    c = t.constant
                    key = ("mutable" if c.kind == "mutable_segment" else c.kind, c.buffer_index)
                    self.tensors_of[key].append((m, v.index, t))
            for ins in m.instructions:
                if ins.kind not in (InstructionKind.KERNEL, InstructionKind.DELEGATE):
                    continue
                what = _instruction_label(m, ins.kind, ins.op_index, ins.delegate_index)
                for a in dict.fromkeys(ins.args):
                    self.readers[(mi, a)].append(f"{m.name} #{ins.index} {what}")

    def _method_index(self, m: Method) -> int:
        return next(i for i, x in enumerate(self.program.methods) if x is m)

    def _constant_part(self, key: tuple[str, int], where: str, offset: int, size: int) -> SizePart:
        """One constant buffer: tensor bytes, then its alignment padding."""
        users = self.tensors_of.get(key, [])
        nbytes = min(max((t.nbytes for _, _, t in users), default=size), size)
        tensors = [f"{m.name} value {vi}: {shape_text(t.sizes)} {t.dtype}" for m, vi, t in users]
        readers = [
            r for m, vi, _ in users for r in self.readers.get((self._method_index(m), vi), [])
        ]
        named = next((t.fqn for _, _, t in users if t.fqn), "")
        label = named or (tensors[0] if tensors else f"{where} (no tensor refers to it)")
        self.constants.append(ConstantEntry(label, nbytes, where, offset, tensors, readers))
        kind = "mutable_tensor" if key[0] == "mutable" else "constant_tensor"
        part = SizePart(
            kind,
            f"{where}: {label}",
            offset,
            size,
            detail={"buffer": key[1], "tensors": tensors, "readers": readers},
        )
        if nbytes < size:
            part.children = [
                SizePart(kind, f"{where} data", offset, nbytes),
                SizePart("padding", "buffer alignment padding", offset + nbytes, size - nbytes),
            ]
        return part

    # -- the file ------------------------------------------------------------------------------

    def build(self) -> SizePart:
        pte = self.pte
        root = SizePart("file", pte.name, 0, pte.size)
        root.children.append(
            SizePart("header", "header (root offset, 'ET12')", 0, min(FILE_HEADER_BYTES, pte.size))
        )
        fb_start = FILE_HEADER_BYTES
        if pte.header is not None:
            root.children.append(
                SizePart("extended_header", "extended header 'eh00'", 8, pte.header.length)
            )
            fb_start = 8 + pte.header.length
        program_size = self.program.program_size
        flat = SizePart(
            "program_flatbuffer", "program FlatBuffer", fb_start, max(program_size - fb_start, 0)
        )
        flat.children = self._inline_parts()
        cover(
            flat,
            "program_flatbuffer",
            "program FlatBuffer (tables, strings, vectors)",
            self.problems,
        )
        root.children.append(flat)
        root.children.extend(self._segment_parts())
        cover(root, "padding", "padding", self.problems)
        return root

    def _delegate_users(self) -> dict[tuple[str, int], list[tuple[Method, Delegate]]]:
        users: dict[tuple[str, int], list[tuple[Method, Delegate]]] = defaultdict(list)
        for m in self.program.methods:
            for d in m.delegates:
                users[(d.storage, d.data_index)].append((m, d))
        return users

    def _payload_part(
        self, offset: int, size: int, name: str, users: list[tuple[Method, Delegate]]
    ) -> SizePart:
        labels = [f"{m.name} delegate {d.index}" for m, d in users]
        backend = users[0][1].id if users else ""
        part = SizePart(
            "delegate_payload",
            f"{name}: {backend or 'unused'} payload "
            f"({', '.join(labels) or 'no delegate refers to it'})",
            offset,
            size,
            detail={"backend": backend, "delegates": labels},
        )
        if not users:
            return part
        view = self.pte.data[offset : offset + size]
        layout = hooks.layout(backend_info(backend), view, offset, self.program.sources)
        self.problems += [f"{name}: {p}" for p in layout.problems]
        for key, use in layout.named_keys.items():
            self.named_users[key].append(f"{labels[0]} {use}")
        part.children = [_from_payload_span(s, self.problems) for s in layout.spans]
        if part.children:
            cover(part, layout.filler_kind, layout.filler_name, self.problems)
        else:
            part.children = [SizePart(layout.filler_kind, layout.filler_name, offset, size)]
        return part

    def _inline_parts(self) -> list[SizePart]:
        """Delegate payloads and legacy constant buffers stored inside the program FlatBuffer."""
        parts: list[SizePart] = []
        users = self._delegate_users()
        root = self.pte.root
        for i, entry in enumerate(
            root.iter_tables(S.Program.backend_delegate_data, "backend_delegate_data")
        ):
            span = entry.bytes_span(S.BackendDelegateInlineData.data, "data")
            if span is not None and span[1]:
                parts.append(
                    self._payload_part(
                        span[0], span[1], f"inline delegate data {i}", users.get(("inline", i), [])
                    )
                )
        if root.table(S.Program.constant_segment, "constant_segment") is None:
            for i, buf in enumerate(root.iter_tables(S.Program.constant_buffer, "constant_buffer")):
                span = buf.bytes_span(S.Buffer.storage, "storage")
                if span is not None and span[1]:
                    parts.append(
                        self._constant_part(
                            ("inline_buffer", i), f"inline constant_buffer[{i}]", *span
                        )
                    )
        return parts

    def _segment_parts(self) -> list[SizePart]:
        segs = self.pte.segments
        roles: dict[int, SizePart] = {}
        delegate_users = self._delegate_users()
        for i, span in enumerate(segs):
            users = delegate_users.get(("segment", i))
            if users:
                roles[i] = self._payload_part(span.offset, span.size, f"segment {i}", users)
        self._buffer_segments(roles)
        for nd in self.program.named_data:
            idx = nd.segment_index
            if 0 <= idx < len(segs) and idx not in roles:
                roles[idx] = SizePart(
                    "named_data",
                    f"segment {idx}: named data {nd.key!r}",
                    segs[idx].offset,
                    segs[idx].size,
                    detail={"key": nd.key},
                )
        parts = []
        for i, span in enumerate(segs):
            part = roles.get(i) or SizePart(
                "segment_unreferenced",
                f"segment {i} (nothing refers to it)",
                span.offset,
                span.size,
            )
            if span.end > self.pte.size:
                self.problems.append(
                    f"segment {i} [{span.offset}, {span.end}) runs past the end "
                    f"of the {self.pte.size}-byte file"
                )
            part.detail["segment"] = i
            parts.append(part)
        return parts

    def _buffer_segments(self, roles: dict[int, SizePart]) -> None:
        """The constant segment and the mutable data segments, buffer by buffer."""
        root, segs = self.pte.root, self.pte.segments
        cs = root.table(S.Program.constant_segment, "constant_segment")
        if cs is not None:
            idx = cs.int(S.SubsegmentOffsets.segment_index, "I")
            if 0 <= idx < len(segs) and idx not in roles:
                roles[idx] = self._buffers_part(
                    "constant_segment",
                    f"segment {idx}: constant segment",
                    segs[idx].offset,
                    segs[idx].size,
                    cs.ints(S.SubsegmentOffsets.offsets, "Q", "offsets"),
                    "constant",
                    "constant_segment[{}]",
                )
        mutable = root.iter_tables(S.Program.mutable_data_segments, "mutable_data_segments")
        for k, t in enumerate(mutable):
            idx = t.int(S.SubsegmentOffsets.segment_index, "I")
            if 0 <= idx < len(segs) and idx not in roles:
                roles[idx] = self._buffers_part(
                    "mutable_segment",
                    f"segment {idx}: mutable data {k}",
                    segs[idx].offset,
                    segs[idx].size,
                    t.ints(S.SubsegmentOffsets.offsets, "Q", "offsets"),
                    "mutable",
                    f"mutable_segment {k}" + "[{}]",
                )

    def _buffers_part(
        self,
        kind: str,
        name: str,
        offset: int,
        size: int,
        offsets: list[int],
        key_kind: str,
        where: str,
    ) -> SizePart:
        part = SizePart(kind, name, offset, size)
        bounds = [*offsets, size]
        for i, start in enumerate(offsets):
            end = min(bounds[i + 1], size) if bounds[i + 1] >= start else size
            if end <= start:
                continue
            lookup = "constant_segment" if key_kind == "constant" else "mutable"
            part.children.append(
                self._constant_part((lookup, i), where.format(i), offset + start, end - start)
            )
        cover(part, "padding", "padding", self.problems)
        return part


def _instruction_label(m: Method, kind: InstructionKind, op: int | None, d: int | None) -> str:
    if kind is InstructionKind.KERNEL:
        operator = m.operator_of(op)
        return operator.full_name if operator is not None else "?"
    return m.delegates[d].id if d is not None and 0 <= d < len(m.delegates) else "delegate ?"


def _named_entries(b: _Builder, root: SizePart) -> list[NamedEntry]:
    out = []
    for leaf in _walk(root):
        if leaf.kind == "named_data":
            key = str(leaf.detail.get("key", ""))
            out.append(NamedEntry(key, leaf.size, b.pte.name, b.named_users.get(key, [])))
    return sorted(out, key=lambda e: (-e.nbytes, e.key))


def _walk(part: SizePart) -> list[SizePart]:
    return [part] + [p for c in part.children for p in _walk(c)]


def _external(program: Program, b: _Builder) -> list[ExternalFile]:
    """The .ptd files beside the .pte and the entries of them this program refers to."""
    if program.sources is None:
        return []
    wanted: dict[str, list[str]] = defaultdict(list)
    for key, users in b.named_users.items():
        wanted[key] += users
    for m in program.methods:
        for v in m.values:
            t = m.tensor(v.index)
            if t is not None and t.constant is not None and t.constant.kind == "external":
                wanted[t.constant.key].append(
                    f"{m.name} value {v.index} ({shape_text(t.sizes)} {t.dtype})"
                )
    out = []
    for ptd in program.sources.ptd_files:
        entries = [
            NamedEntry(k, e.span.size, ptd.name, wanted[k])
            for k, e in ptd.entries.items()
            if k in wanted
        ]
        if not entries:
            continue  # a .ptd of another program in the same folder
        entries.sort(key=lambda e: (-e.nbytes, e.key))
        out.append(ExternalFile(ptd.name, ptd.size, sum(e.nbytes for e in entries), entries))
    b.problems += program.sources.ptd_problems
    return out


def size_report(program: Program) -> SizeReport:
    """The byte-exact breakdown of a loaded program (`pte_adapter.load`)."""
    if program.sources is None:
        raise PteFormatError("the program was loaded without its file; cannot measure it")
    b = _Builder(program, program.sources.pte)
    root = b.build()
    constants = sorted(
        b.constants + delegate_constants(program), key=lambda c: (-c.nbytes, c.owner, c.where)
    )
    return SizeReport(
        file=program.path.name if program.path else program.sources.pte.name,
        file_size=program.sources.pte.size,  # the program's bytes (a bundle: bundle_size.py)
        root=root,
        constants=constants,
        named_data=_named_entries(b, root),
        external=_external(program, b),
        problems=b.problems,
    )
