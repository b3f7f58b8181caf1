"""The report of one program as one self-contained HTML file, and the same content as a fragment
for a notebook cell.

Everything is inline: the styles, the SVG pictures, the width toggles (radio buttons and CSS, no
script). No font, image, style or script is fetched, so the file opens from disk, from a CI
artifact or an e-mail, and a browser makes no request for it. Styles are scoped to `.pte-report`
so the fragment does not restyle the notebook around it.
"""

from __future__ import annotations

from pte_adapter.analysis.program_analysis import MethodAnalysis, ProgramAnalysis
from pte_adapter.render.html.fit import fit_section
from pte_adapter.render.html.memory import memory_section
from pte_adapter.render.html.numerics import numerics_section, snr_track
from pte_adapter.render.html.ops import needs_section
from pte_adapter.render.html.sections import (
    estimate_table,
    numbers_table,
    partitions_table,
    profile_section,
    reasons_table,
    size_section,
)
from pte_adapter.render.html.strip import strip_block
from pte_adapter.render.html.svg import esc, section
from pte_adapter.render.html.what_if import what_if_section
from pte_adapter.wording import bytes_text

STYLE = """
.pte-report{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#212121;
  max-width:1100px;margin:0 auto;padding:8px 16px;line-height:1.4;font-size:14px}
.pte-report h1{font-size:22px;margin:8px 0}
.pte-report h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:2px;margin-top:28px}
.pte-report h3{font-size:15px;margin:18px 0 6px}
.pte-report h4{font-size:13px;margin:14px 0 4px;color:#444}
.pte-report table{border-collapse:collapse;margin:6px 0;font-size:12px}
.pte-report th,.pte-report td{border:1px solid #e0e0e0;padding:2px 6px;text-align:left;
  vertical-align:top}
.pte-report th{background:#f5f5f5}
.pte-report table.numbers td:first-child{font-weight:600;white-space:nowrap}
.pte-report svg{display:block;margin:4px 0;font-family:inherit}
.pte-report svg rect.dashed{stroke-dasharray:3 2}
.pte-report .toggle>input{margin-left:10px}
.pte-report .toggle .panel{display:none}
.pte-report .toggle .panel.only,
.pte-report .toggle>input:nth-of-type(1):checked~.panels>.panel:nth-child(1),
.pte-report .toggle>input:nth-of-type(2):checked~.panels>.panel:nth-child(2),
.pte-report .toggle>input:nth-of-type(3):checked~.panels>.panel:nth-child(3){display:block}
.pte-report .legend{font-size:12px;color:#444}
.pte-report .note{font-size:12px;color:#666;margin:0}
.pte-report .swatch{display:inline-block;width:12px;height:12px;border:1px solid;
  vertical-align:middle;margin:0 4px 0 10px}
.pte-report .problem{color:#b71c1c}
.pte-report .delta-worse{color:#b71c1c;font-weight:600}
.pte-report .delta-better{color:#2e7d32;font-weight:600}
.pte-report nav a{margin-right:12px}
"""


def _key(result: ProgramAnalysis, ma: MethodAnalysis, prefix: str) -> str:
    index = result.methods.index(ma)
    return f"{prefix}m{index}"


def method_html(result: ProgramAnalysis, ma: MethodAnalysis, prefix: str = "") -> str:
    """One method: strip, numbers, partitions, reasons, estimate, memory."""
    key = _key(result, ma, prefix)
    out = [f"<h3>method {esc(ma.name)}</h3>", snr_track(ma), strip_block(ma, key)]
    out.append(numbers_table(ma))
    gap = numerics_section(ma)
    if gap:
        out.append("<h4>Numeric gap</h4>" + gap)
    out.append("<h4>Partitions</h4>" + partitions_table(ma))
    out.append("<h4>Why the CPU kernels were not delegated</h4>" + reasons_table(ma))
    fixes = what_if_section(ma)
    if fixes:
        out.append("<h4>What would the fix buy?</h4>" + fixes)
    est = estimate_table(ma)
    if est:
        out.append("<h4>NPU estimate per partition</h4>" + est)
    out.append("<h4>Memory</h4>" + memory_section(ma))
    return "".join(out)


def _header(result: ProgramAnalysis) -> str:
    program = result.program
    name = program.path.name if program.path else "program"
    facts = [f"{bytes_text(program.file_size)}", f"{len(result.methods)} method(s)"]
    if result.source is not None:
        facts.append(f"layers from {result.source.etrecord}")
    if result.profile_summary is not None:
        facts.append(f"measured: {result.profile_summary['etdump']}")
    if result.numerics is not None and result.numerics.reference is not None:
        facts.append(f"numeric gap vs {result.numerics.reference}")
    out = f"<h1>{esc(name)}</h1><p>{esc(', '.join(facts))}</p>"
    if result.problems:
        out += "".join(f"<p class='problem'>problem: {esc(p)}</p>" for p in result.problems)
    out += "".join(f"<p>note: {esc(n)}</p>" for n in result.notes)
    if result.numerics_error is not None:
        out += f"<p class='problem'>problem: numeric gap: {esc(result.numerics_error)}</p>"
    return out


def report_fragment(result: ProgramAnalysis, *, full: bool = True) -> str:
    """The report as a `<div class="pte-report">` with its styles. `full`: every section; else
    the strips and the numbers only (what a notebook shows inline)."""
    body = [f"<style>{STYLE}</style>", _header(result)]
    for ma in result.methods:
        if full:
            body.append(method_html(result, ma))
        else:
            strip = snr_track(ma) + strip_block(ma, _key(result, ma, "n"))
            body.append(f"<h3>method {esc(ma.name)}</h3>" + strip)
            body.append(numbers_table(ma))
    if full:
        body.append(section("Size", size_section(result.size()), "size"))
        if result.deployment is not None:
            body.append(section("Will it fit", fit_section(result.deployment), "fit"))
        body.append(section("Will it load", needs_section(result.needs), "load"))
        profile = profile_section(result)
        if profile:
            body.append(section("Measured", profile, "measured"))
    return f'<div class="pte-report">{"".join(body)}</div>'


def page(title: str, fragment: str) -> str:
    """A complete HTML document around a fragment."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title></head><body>{fragment}</body></html>\n"
    )


def report_html(result: ProgramAnalysis) -> str:
    """`pte-adapter report PROGRAM`: the whole report as one self-contained HTML file."""
    name = result.program.path.name if result.program.path else "program"
    return page(f"{name}: pte-adapter report", report_fragment(result))
