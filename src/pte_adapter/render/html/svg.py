"""The few SVG and HTML pieces the report is drawn with: escaped text, boxes, lines, paths, a table.

Everything is a string built here (no template engine, no chart library, nothing fetched): the
report opens from disk, from a CI artifact, or inside a notebook, and looks the same.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence


def esc(text: object) -> str:
    """Text for HTML and SVG content and attribute values."""
    return html.escape(str(text), quote=True)


def num(x: float) -> str:
    """A coordinate: at most one decimal, no trailing zeros."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def svg(width: float, height: float, body: Iterable[str], label: str, cls: str = "") -> str:
    """A complete inline SVG of fixed coordinates that scales to its container's width."""
    c = f' class="{esc(cls)}"' if cls else ""
    return (
        f'<svg{c} viewBox="0 0 {num(width)} {num(height)}" width="100%" role="img" '
        f'aria-label="{esc(label)}" preserveAspectRatio="xMinYMin meet">'
        f"<title>{esc(label)}</title>{''.join(body)}</svg>"
    )


def rect(
    x: float,
    y: float,
    w: float,
    h: float,
    fill: str,
    stroke: str = "none",
    title: str = "",
    cls: str = "",
) -> str:
    tip = f"<title>{esc(title)}</title>" if title else ""
    c = f' class="{esc(cls)}"' if cls else ""
    return (
        f'<rect{c} x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(max(h, 0))}" '
        f'fill="{esc(fill)}" stroke="{esc(stroke)}">{tip}</rect>'
    )


def text(
    x: float, y: float, s: str, size: float = 11, anchor: str = "start", fill: str = "#222"
) -> str:
    return (
        f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" text-anchor="{anchor}" '
        f'fill="{esc(fill)}">{esc(s)}</text>'
    )


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = "#888", dash: str = "") -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
        f'stroke="{esc(stroke)}"{d}/>'
    )


def circle(x: float, y: float, r: float, fill: str, title: str = "") -> str:
    tip = f"<title>{esc(title)}</title>" if title else ""
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="{esc(fill)}">{tip}</circle>'


def path(points: Sequence[tuple[float, float]], stroke: str, fill: str = "none") -> str:
    if not points:
        return ""
    d = "M" + " L".join(f"{num(x)},{num(y)}" for x, y in points)
    if fill != "none":
        d += " Z"
    return f'<path d="{d}" stroke="{esc(stroke)}" fill="{esc(fill)}" stroke-width="1.2"/>'


def table(head: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "") -> str:
    """An HTML table; cells are escaped text. No header row when `head` is empty."""
    c = f' class="{esc(cls)}"' if cls else ""
    out = [f"<table{c}>"]
    if head:
        out += ["<thead><tr>", *(f"<th>{esc(h)}</th>" for h in head), "</tr></thead>"]
    out.append("<tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def section(title: str, body: str, anchor: str = "") -> str:
    a = f' id="{esc(anchor)}"' if anchor else ""
    return f"<section{a}><h2>{esc(title)}</h2>{body}</section>"


def ticks(top: float, unit: float = 1.0) -> list[float]:
    """Three to five round values (in multiples of `unit`: 1024 for KiB) from 0 to `top`."""
    if top <= 0:
        return [0.0]
    scaled = top / unit
    step = 10.0 ** math.floor(math.log10(scaled / 4)) if scaled >= 4 else scaled / 4
    for m in (1, 2, 2.5, 5, 10):
        if scaled / (step * m) <= 5:
            step *= m
            break
    out, v = [], 0.0
    while v <= scaled * 1.0001:
        out.append(v * unit)
        v += step
    return out


def byte_ticks(top: float) -> list[float]:
    """Round values in B, KiB or MiB from 0 to `top` bytes."""
    unit = 1.0 if top < 4096 else 1024.0 if top < 4 * 1024**2 else 1024.0**2
    return ticks(top, unit)
