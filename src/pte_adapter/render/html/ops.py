"""The report's "Will it load" section: the CPU kernels the program calls (each with its kernel keys,
the calls and the layers behind them) and the backends of its delegates, as tables."""

from __future__ import annotations

from pte_adapter.analysis.needs import Call, RuntimeNeeds
from pte_adapter.render.html.sections import collapsible
from pte_adapter.render.html.svg import esc, table
from pte_adapter.render.needs_facts import key_text, needs_line
from pte_adapter.render.ops_report import CALLS_SHOWN, custom_text


def _calls(calls: list[Call]) -> str:
    shown = [f"{c.method} #{c.instruction} in {c.partition}" for c in calls[:CALLS_SHOWN]]
    more = f", … (+{len(calls) - CALLS_SHOWN} more)" if len(calls) > CALLS_SHOWN else ""
    return ", ".join(shown) + more


def _layers(calls: list[Call]) -> str:
    texts = list(dict.fromkeys(m.text for c in calls for m in c.layers))
    more = f", … (+{len(texts) - CALLS_SHOWN} more)" if len(texts) > CALLS_SHOWN else ""
    return ", ".join(texts[:CALLS_SHOWN]) + more


def needs_section(needs: RuntimeNeeds) -> str:
    """The section's body: the line, the kernels' table, the backends' table."""
    kernels = [
        [
            op.name,
            "; ".join(
                key_text(k)
                for k in sorted(
                    {c.kernel_key for c in op.calls if c.kernel_key is not None},
                    key=lambda k: k.text,
                )
            ),
            _calls(op.calls),
            _layers(op.calls),
            custom_text(op) if op.custom else "",
        ]
        for op in needs.called
    ]
    backends = [[b.backend, b.delegates, _calls(b.calls), _layers(b.calls)] for b in needs.backends]
    out = [
        f"<p>{esc(needs_line(needs))}. A runtime's list: <code>pte-adapter ops --runtime-ops LIST "
        "--runtime-backends A,B</code>; a selective build's: <code>pte-adapter ops --yaml</code>"
        "</p>"
    ]
    if kernels:
        head = ["CPU kernel", "kernel keys (ScalarType;dim order per tensor)", "calls", "layers"]
        out.append(collapsible(table([*head, "note"], kernels), len(kernels), "CPU kernels"))
    if backends:
        out.append(table(["backend", "delegates", "calls", "layers"], backends))
    out += [f"<p class='problem'>problem: {esc(p)}</p>" for p in needs.problems]
    return "".join(out)
