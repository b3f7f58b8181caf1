"""What every builder shares: the registry of examples, seeded inputs, output files written
relative to the output folder (so no machine path is stored), and the path checks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

import torch

from examples import memory_plan
from examples.models import SEED

HERE = os.path.dirname(os.path.abspath(__file__))  # examples/
REPO = os.path.dirname(HERE)
ABS_PATH_RE = re.compile(rb"/(tmp|root|work|home)/")

# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


@dataclass
class Example:
    name: str
    kind: str
    description: str
    fn: Callable[[], dict]
    large: bool = False


EXAMPLES: dict[str, Example] = {}


def example(name: str, kind: str, description: str, large: bool = False):
    """Register the decorated function as the builder of example `name`: it writes the files into
    the current folder and returns ``{"files", "sidecars", "settings"}``."""

    def deco(fn):
        EXAMPLES[name] = Example(name, kind, description, fn, large)
        return fn

    return deco


# --------------------------------------------------------------------------------------
# Inputs and output files
# --------------------------------------------------------------------------------------


def inputs(shape, n=1, seed=SEED):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g),) for _ in range(n)]


def write_pte(prog, name: str) -> str:
    """``<name>.pte`` and its memory plan ``<name>.memory.json`` (see ``record_memory_plan``)."""
    with open(f"{name}.pte", "wb") as f:
        prog.write_to_file(f)
    record_memory_plan(prog, name)
    return f"{name}.pte"


def record_memory_plan(prog, name: str) -> None:
    """`<name>.memory.json`: ExecuTorch's own memory plan of the program (every planned tensor's
    lifetime, arena and offset, mapped onto instructions; `memory_plan.py`), written while
    `build_recording` records. The oracle of the adapter's memory picture."""
    memory_plan.write(prog, name)


def build_recording(ex: Example) -> dict:
    """Build one example, recording ExecuTorch's memory plan of each program it writes."""
    with memory_plan.recording() as written:
        result = ex.fn()
    files = result["files"]
    result["files"] = files + [f for f in dict.fromkeys(written) if f not in files]
    return result


def build_in_subprocess(module: str, name: str, out: str) -> dict:
    """Build one example in a fresh interpreter (``python -m module``) with a fixed hash seed.

    Some generated names in the TOSA sidecars depend on set/dict iteration order and
    on what was lowered earlier in the same process; a fresh process with
    PYTHONHASHSEED=0 per example makes every file reproducible on its own.
    """
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as td:
        result_file = os.path.join(td, "result.json")
        cmd = [sys.executable, "-m", module, "--_worker", name]
        cmd += ["--out", out, "--_result", result_file]
        rc = subprocess.call(cmd, env=env, cwd=REPO)
        if rc != 0:
            raise RuntimeError(f"worker for {name} exited with status {rc}")
        with open(result_file) as f:
            return json.load(f)


def run_worker(ex: Example, out: str, result_file: str) -> int:
    """The child process of ``build_in_subprocess``: build one example in ``out`` (torch seeded),
    report its result, with its build time, as JSON in ``result_file``."""
    os.chdir(os.path.abspath(out))
    torch.manual_seed(SEED)
    t0 = time.time()
    result = build_recording(ex)
    result["build_seconds"] = round(time.time() - t0, 1)
    with open(result_file, "w") as f:
        json.dump(result, f)
    return 0


def reset_outputs(*paths: str):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def prune_artifacts(art: str) -> None:
    """`out.tosa` duplicates the last partition's output_tag*.tosa and `output/out_vela.npz` the
    delegate payload (both belong to the LAST partition only): dropped to keep examples small."""
    reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))


def list_files(d: str) -> list[str]:
    out = []
    for root, _, files in os.walk(d):
        for f in files:
            out.append(os.path.join(root, f))
    return sorted(out)


# --------------------------------------------------------------------------------------
# No machine path in the outputs
# --------------------------------------------------------------------------------------

_SITE_RE = re.compile(r'(?:/[^"\s]*)?/(?:site|dist)-packages/')


def sanitize_path_text(text: str) -> str:
    """Make absolute source paths in a stack trace machine-independent.

    ``.../site-packages/torch/nn/...`` -> ``<site-packages>/torch/nn/...``, the
    repository root -> relative, the Python stdlib -> ``<python>/``.
    """
    text = _SITE_RE.sub("<site-packages>/", text)
    text = text.replace(REPO + os.sep, "")
    stdlib = os.path.dirname(os.__file__)
    text = text.replace(stdlib + os.sep, "<python>/")
    return text


def check_paths(out: str, paths: list[str]) -> list[str]:
    """The outputs (ETRecords unzipped) that contain an absolute machine path."""
    hits = []
    for rel in paths:
        full = os.path.join(out, rel)
        for p in list_files(full) if os.path.isdir(full) else [full]:
            with open(p, "rb") as f:
                data = f.read()
            if p.endswith((".etrecord", "_etrecord.bin")):  # deflated zip: look inside it
                with zipfile.ZipFile(p) as z:
                    data = b"".join(z.read(i) for i in z.infolist())
            if ABS_PATH_RE.search(data):
                hits.append(os.path.relpath(p, out))
    return hits
