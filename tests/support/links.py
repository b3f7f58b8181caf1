"""What Model Explorer's web app would draw as a link, found in graphs the adapter made.

The app's side panel (`expandable-info-text`: `parseUrlInfo` in its bundle) links a text that is a
whole markdown link `[text](url)`, starts with `http://` or `https://` (and parses as a URL), or
starts with one of Google's short-link prefixes. It shows that way a node's label, id and
namespace, each layer's name, every attribute and every input's and output's metadata. This module
restates the rule independently of the adapter's own (`render/model_explorer.py`), so a test of the
adapter can fail.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_MARKDOWN = re.compile(r"^\[([^\]]+)\]\(([^)]+)\)$")
_PREFIXES = ("go/", "b/", "cl/", "cs/", "google3/", "http://", "https://")


def is_link(text: str) -> bool:
    """Whether the web app would draw `text` as a link."""
    return bool(text.strip()) and (text.startswith(_PREFIXES) or bool(_MARKDOWN.match(text)))


def _texts(graph: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, text) of everything the panel shows of one graph (as `graphs_to_json` writes it)."""
    for node in graph.get("nodes", []):
        nid = node.get("id", "")
        yield f"{nid} label", node.get("label", "")
        yield f"{nid} id", nid
        namespace = node.get("namespace", "")
        yield f"{nid} namespace", namespace
        for layer in namespace.split("/"):
            yield f"{nid} layer", layer
        for attr in node.get("attrs", []):
            value = attr.get("value")
            if isinstance(value, str):
                yield f"{nid} attr {attr.get('key')}", value
        for side in ("inputsMetadata", "outputsMetadata"):
            for item in node.get(side, []):
                for attr in item.get("attrs", []):
                    value = attr.get("value")
                    if isinstance(value, str):
                        yield f"{nid} {side} {attr.get('key')}", value
    for group, attrs in (graph.get("groupNodeAttributes") or {}).items():
        yield "layer path", group
        for layer in group.split("/"):
            yield "layer", layer
        for key, value in attrs.items():
            yield f"layer {group!r} {key}", value


def link_like(graphs: list[dict[str, Any]]) -> list[str]:
    """Where the graphs hold a text the app would draw as a link: "<graph> <where>: <text>"."""
    return [
        f"{g.get('id')} {where}: {text[:80]}"
        for g in graphs
        for where, text in _texts(g)
        if is_link(text)
    ]
