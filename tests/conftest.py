"""Fixtures shared by every test; the helpers behind them are in `tests/support/`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.examples import EXAMPLE_PTES

if TYPE_CHECKING:
    from tests.support.vela import VelaRun
    from tests.support.whatif_pairs import Truth


@pytest.fixture(params=EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def example_pte(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


@pytest.fixture(scope="session")
def oracle_cache() -> dict[Path, object]:
    return {}


@pytest.fixture(scope="session")
def vela_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, VelaRun]:
    """Ethos-U partition name -> Vela's compile of the sidecar .tosa that gives its exact command
    stream (tests/support/vela.py); compiled once a session for every test that asks."""
    from tests.support.vela import all_ethosu_partitions, vela_runs

    return vela_runs(all_ethosu_partitions(), tmp_path_factory.mktemp("vela"))


@pytest.fixture(scope="session")
def whatif_truths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Truth]:
    """What-if pair name -> the truth of its fixed side (tests/support/whatif_pairs.py), Vela run
    once per sidecar for every test that asks."""
    from tests.support.whatif_pairs import truth, whatif_pairs

    return {p.name: truth(p.fixed, tmp_path_factory.mktemp(p.name)) for p in whatif_pairs()}


@pytest.fixture(scope="session")
def float_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The float reference of the emulated mv2_lrn_ethosu85 run (examples/float_reference.py:
    the float program, its ETRecord, the pip runtime's ETDump and debug buffer; ~115 MB, so not
    committed), built once a session: its folder."""
    from tests.support.emulated import build_float_reference

    folder = tmp_path_factory.mktemp("float_reference")
    build_float_reference(folder)
    return folder


@pytest.fixture
def screenshots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a browser test saves what it saw: `$PTE_ADAPTER_SCREENSHOTS/<test module>/` when that
    variable is set, else the test's temporary folder (tests/support/browser.py)."""
    from tests.support.browser import screenshot_folder

    return screenshot_folder(request.module.__name__, tmp_path)
