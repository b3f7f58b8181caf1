"""ruff and mypy are part of the test command, so CI keeps the code clean."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_ruff() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "src",
            "tests",
            "scripts",
            "benchmarks",
            "examples",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format() -> None:
    """The code keeps one layout (ruff is pinned in the test extra, so its style cannot drift)."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "src",
            "tests",
            "scripts",
            "benchmarks",
            "examples",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy() -> None:
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
