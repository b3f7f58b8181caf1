"""The example programs built by examples/build_examples.py, and ExecuTorch's own reading of them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCRIPTS = ROOT / "scripts"
EXAMPLE_PTES = sorted(EXAMPLES.glob("*.pte"))


def example(name: str) -> Path:
    """Path of a committed example; a missing example is a failure, not a skip."""
    path = EXAMPLES / f"{name}.pte"
    assert path.exists(), f"example {path} is missing: run python -m examples.build_examples"
    return path


def oracle_program_bytes(data: bytes) -> bytes:
    """The `.pte` bytes of a file: itself, or the program a BundledProgram holds, as ExecuTorch's
    own bundled-program deserializer (flatc + the schema) extracts it."""
    if data[4:8] != b"BP08":
        return data
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    return bytes(deserialize_from_flatbuffer_to_bundled_program(data).program)


def oracle(path: Path, cache: dict[Path, object] | None = None) -> object:
    """ExecuTorch's own deserializer: an independent reading of the same bytes (of the program
    inside, for a bundle)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    if cache is not None and path in cache:
        return cache[path]
    result = deserialize_pte_binary(oracle_program_bytes(path.read_bytes()))
    if cache is not None:
        cache[path] = result
    return result


def run_support_module(module: str, args: list[str], timeout: float, what: str) -> str:
    """`python -m module args` in a fresh interpreter with this checkout's sources first on its
    path (the `pte_adapter` this process imported: a worktree's, not the installed one) and the
    repository after; its stdout, or a RuntimeError naming `what` with the end of its stderr."""
    import os
    import subprocess
    import sys

    import pte_adapter

    src = Path(pte_adapter.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-3000:]}")
    return done.stdout
