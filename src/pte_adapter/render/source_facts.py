"""Readable attributes for the ETRecord's source layers and the partitioner rules' reasons.

For the Model Explorer renderer (node and group attributes, nested layer namespaces) and any
other view; the logic lives in `analysis.source` and `analysis.why`, this only words it.
"""

from __future__ import annotations

from pte_adapter.analysis.source import InstructionSource, PartitionSource
from pte_adapter.analysis.why import Reason

MAX_MODULES = 8


def instruction_source_facts(src: InstructionSource | None) -> dict[str, str]:
    """`module` (`features.4 (LocalResponseNorm)`), `module_class`, `source_line`, `torch_fn`."""
    if src is None:
        return {}
    out: dict[str, str] = {}
    if src.modules:
        # A delegate call absorbs whole stages: name the first few (its group names them all).
        shown = src.modules[:MAX_MODULES]
        more = len(src.modules) - len(shown)
        out["module"] = ", ".join(m.text for m in shown) + (f" … (+{more})" if more else "")
        out["module_class"] = ", ".join(dict.fromkeys(m.cls for m in shown))
    if src.source_line:
        out["source_line"] = src.source_line
    fn = src.torch_fn.split(";", 1)[-1]
    if fn and not fn.startswith("OpOverload."):  # an operator, not a user-level torch function
        out["torch_fn"] = fn
    out["debug_handles"] = ", ".join(str(h) for h in src.handles[:32]) + (
        f" … ({len(src.handles)})" if len(src.handles) > 32 else ""
    )
    return out


def why_facts(reasons: list[Reason]) -> dict[str, str]:
    """`why_not_delegated`: one line per backend family that was asked."""
    texts = list(dict.fromkeys(r.text for r in reasons))
    return {"why_not_delegated": "\n".join(texts)} if texts else {}


def partition_source_facts(ps: PartitionSource | None, reasons: list[Reason]) -> dict[str, str]:
    """`modules_covered` (`features.0 … features.4`), `cause`, `why_not_delegated`."""
    out: dict[str, str] = {}
    if ps is not None and ps.modules:
        out["modules_covered"] = ", ".join(ps.modules)
    if ps is not None and ps.causes:
        out["cause"] = "\n".join(ps.causes)
    out.update(why_facts(reasons))
    return out


def layer_namespace(src: InstructionSource | None) -> list[str]:
    """The nested layers an instruction sits in (outermost first, without the root module), as
    group names: `["features", "features.4"]`. A delegate call that spans several layers sits in
    the layers they share. Names are printable ASCII (Model Explorer's label font)."""
    if src is None:
        return []
    return [m.path.encode("ascii", "replace").decode() for m in src.layer]
