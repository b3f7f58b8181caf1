"""What a file's text may not do on the way out: the terminal filter (`cli/inert.py`), the Model
Explorer attribute rule (`inert_attribute`) and the error it binds as HTML (`inert_error`). The
web app's own behaviour is checked in tests/e2e/test_browser_hostile.py."""

from __future__ import annotations

import json

from pte_adapter.cli.inert import inert
from pte_adapter.explorer.adapter import inert_error
from pte_adapter.render.model_explorer import (
    LABEL_SPACE,
    ZERO_WIDTH_SPACE,
    inert_attribute,
    inert_label,
    inert_namespace,
)
from tests.support.hostile import LINK_SPECS, TERMINAL_PAYLOAD
from tests.support.links import is_link


def test_terminal_controls_are_written_as_json_escapes() -> None:
    shown = inert("aten::add" + TERMINAL_PAYLOAD + "\n\tnext")
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in shown)
    assert not any(0x7F <= ord(c) < 0xA0 or 0x202A <= ord(c) <= 0x202E for c in shown)
    assert shown.endswith("\n\tnext") and "\\u001b]52;c;" in shown
    # Inside a JSON string the escapes decode to the same text.
    text = "op" + TERMINAL_PAYLOAD
    assert json.loads(inert(json.dumps(text, ensure_ascii=False))) == text


def test_link_like_attributes_get_a_zero_width_space_and_others_stay() -> None:
    for value in LINK_SPECS.values():
        assert inert_attribute(value) == ZERO_WIDTH_SPACE + value
    for value in ("aten::add.out", "see [this](x) here", "/tmp/model_artifacts/x.tosa", ""):
        assert inert_attribute(value) == value


def test_an_error_holds_no_markup() -> None:
    shown = inert_error("<img src=https:evil.example>x.pte at byte 0: go/link & more")
    assert "<" not in shown and ">" not in shown
    assert "&lt;img src=https:evil.example&gt;x.pte" in shown
    assert "&#8203;go/link" in shown and "&amp; more" in shown


def test_labels_and_layers_that_look_like_links_are_made_inert() -> None:
    """A node's label and namespace are shown in the same panel as its attributes (issue 44): a
    label that looks like a link, a layer starting with "[" (a markdown link, whole or with "/"
    inside it) and a first layer that starts a link ("https:" of "https://x", "go" of "go/x")
    get a space in front (the graph draws them in an ASCII font: a zero-width space would show),
    the same in every namespace it is part of; everything else stays as it is."""
    s = LABEL_SPACE
    assert inert_namespace("go/evil.example/a") == f"{s}go/evil.example/a"
    assert inert_namespace("go") == f"{s}go"  # the same layer as in "go/..."
    assert inert_namespace("https://evil.example/x") == f"{s}https://evil.example/x"
    assert inert_namespace("CPU island 2/[download](evil.example)/x") == (
        f"CPU island 2/{s}[download](evil.example)/x"
    )
    assert inert_namespace("[a/b](c)") == f"{s}[a/b](c)"
    for ordinary in ("", "CPU island 1", "NPU partition 2 (EthosUBackend)/conv/b", "a/go/x"):
        assert inert_namespace(ordinary) == ordinary
    for label in LINK_SPECS.values():
        assert inert_label(label) == s + label
        assert not is_link(inert_label(label))
    assert inert_label("aten::add.out") == "aten::add.out"
