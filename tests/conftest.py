"""Shared test helpers: the example programs built by examples/build_examples.py."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE_PTES = sorted(EXAMPLES.glob("*.pte"))


def example(name: str) -> Path:
    """Path of a committed example; a missing example is a failure, not a skip."""
    path = EXAMPLES / f"{name}.pte"
    assert path.exists(), f"example {path} is missing: run examples/build_examples.py"
    return path


@pytest.fixture(params=EXAMPLE_PTES, ids=[p.stem for p in EXAMPLE_PTES])
def example_pte(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


@pytest.fixture(scope="session")
def oracle_cache() -> dict[Path, object]:
    return {}


def oracle(path: Path, cache: dict[Path, object] | None = None) -> object:
    """ExecuTorch's own deserializer: an independent reading of the same bytes."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    if cache is not None and path in cache:
        return cache[path]
    result = deserialize_pte_binary(path.read_bytes())
    if cache is not None:
        cache[path] = result
    return result
