"""The report's "Will it fit" section: one bar per memory region of the deployment map, each part
coloured (its length to scale within the largest region), and the runner's pool sizes."""

from __future__ import annotations

from pte_adapter.analysis.deployment import REGION_NAMES, DeploymentMap
from pte_adapter.render.html.svg import esc, rect, svg, table, text
from pte_adapter.wording import bytes_short, bytes_text

# One colour per kind of item (fill, border); an estimate is drawn dashed.
COLOURS = {
    "program": ("#e3f2fd", "#1565c0"),
    "external_data": ("#e8eaf6", "#283593"),
    "arenas": ("#fff3e0", "#e65100"),
    "fast_arena": ("#fff8e1", "#ff8f00"),
    "unplanned_inputs": ("#fbe9e7", "#bf360c"),
    "scratch": ("#e8f5e9", "#2e7d32"),
    "fast_scratch": ("#e0f7fa", "#00838f"),
    "bookkeeping": ("#f5f5f5", "#616161"),
}
LABEL_W, BAR_W, ROW_H = 120.0, 760.0, 30.0


def fit_svg(dmap: DeploymentMap) -> str:
    totals = dmap.region_bytes()
    top = max(totals.values(), default=0)
    body: list[str] = []
    for row, (region, total) in enumerate(totals.items()):
        y = 6 + row * ROW_H
        body.append(text(0, y + 15, REGION_NAMES[region], 12))
        x = LABEL_W
        for item in (i for i in dmap.items if i.region == region):
            w = BAR_W * item.bytes / top if top else 0
            fill, stroke = COLOURS.get(item.key, ("#eeeeee", "#757575"))
            tip = f"{item.what}: {bytes_text(item.bytes)} ({'exact' if item.exact else 'estimate'})"
            body.append(rect(x, y, w, 20, fill, stroke, tip, "" if item.exact else "dashed"))
            x += w
        body.append(text(x + 4, y + 15, bytes_short(total), 11, fill="#444"))
    height = 12 + len(totals) * ROW_H
    return svg(LABEL_W + BAR_W + 90, height, body, "memory regions of the deployment, as bars")


def _legend(dmap: DeploymentMap) -> str:
    seen = dict.fromkeys(i.key for i in dmap.items)
    names = {i.key: i.what for i in dmap.items}
    return (
        "<p class='legend'>"
        + "".join(
            f"<span class='swatch' style='background:{COLOURS.get(k, ('#eee', '#757575'))[0]};"
            f"border-color:{COLOURS.get(k, ('#eee', '#757575'))[1]}'></span>{esc(names[k])}"
            for k in seen
        )
        + "</p>"
    )


def fit_section(dmap: DeploymentMap | None) -> str:
    """The section's body ("" without a map)."""
    if dmap is None:
        return ""
    items = table(
        ["region", "what", "bytes", "how known", "why there"],
        [
            [
                REGION_NAMES[i.region],
                i.what,
                i.bytes,
                ("exact: " if i.exact else "estimate: ") + i.source,
                i.why_here,
            ]
            for i in dmap.items
        ],
    )
    pools = table(
        ["build option", "set to", "exact", "estimated", "note"],
        [
            [p.option, p.suggested_bytes, p.exact_bytes, p.estimated_bytes, p.note]
            for p in dmap.pools
        ],
    )
    problems = "".join(f"<p class='problem'>problem: {esc(p)}</p>" for p in dmap.problems)
    return (
        f"<p class='note'>method loaded: {esc(dmap.method or 'none')}; check a board with "
        "<code>pte-adapter fit --board</code></p>"
        + fit_svg(dmap)
        + _legend(dmap)
        + items
        + "<h4>Pool sizes for Arm's bare-metal runner</h4>"
        + pools
        + problems
    )
