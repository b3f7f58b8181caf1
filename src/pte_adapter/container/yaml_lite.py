"""A bounded reader of the small part of YAML that operator lists are written in.

ExecuTorch's `selected_operators.yaml` (written by `gen_oplist` through PyYAML's `safe_dump`) uses
block mappings and block sequences of plain or quoted scalars, `{}` and `[]`; a list printed by
Python or JSON is a flow sequence (`['aten::add.out', ...]`). This reader takes exactly that, with
comments, and hands back plain values: `dict`, `list`, `str`, `bool` and `None` (YAML 1.1's
booleans and nulls, as PyYAML reads them; every other scalar stays a string).

Everything else is refused with its line number, never guessed: anchors and aliases (an alias
bomb), tags, block scalars, a scalar over several lines, a flow mapping with content, a mapping
inside a list item, tabs in indentation. Nesting deeper than `MAX_DEPTH` is refused, and the work is
linear in the bytes, so a hostile file costs no more than its size (which the caller has checked).
"""

from __future__ import annotations

from dataclasses import dataclass

from pte_adapter.errors import PteFormatError

YamlValue = dict[str, "YamlValue"] | list["YamlValue"] | str | bool | None

MAX_DEPTH = 32
_TRUE = frozenset(["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
# What a plain scalar may not start with (YAML's indicators), and what each would have been.
_REFUSED_START = {
    "&": "an anchor",
    "*": "an alias",
    "!": "a tag",
    "|": "a block scalar",
    ">": "a block scalar",
    "%": "a directive",
    "@": "a reserved indicator",
    "`": "a reserved indicator",
    "?": "a complex key",
}
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0", " ": " "}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file
    indent: int
    text: str  # without indentation, comment and trailing spaces


class _Refused(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(f"line {line}: {what}")


def significant_lines(text: str) -> list[Line]:
    """The lines that hold something, comments removed; raises `_Refused` on a tab in the
    indentation. `---` (a document start) is skipped, `...` (a document end) ends the lines."""
    out: list[Line] = []
    for number, raw in enumerate(text.split("\n"), 1):
        content = _strip_comment(raw.rstrip("\r")).rstrip()
        stripped = content.lstrip(" ")
        if not stripped:
            continue
        if stripped[0] == "\t":
            raise _Refused(number, "a tab in the indentation (YAML indents with spaces)")
        indent = len(content) - len(stripped)
        if indent == 0 and stripped == "---":
            if out:
                raise _Refused(number, "a second document: one list is one document")
            continue
        if indent == 0 and stripped == "...":
            break
        out.append(Line(number, indent, stripped))
    return out


def _strip_comment(line: str) -> str:
    """The line up to a `#` that starts a comment: at the start or after a space, outside quotes."""
    if "#" not in line:
        return line
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"" and (i == 0 or line[i - 1] in " \t[{,:-"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
        i += 1
    return line


def split_key(text: str) -> tuple[str, str] | None:
    """`key: value` -> (key, value); None when the text is not a mapping entry. The separator is
    the first `:` outside quotes followed by a space or the end (`aten::add.out` has none)."""
    if text[0] in "'\"":
        end = _quoted_end(text)
        if end > 0 and text[end : end + 1] == ":" and text[end + 1 : end + 2] in ("", " "):
            return text[:end], text[end + 1 :].strip()
        return None
    if text[0] in "[{" or text == "-" or text.startswith("- "):
        return None
    i = text.find(":")
    while i != -1:
        if i + 1 == len(text) or text[i + 1] == " ":
            return text[:i].rstrip(), text[i + 1 :].strip()
        i = text.find(":", i + 1)
    return None


def _quoted_end(text: str) -> int:
    """The index just past the closing quote of the quoted scalar `text` starts with; -1 if
    it does not close on this line."""
    quote, i = text[0], 1
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    return -1


def _is_sequence_entry(text: str) -> bool:
    return text == "-" or text.startswith("- ")


class _Parser:
    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.i = 0

    def document(self) -> YamlValue:
        if not self.lines:
            return None
        value = self.block(self.lines[0].indent, 0)
        if self.i < len(self.lines):
            raise _Refused(self.lines[self.i].number, "unexpected indentation")
        return value

    def block(self, indent: int, depth: int) -> YamlValue:
        if depth > MAX_DEPTH:
            raise _Refused(self.lines[self.i].number, f"nested deeper than {MAX_DEPTH} levels")
        line = self.lines[self.i]
        if _is_sequence_entry(line.text):
            return self.sequence(indent, depth)
        if split_key(line.text) is not None:
            return self.mapping(indent, depth)
        self.i += 1
        return scalar(line.text, line.number, depth)

    def nested(self, indent: int, depth: int, sequence_here: bool) -> YamlValue:
        """The value on the lines after `key:` or `-`: deeper lines, or (after a key) a sequence
        at the key's own indentation, as PyYAML writes one; else null."""
        if self.i >= len(self.lines):
            return None
        line = self.lines[self.i]
        if line.indent > indent:
            return self.block(line.indent, depth + 1)
        if sequence_here and line.indent == indent and _is_sequence_entry(line.text):
            return self.sequence(indent, depth + 1)
        return None

    def sequence(self, indent: int, depth: int) -> list[YamlValue]:
        items: list[YamlValue] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent != indent or not _is_sequence_entry(line.text):
                break
            self.i += 1
            rest = line.text[1:].strip()
            if not rest:
                items.append(self.nested(indent, depth, False))
            elif _is_sequence_entry(rest) or split_key(rest) is not None:
                raise _Refused(line.number, "a list or mapping on a list item's line is not read")
            else:
                items.append(self.value(rest, line, depth))
        return items

    def mapping(self, indent: int, depth: int) -> dict[str, YamlValue]:
        out: dict[str, YamlValue] = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent != indent:
                break
            entry = split_key(line.text)
            if entry is None:
                raise _Refused(line.number, "expected `key: value` in a mapping")
            key = scalar(entry[0], line.number, depth)
            if not isinstance(key, str):
                raise _Refused(line.number, "a key that is not a string")
            self.i += 1
            out[key] = (
                self.value(entry[1], line, depth) if entry[1] else self.nested(indent, depth, True)
            )
        return out

    def value(self, text: str, line: Line, depth: int) -> YamlValue:
        """A value on the line of its key or `-`; a flow sequence may go on over the lines
        indented deeper than that line (PyYAML wraps long ones)."""
        if text[0] == "[":
            open_brackets = _bracket_depth(text)
            parts = [text]
            while open_brackets > 0 and self.i < len(self.lines):
                more = self.lines[self.i]
                if more.indent <= line.indent:
                    break
                parts.append(more.text)
                open_brackets += _bracket_depth(more.text)
                self.i += 1
            text = " ".join(parts)
        return scalar(text, line.number, depth)


def _bracket_depth(text: str) -> int:
    """How many more `[` than `]` the text opens, outside quotes (a quote closes on its line)."""
    depth, quote, i = 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        i += 1
    return depth


def scalar(text: str, line: int, depth: int = 0) -> YamlValue:
    """One value written on one line: quoted, a flow sequence, `{}`, or plain."""
    if not text:
        return None
    c = text[0]
    if c in "'\"":
        value, end = _quoted(text, 0, line)
        if end != len(text):
            raise _Refused(line, "text after a quoted value")
        return value
    if c == "[":
        items, end = _flow_sequence(text, 0, line, depth)
        if text[end:].strip():
            raise _Refused(line, "text after a flow sequence")
        return items
    if c == "{":
        if text.replace(" ", "") == "{}":
            return {}
        raise _Refused(line, "a flow mapping with content is not read")
    if c in _REFUSED_START:
        raise _Refused(line, f"{_REFUSED_START[c]} is not read")
    if ": " in text:
        raise _Refused(line, "`: ` inside a plain value")
    return _plain(text)


def _plain(text: str) -> YamlValue:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _NULL:
        return None
    return text


def _quoted(text: str, start: int, line: int) -> tuple[str, int]:
    """The quoted scalar at `start`, and the index after it."""
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        if c == "\\" and quote == '"':
            escaped, i = _escape(text, i + 1, line)
            out.append(escaped)
            continue
        out.append(c)
        i += 1
    raise _Refused(line, "a quoted value that does not close on its line")


def _escape(text: str, i: int, line: int) -> tuple[str, int]:
    c = text[i : i + 1]
    if c in _ESCAPES and c:
        return _ESCAPES[c], i + 1
    width = _HEX_ESCAPES.get(c)
    digits = text[i + 1 : i + 1 + width] if width else ""
    if width and len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
        code = int(digits, 16)
        if code <= 0x10FFFF:
            return chr(code), i + 1 + width
    raise _Refused(line, "an escape sequence this reader does not know")


def _flow_sequence(text: str, start: int, line: int, depth: int) -> tuple[list[YamlValue], int]:
    """The flow sequence at `start` (`[a, 'b', [c]]`), and the index after its `]`."""
    if depth > MAX_DEPTH:
        raise _Refused(line, f"nested deeper than {MAX_DEPTH} levels")
    items: list[YamlValue] = []
    i = start + 1
    while True:
        while i < len(text) and text[i] == " ":
            i += 1
        if i >= len(text):
            raise _Refused(line, "a flow sequence that does not close")
        c = text[i]
        if c == "]":
            return items, i + 1
        if c in "'\"":
            value, i = _quoted(text, i, line)
            items.append(value)
        elif c == "[":
            nested, i = _flow_sequence(text, i, line, depth + 1)
            items.append(nested)
        elif c == "{" and text[i : i + 2] == "{}":
            items.append({})
            i += 2
        elif c in "{," or c in _REFUSED_START:
            raise _Refused(line, "a flow sequence item this reader does not read")
        else:
            end = i
            while end < len(text) and text[end] not in ",]":
                end += 1
            items.append(_plain(text[i:end].strip()))
            i = end
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
        elif i < len(text) and text[i] != "]":
            raise _Refused(line, "expected `,` or `]` in a flow sequence")


def parse(lines: list[Line], part: str) -> YamlValue:
    """The value of a document given as its significant lines; `PteFormatError` naming `part`
    and the line for anything this reader does not read."""
    try:
        if lines and lines[0].text.startswith("["):
            # A flow sequence over several lines (JSON printed with indentation): one logical
            # line, reported at its first.
            return scalar(" ".join(x.text for x in lines), lines[0].number)
        return _Parser(lines).document()
    except _Refused as e:
        raise PteFormatError(str(e), part=part) from None


def lines_of(text: str, part: str) -> list[Line]:
    """`significant_lines` with its refusal as a `PteFormatError` naming `part`."""
    try:
        return significant_lines(text)
    except _Refused as e:
        raise PteFormatError(str(e), part=part) from None
