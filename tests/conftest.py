"""Fixtures shared by every test; the helpers behind them are in `tests/support/`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.examples import EXAMPLE_PTES


@pytest.fixture(params=EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def example_pte(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


@pytest.fixture(scope="session")
def oracle_cache() -> dict[Path, object]:
    return {}
