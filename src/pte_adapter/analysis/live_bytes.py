"""How many arena bytes are live at each instruction, each byte once (the memory picture's live
bytes, `analysis/memory.py`): two exact ways, the cheaper for a method's tensors.

A tensor is live from its first to its last instruction (`TensorLife.first`, `.last`) over its
byte range (`.offset`, `.nbytes`); two tensors that share bytes (a view and its base) add the
union of their ranges, not the sum."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the lifetimes are memory.py's; this reads their fields only
    from pte_adapter.analysis.memory import TensorLife


def union_bytes(ranges: list[tuple[int, int]] | list[tuple[int, int, int]]) -> int:
    """Bytes covered by these [start, end) ranges, each byte once (a range may carry more after
    its end: it is not read)."""
    total, reach = 0, None
    for r in sorted(ranges):
        start, end = r[0], r[1]
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def live_bytes(lives: list[TensorLife], steps: int) -> list[int]:
    """Per instruction: the bytes of the tensors live there, overlapping ranges counted once.

    Two exact ways, the cheaper for these tensors: step by step, the union of the live ranges
    (work: the tensors' lifetimes summed), or a sweep over the arena's elementary segments (work:
    the segments each range spans). A transformer's residual stream keeps tensors live across the
    whole method, which made the first quadratic (0.3 s of 2.6 on a 192-layer program); a
    portable program reuses its arena so finely that a range can span hundreds of segments."""
    counted = [t for t in lives if 0 <= t.first < steps]  # the others are never live
    # The work of each way, roughly (the choice changes no result, only the cost): a lifetime
    # past the last instruction counts to its end.
    last = steps - 1
    lifetimes = sum([t.last if t.last < last else last for t in counted]) - sum(
        [t.first - 1 for t in counted]
    )
    if lifetimes <= 4 * len(counted):
        # Short lives: every range spans a segment at least, and making the segments costs more
        # than the steps would.
        return _live_bytes_by_step(counted, steps)
    cuts, where = _segments(counted)
    spans = sum([where[t.offset + t.nbytes] - where[t.offset] for t in counted if t.nbytes > 0])
    if 2 * spans < lifetimes:
        return _live_bytes_by_segment(counted, steps, cuts, where)
    return _live_bytes_by_step(counted, steps)


def _segments(lives: list[TensorLife]) -> tuple[list[int], dict[int, int]]:
    """The arena's range ends in order, and each one's position among them."""
    ranged = [t for t in lives if t.nbytes > 0]
    cuts = sorted({*[t.offset for t in ranged], *[t.offset + t.nbytes for t in ranged]})
    return cuts, {x: k for k, x in enumerate(cuts)}


def _live_bytes_by_step(lives: list[TensorLife], steps: int) -> list[int]:
    # Each tensor as its byte range and last instruction, made once (not once per step).
    starting: dict[int, list[tuple[int, int, int]]] = {}
    for t in lives:
        starting.setdefault(t.first, []).append((t.offset, t.offset + t.nbytes, t.last))
    active: list[tuple[int, int, int]] = []
    out: list[int] = []
    for i in range(steps):
        active = [r for r in active if r[2] >= i]
        new = starting.get(i)
        if new:
            active += new
        out.append(union_bytes(active))
    return out


def _live_bytes_by_segment(
    lives: list[TensorLife], steps: int, cuts: list[int], where: dict[int, int]
) -> list[int]:
    """Each range counted onto the segments between consecutive range ends (`cuts`) at its first
    instruction and off after its last; a segment's bytes are live while its count is above 0."""
    widths = [b - a for a, b in itertools.pairwise(cuts)]
    count = [0] * len(widths)
    events: dict[int, list[tuple[int, int, int]]] = {}
    for t in lives:
        if t.nbytes > 0:
            a, b = where[t.offset], where[t.offset + t.nbytes]
            events.setdefault(t.first, []).append((a, b, 1))
            events.setdefault(max(t.last, t.first) + 1, []).append((a, b, -1))
    live, out = 0, []
    for i in range(steps):
        for a, b, step in events.get(i, ()):
            # On and off apart: the inner loop is the work of this way, one test per segment.
            if step > 0:
                for k in range(a, b):
                    c = count[k]
                    if not c:
                        live += widths[k]
                    count[k] = c + 1
            else:
                for k in range(a, b):
                    c = count[k] - 1
                    count[k] = c
                    if not c:
                        live -= widths[k]
        out.append(live)
    return out
