"""The example builders stay changeable (issue 37), checked on the tree:

- no module under examples/ over 800 lines, no function there over 60;
- no `sys.path.insert` in examples/ or benchmarks/build_sweep.py: they run as modules from the
  repository root (`python -m examples.build_examples`);
- every committed program is one manifest.json lists (built by `python -m examples.build_examples`
  or a driver that writes the same manifest), so there is one way to rebuild it;
- every source line a committed ETRecord or TOSA debug file records is in examples/models/ (the
  networks, a stable anchor: builders and drivers can change without rebuilding anything), and
  that line of the model's file still holds the code the file recorded (a model edited without
  rebuilding its examples fails here).
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

from tests.support.examples import EXAMPLES, ROOT

MODULE_LINES = 800
FUNCTION_LINES = 60
# `File "examples/models/x.py", line 12, in forward` then the code line, as a stack trace stores
# it inside JSON (quotes and newlines escaped once or more; TOSA debug info keeps one line per list
# item); the code up to its first quote or backslash (where the trace may end).
FRAME = re.compile(
    rb'File \\*"(examples/[\w/]+\.py)\\*", line (\d+), in \w+(?:\\+n|\n|", ") *([^\n"\\]*)'
)


def _modules() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.py"))


def test_no_long_module_or_function() -> None:
    modules = _modules()
    assert (
        EXAMPLES / "build_examples.py" in modules and EXAMPLES / "models" / "__init__.py" in modules
    )
    over = {}
    for p in modules:
        text = p.read_text(encoding="utf-8")
        rel = str(p.relative_to(ROOT))
        if len(text.splitlines()) > MODULE_LINES:
            over[rel] = len(text.splitlines())
        functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)]
        for node in functions:
            if (n := (node.end_lineno or node.lineno) - node.lineno + 1) > FUNCTION_LINES:
                over[f"{rel}:{node.lineno} {node.name}"] = n
    assert not over, f"over {MODULE_LINES} lines (modules) or {FUNCTION_LINES} (functions): {over}"


def test_no_sys_path_insert() -> None:
    paths = [*_modules(), ROOT / "benchmarks" / "build_sweep.py"]
    found = [str(p.relative_to(ROOT)) for p in paths if "sys.path.insert" in p.read_text()]
    assert not found, f"run as a module from the repository root instead: {found}"


def test_every_program_is_in_the_manifest() -> None:
    manifest = json.loads((EXAMPLES / "manifest.json").read_text())
    listed = {f for e in manifest["examples"] for f in e["files"]}
    programs = {p.name for p in [*EXAMPLES.glob("*.pte"), *EXAMPLES.glob("*.bpte")]}
    assert {"vulkan_mv2.pte", "vgf_small.pte", "coreml_small.pte"} <= programs
    assert not programs - listed, f"no builder lists these: {sorted(programs - listed)}"


def _recorded_frames() -> dict[str, set[tuple[str, int, str]]]:
    """Per committed file with stack traces: (file, line, code) of every examples/ frame."""
    files = [*EXAMPLES.glob("*.etrecord"), *EXAMPLES.glob("*_etrecord.bin")]
    files += [*EXAMPLES.glob("*_artifacts/*.tosa"), *EXAMPLES.glob("*.pte")]
    frames: dict[str, set[tuple[str, int, str]]] = {}
    for path in sorted(files):
        data = path.read_bytes()
        blobs = [data]
        if data[:2] == b"PK":
            with zipfile.ZipFile(path) as z:
                blobs = [z.read(i) for i in z.infolist()]
        found = {
            (m[1].decode(), int(m[2]), m[3].decode().strip())
            for blob in blobs
            for m in FRAME.finditer(blob)
        }
        if found:
            frames[path.name] = found
    return frames


def test_recorded_source_lines_are_the_models_lines() -> None:
    frames = _recorded_frames()
    assert {"mv2_lrn_ethosu85.etrecord", "undelegated.etrecord", "tosa_debug.pte"} <= set(frames)
    wrong = []
    for name, found in frames.items():
        for file, line, code in sorted(found):
            if not file.startswith("examples/models/"):
                wrong.append(f"{name}: {file}:{line} is not a model's file")
                continue
            lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
            actual = lines[line - 1].strip() if line <= len(lines) else ""
            if not code or not actual.startswith(code):
                wrong.append(f"{name}: {file}:{line} records {code!r}, the file has {actual!r}")
    assert not wrong, "rebuild these examples (python -m examples.build_examples --only ...):\n" + (
        "\n".join(wrong)
    )
