"""Pick a decoder for a delegate payload and make sure its failure stays inside that delegate.

Adding a backend = one module with `decode(payload, ctx) -> DecodedDelegate` and one line in
`DECODERS`. A payload whose id is unknown is still sniffed by its magic bytes; anything else gets
the opaque view (id, compile specs, size, a hex/ASCII preview) so the file always opens.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pte_adapter.container.sources import DataSources
from pte_adapter.delegates.graph import DecodedDelegate
from pte_adapter.errors import PteFormatError


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


Decoder = Callable[[memoryview, DecodeContext], DecodedDelegate]

# Backend id -> "module:function". Imported lazily so a broken decoder cannot stop the file opening.
DECODERS: dict[str, str] = {
    "EthosUBackend": "pte_adapter.delegates.ethosu:decode",
    "TOSABackend": "pte_adapter.delegates.tosa:decode",
    "XnnpackBackend": "pte_adapter.delegates.xnnpack:decode",
    "VgfBackend": "pte_adapter.delegates.vgf:decode",
}

# Magic bytes -> backend id, for payloads whose id we do not recognise (renamed/custom backends).
MAGICS: list[tuple[int, bytes, str]] = [
    (0, b"vela_bin_stream\x00", "EthosUBackend"),
    (4, b"TOSA", "TOSABackend"),
    (4, b"XH00", "XnnpackBackend"),
    (0, b"VGF1", "VgfBackend"),
]


def sniff(payload: memoryview) -> str | None:
    for offset, magic, backend in MAGICS:
        if bytes(payload[offset : offset + len(magic)]) == magic:
            return backend
    return None


def hex_preview(payload: memoryview, n: int = 64) -> str:
    head = bytes(payload[:n])
    hexpart = head.hex(" ")
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in head)
    more = " ..." if len(payload) > n else ""
    return f"{hexpart}{more} |{text}|"


def _load(target: str) -> Decoder | None:
    module, _, func = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    decoder: Decoder | None = getattr(mod, func, None)
    return decoder


def decode_payload(payload: memoryview, ctx: DecodeContext) -> DecodedDelegate:
    """Decode one payload; never raises. Problems end up in `DecodedDelegate.problems`."""
    backend = ctx.delegate_id if ctx.delegate_id in DECODERS else sniff(payload)
    result: DecodedDelegate | None = None
    problems: list[str] = []
    if backend is not None:
        decoder = _load(DECODERS[backend])
        if decoder is None:
            problems.append(f"no decoder for {backend} payloads is available in this install")
        else:
            try:
                result = decoder(payload, ctx)
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
    result.summary.setdefault("payload_preview", hex_preview(payload))
    if backend is not None and backend != ctx.delegate_id:
        result.summary["payload_recognised_as"] = backend
    return result
