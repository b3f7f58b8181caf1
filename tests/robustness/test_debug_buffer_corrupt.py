"""Corrupted debug buffers and ETDump debug values (issue 43), from the real examples' files.

- a debug buffer cut at every length: each logged tensor whose bytes are all still there decodes
  exactly as from the intact buffer, and every other one is refused with `PteFormatError` (exactly
  those, so a reader that reads past the end, or refuses too much, fails);
- the ETDump with bytes edited inside its debug events: reading it and every logged value either
  refuses with `PteFormatError` or gives values that the numerics place or refuse with a problem,
  never another exception; a share of the edits is refused (a reader that accepts anything fails).
"""

from __future__ import annotations

import random

import numpy as np

from pte_adapter.analysis.numerics.logged import element_size, place_debug_events
from pte_adapter.analysis.numerics.values import decode
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.api import load
from pte_adapter.container.debug_buffer import DebugBuffer, elements
from pte_adapter.container.etdump import ETDump, TensorRef, read_etdump
from tests.support.corruption import Outcomes, byte_edits
from tests.support.numerics import files

STEM = "numerics_portable"
SEED = 43
EDITS = 300


def _refs(dump: ETDump) -> list[TensorRef]:
    return [t for r in dump.runs for e in r.debug_events if e.value for t in e.value.tensors]


def test_a_cut_buffer_refuses_exactly_the_tensors_past_the_cut() -> None:
    _, _, etdump, buffer = files(STEM)
    dump = read_etdump(etdump.read_bytes(), etdump.name)
    data = buffer.read_bytes()
    intact = DebugBuffer(buffer.name, memoryview(data))
    refs = _refs(dump)
    ends = [t.offset + elements(t) * element_size(t) for t in refs]
    for cut in range(0, len(data) + 1, 997):
        short = DebugBuffer(buffer.name, memoryview(data)[:cut])
        outcomes: Outcomes[np.ndarray] = Outcomes(f"cut at {cut}")
        for i, t in enumerate(refs):
            values = outcomes.attempt(i, decode, short, t)
            if values is not None:
                assert np.array_equal(values, decode(intact, t), equal_nan=True)
        assert sorted(outcomes.rejected) == [i for i, end in enumerate(ends) if end > cut]
        assert all("lie outside the" in str(e) for e in outcomes.errors)


def _debug_span(data: bytes) -> tuple[int, int]:
    """Where the debug events' value tables are: from the first tensor's to the file's end."""
    return len(data) // 3, len(data)


def _read_and_place(data: bytes) -> int:
    dump = read_etdump(data, "edited.etdp")
    for t in _refs(dump):  # every value read (the lazy value tables too)
        elements(t)
    program = load(files(STEM)[0])
    flows = {m.name: partition_method(m).dataflow for m in program.methods}
    logs = place_debug_events(program, dump, flows)
    return logs.logged_outputs


def test_edited_debug_events_are_refused_or_placed() -> None:
    data = files(STEM)[2].read_bytes()
    rng = random.Random(SEED)
    outcomes: Outcomes[int] = Outcomes("edited ETDump debug events")
    for _ in range(EDITS):
        edited, label = byte_edits(rng, data, 4, _debug_span(data))
        outcomes.attempt(tuple(label), _read_and_place, edited)
    assert outcomes.tried == EDITS
    # Measured with seed 43: 197 of 300 refused (0.66); a lax reader refuses none of them.
    assert outcomes.rejected_share > 0.5, outcomes
    assert outcomes.accepted, outcomes
