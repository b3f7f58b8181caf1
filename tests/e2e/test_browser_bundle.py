"""A BundledProgram as a user sees it: real Model Explorer in headless Chromium.

The example bundle (built the way Arm's aot_arm_compiler.py --bundleio builds it) opens under its
`.bpte` name, which Model Explorer offers the adapter for, and under a `.pte` name (the same
bytes): on its method graph, drawn, with its test cases in the *Graph info* panel beside it. The
expected cases come from ExecuTorch's own bundled-program deserializer. A corrupt copy is one error
message naming the bundle and the byte. Screenshots: the `screenshots` fixture
(tests/README.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import App, layer_node_id, require_chromium, served_app
from tests.support.examples import EXAMPLES
from tests.support.groups import group_names

pytestmark = pytest.mark.slow

BUNDLE = EXAMPLES / "bundle_ethosu55.bpte"
AS_PTE = EXAMPLES / "bundle_ethosu55_as_pte.pte"
MIN_INK = 0.01
NPU_NODE_BG = "#ffe0b2"  # the Ethos-U colour of the renderer's palette
MIN_COLOUR_PIXELS = 300


require_chromium()


def _expected_case() -> str:
    """Test case 0 as ExecuTorch's deserializer reads it, in the words of the panel."""
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )
    from executorch.exir.tensor import get_scalar_type

    bundle = deserialize_from_flatbuffer_to_bundled_program(BUNDLE.read_bytes())
    (suite,) = bundle.method_test_suites
    case = suite.test_cases[0]

    def text(values: list[Any]) -> str:
        return ", ".join(
            f"[{', '.join(str(d) for d in v.val.sizes)}] "
            f"{str(get_scalar_type(v.val.scalar_type)).removeprefix('torch.')}"
            for v in values
        )

    return f"inputs {text(case.inputs)} → expected {text(case.expected_outputs)}"


@pytest.fixture(scope="module")
def corrupt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy whose program's own identifier (ET12, 4 bytes into the program) is broken."""
    from pte_adapter.container.bundle import read_bundle

    data = bytearray(BUNDLE.read_bytes())
    start = read_bundle(bytes(data), BUNDLE.name).program.offset
    data[start + 4 : start + 8] = b"XXXX"
    path = tmp_path_factory.mktemp("corrupt") / "corrupt.bpte"
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="module")
def app(corrupt: Path) -> Iterator[App]:
    with served_app(BUNDLE, AS_PTE, corrupt) as app:
        yield app


@pytest.mark.parametrize("path", [BUNDLE, AS_PTE], ids=["bpte", "as_pte"])
def test_a_bundle_opens_on_its_method_graph_with_its_test_cases(
    app: App, path: Path, screenshots: Path
) -> None:
    with app.page(path) as me:
        assert me.graph_title() == "forward"
        drawn = me.visible_nodes()
        (npu,) = [g for g in group_names(path)["forward"] if g.startswith("NPU partition 1 ")]
        assert layer_node_id(npu) in drawn, drawn
        ink = me.ink(colours=(NPU_NODE_BG,))
        assert ink.fraction > MIN_INK and ink.colours[NPU_NODE_BG] > MIN_COLOUR_PIXELS, ink
        panel = me.page.locator("body").inner_text()
        assert "GRAPH INFO" in panel.upper()
        for key in ("bundle", "test cases", "test case 0", "test tolerance"):
            assert f"\n{key}\n" in panel, f"{key} not in the graph info panel"
        assert _expected_case() in panel
        assert "BundledProgram version 2" in panel
        me.screenshot(screenshots / f"bundle_{path.suffix[1:]}.png")


def test_a_corrupt_bundle_is_one_clear_error(app: App, corrupt: Path, screenshots: Path) -> None:
    with app.tab() as me:
        me.page.goto(app.model_url(corrupt))
        # The model list marks it "Error"; its info icon's tooltip is the conversion error.
        me.page.get_by_text("Error", exact=True).first.wait_for(timeout=60_000)
        row = me.page.locator("tr", has_text=corrupt.name)
        row.locator("mat-icon", has_text="info").first.hover()
        message = me.page.get_by_text("in the bundled program (bytes ")
        message.first.wait_for(timeout=10_000)
        text = message.first.inner_text()
        assert "corrupt.bpte at byte " in text and "found b'XXXX'" in text, text
        me.page.screenshot(path=str(screenshots / "bundle_corrupt.png"))


def test_a_bundle_renamed_anything_still_opens(tmp_path: Path) -> None:
    """Detected by its bytes: the adapter converts it under a name Model Explorer never
    associates with it, too (what `pte-adapter export` and the API see)."""
    from pte_adapter.explorer.adapter import PteAdapter

    renamed = Path(shutil.copy(BUNDLE, tmp_path / "model.bin.pte"))
    graphs = PteAdapter().convert(str(renamed), {})["graphs"]
    assert graphs[0].id == "forward"
    assert PteAdapter.metadata.fileExts[:2] == ["pte", "bpte"]
