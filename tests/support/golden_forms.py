"""How one output is kept as a golden file: whole where a reviewer reads it, else digests and facts.

An output is what one command gave: its exit code, stdout, stderr and the files it wrote, with the
machine-specific parts already normalised (tests/support/golden.py). `stored(output)` is the text
kept in `tests/golden/`; two outputs that differ anywhere give two different texts:

- text (stdout, stderr, a text file) is kept whole up to `TEXT_WHOLE_BYTES`; beyond, its first
  lines and a digest of the rest;
- JSON is kept whole, byte for byte, up to `JSON_WHOLE_BYTES`; beyond, abridged: a list of more than
  `CUT_LIST` items (an object of more than `CUT_OBJECT` keys) keeps its first `KEEP`, the rest named
  by count and digest, under the sha256 of the whole output;
- the Model Explorer graphs (megabytes of JSON) and the HTML report are kept as a card: the sha256
  of the whole, and per graph its node and edge counts and a digest per group (per part of the
  report, from one heading to the next), so a failure says where the change is and what kind it was.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

TEXT_WHOLE_BYTES = 64 * 1024
JSON_WHOLE_BYTES = 16 * 1024
CUT_LIST = 16  # a list of more items than this is cut to its first KEEP ...
CUT_OBJECT = 64  # ... and an object of more keys than this (one that maps names to data)
KEEP = 8
ATTRIBUTE_LINE = 100  # where the card wraps its list of node attributes


@dataclass
class Output:
    """What one command gave, normalised. `kind` says how its stdout is kept: "text", "json" or
    "graphs" (the Model Explorer graphs as JSON: a card). `files` are the files it wrote, by name."""

    command: str
    kind: str = "text"
    exit: int | None = 0
    stdout: str = ""
    stderr: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    raised: str | None = None  # an exception that escaped (never expected: it is shown)
    # For `export`: whether its graph file holds the graphs Model Explorer is given (None: not
    # compared).
    same_graphs: bool | None = None


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def short_digest(value: Any) -> str:
    """16 hex digits of the sha256 of `value` as compact JSON (its own order kept)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return sha256(text)[:16]


def stored(output: Output) -> str:
    """The golden text of `output`."""
    lines = [f"$ {output.command}"]
    if output.raised is not None:
        lines.append(f"raised {output.raised}")
    elif output.exit is not None:
        lines.append(f"exit {output.exit}")
    text = "\n".join(lines) + "\n"
    if output.stdout:
        text += _section("stdout", output.stdout, output.kind)
    if output.stderr:
        text += _section("stderr", output.stderr, "text")
    for name in sorted(output.files):
        text += _file_section(name, output.files[name], output.same_graphs)
    return text


def _section(title: str, content: str, kind: str) -> str:
    if kind == "graphs":
        return graphs_card(content, title)
    if kind == "json":
        return json_section(title, content)
    return text_section(title, content)


def _ended(content: str) -> str:
    """`content` ending in one newline; one that had none says so, as diff does."""
    return content if content.endswith("\n") else content + "\n\\ no newline at end\n"


def text_section(title: str, content: str) -> str:
    size = len(content.encode())
    if size <= TEXT_WHOLE_BYTES:
        return f"--- {title}\n" + _ended(content)
    lines = content.splitlines(keepends=True)
    kept, used = [], 0
    for line in lines:
        used += len(line.encode())
        if used > TEXT_WHOLE_BYTES:
            break
        kept.append(line)
    rest = "".join(lines[len(kept) :])
    return (
        f"--- {title}: {size} bytes, sha256 {sha256(content)}; its first {len(kept)} lines\n"
        + "".join(kept)
        + f"... {len(lines) - len(kept)} more lines, sha256 {sha256(rest)[:16]}\n"
    )


def json_section(title: str, content: str) -> str:
    size = len(content.encode())
    if size <= JSON_WHOLE_BYTES:
        return f"--- {title}\n" + _ended(content)
    try:
        data = json.loads(content)
    except ValueError:
        return text_section(title, content)
    return (
        f"--- {title}: {size} bytes of JSON, sha256 {sha256(content)}; abridged: a list of more "
        f"than {CUT_LIST} items (an object of more than {CUT_OBJECT} keys) keeps its first {KEEP}\n"
        + json.dumps(abridged(data), indent=1, ensure_ascii=False)
        + "\n"
    )


def abridged(value: Any) -> Any:
    """`value` with every list of more than CUT_LIST items, and every object of more than
    CUT_OBJECT keys, cut to its first KEEP, the rest replaced by one item naming how many there
    were and their digest."""
    if isinstance(value, list):
        if len(value) <= CUT_LIST:
            return [abridged(v) for v in value]
        rest = value[KEEP:]
        return [
            *(abridged(v) for v in value[:KEEP]),
            f"... {len(rest)} more items, sha256 {short_digest(rest)}",
        ]
    if isinstance(value, dict):
        if len(value) <= CUT_OBJECT:
            return {k: abridged(v) for k, v in value.items()}
        items = list(value.items())
        rest = dict(items[KEEP:])
        return {
            **{k: abridged(v) for k, v in items[:KEEP]},
            "...": f"{len(rest)} more keys, sha256 {short_digest(rest)}",
        }
    return value


