"""ruff and mypy are part of the test command, so CI keeps the code clean."""

from __future__ import annotations

import subprocess
import sys

from tests.support.examples import ROOT

PATHS = ["src", "tests", "scripts", "benchmarks", "examples"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff() -> None:
    r = _run("ruff", "check", *PATHS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format() -> None:
    """The code keeps one layout (ruff is pinned in the test extra, so its style cannot drift)."""
    r = _run("ruff", "format", "--check", *PATHS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy() -> None:
    r = _run("mypy")
    assert r.returncode == 0, r.stdout + r.stderr