def _file_section(name: str, data: bytes, same_graphs: bool | None) -> str:
    try:
        content = data.decode()
    except UnicodeDecodeError:
        return f"--- file {name}: {len(data)} bytes (not UTF-8), sha256 {sha256(data)}\n"
    if name.endswith(".html"):
        return html_card(content, f"file {name}")
    if name == "graph.json":
        return export_card(content, f"file {name}", same_graphs)
    if name.endswith(".json"):
        return json_section(f"file {name}", content)
    return text_section(f"file {name}", content)


# -- the Model Explorer graphs -------------------------------------------------------------------


def graphs_card(content: str, title: str) -> str:
    """The graphs (a JSON list of Model Explorer graphs) as counts and digests: per graph its
    nodes and edges, and per group (the first part of a node's namespace: a partition, an island)
    its node count, the digest of its nodes and of its attributes; then every node attribute key
    with the number of nodes that have it."""
    graphs = json.loads(content)
    nodes = sum(len(g["nodes"]) for g in graphs)
    lines = [
        f"--- {title}: {len(graphs)} graph(s), {nodes} nodes; {len(content.encode())} bytes of "
        f"JSON, sha256 {sha256(content)}",
        "per graph: nodes, edges, digest; per group: nodes, digest of its nodes, its attributes "
        "(count, digest), its name",
    ]
    keys: Counter[str] = Counter()
    for graph in graphs:
        lines += _graph_lines(graph)
        keys.update(a["key"] for n in graph["nodes"] for a in n.get("attrs") or ())
    lines.append("node attributes (key nodes):")
    lines += _wrapped([f"{k} {n}" for k, n in sorted(keys.items())], "  ")
    return "\n".join(lines) + "\n"


def _graph_lines(graph: dict[str, Any]) -> list[str]:
    edges = sum(len(n.get("incomingEdges") or ()) for n in graph["nodes"])
    lines = [
        f"graph {graph['id']}: {len(graph['nodes'])} nodes, {edges} edges, "
        f"sha256 {short_digest(graph)}"
    ]
    members: dict[str, list[Any]] = {}
    for node in graph["nodes"]:
        members.setdefault(node["namespace"].split("/")[0], []).append(node)
    attributes: dict[str, dict[str, Any]] = {}
    for namespace, attrs in (graph.get("groupNodeAttributes") or {}).items():
        attributes.setdefault(namespace.split("/")[0], {})[namespace] = attrs
    for group in sorted(members.keys() | attributes.keys()):
        mine, attrs = members.get(group, []), attributes.get(group, {})
        count = sum(len(a) for a in attrs.values())
        lines.append(
            f"  {len(mine):5} {short_digest(mine)}  {count:3} {short_digest(attrs)}  "
            f"{group or '(top level)'}"
        )
    rest = {k: v for k, v in graph.items() if k not in ("nodes", "groupNodeAttributes", "id")}
    lines.append(f"  colours and layout: sha256 {short_digest(rest)}")
    return lines


def _wrapped(words: list[str], indent: str) -> list[str]:
    lines, line = [], ""
    for word in words:
        if line and len(indent) + len(line) + 2 + len(word) > ATTRIBUTE_LINE:
            lines.append(indent + line + ",")
            line = ""
        line = f"{line}, {word}" if line else word
    return [*lines, indent + line] if line else lines


def export_card(content: str, title: str, same_graphs: bool | None) -> str:
    """`export`'s graph file: its digest, its label, its graph count, and whether its graphs are
    the ones Model Explorer is given for the same program."""
    data = json.loads(content)
    line = (
        f"--- {title}: {len(content.encode())} bytes, sha256 {sha256(content)}; label "
        f"{json.dumps(data.get('label'), ensure_ascii=False)}, {len(data.get('graphs', []))} "
        "graph(s)"
    )
    if same_graphs is not None:
        line += (
            "; the graphs Model Explorer is given"
            if same_graphs
            else "; NOT the graphs Model Explorer is given"
        )
    return line + "\n"


# -- the HTML report -----------------------------------------------------------------------------

_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_HEADING_START = re.compile(r"(?=<h[1-4][ >])")
_HEADING = re.compile(r"<h([1-4])[^>]*>(.*?)</h\1>", re.S)
_TAG = re.compile(r"<[^>]+>")


def _heading_text(raw: str) -> str:
    return " ".join(html.unescape(_TAG.sub("", raw)).split())


def html_card(content: str, title: str) -> str:
    """A report as its title and, per part (from one heading to the next), what it draws (SVGs,
    tables and their rows), its size, its digest and its heading, indented by level."""
    found = _TITLE.search(content)
    lines = [
        f"--- {title}: {len(content.encode())} bytes, sha256 {sha256(content)}",
        f"title: {_heading_text(found.group(1)) if found else '(none)'}",
        "per part, from one heading to the next: svg, tables, rows, bytes, digest, heading",
    ]
    for part in _HEADING_START.split(content):
        if not part:
            continue
        heading = _HEADING.match(part)
        name = "(before the first heading)"
        if heading:
            level = int(heading.group(1))
            name = "  " * (level - 1) + f"h{level} {_heading_text(heading.group(2))}"
        lines.append(
            f"  {part.count('<svg'):3} {part.count('<table'):3} {part.count('<tr'):4} "
            f"{len(part.encode()):7} {sha256(part)[:16]}  {name}"
        )
    return "\n".join(lines) + "\n"
