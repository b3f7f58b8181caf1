"""Vela, the Ethos-U compiler, as an oracle: the example programs' Ethos-U payloads read by
ExecuTorch's own deserializer, and Vela's own compile of the TOSA each example keeps beside it.

Vela (`ethos-u-vela`) is in the test extra, so CI always has it: a missing Vela, an example
without Ethos-U partitions or without its TOSA sidecars is a failure, never a skip.

`vela_runs()` compiles every sidecar `.tosa` once, with the delegate's own compile flags and both
`--verbose-register-command-stream` (the register printout tests/oracle/test_ethosu.py compares
command by command) and `--verbose-performance` (the estimate tests/oracle/test_npu_estimate.py
compares with ours), and gives each partition the compile whose command stream is byte-identical
to its `cmd_data`, so Vela's account describes exactly those bytes. The `vela_runs` fixture in
tests/conftest.py holds it for the session, so both test modules share one set of compiles.
"""

from __future__ import annotations

import csv
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pte_adapter.container.pte import Span
from pte_adapter.container.sources import Located
from pte_adapter.delegates.ethosu.binstream import parse_bin_stream
from pte_adapter.delegates.hooks import DecodeContext
from tests.support.examples import EXAMPLE_PTES, oracle_program_bytes

ETHOSU_PTES = [p for p in EXAMPLE_PTES if b"vela_bin_stream" in p.read_bytes()]
VERBOSE = ("--verbose-register-command-stream", "--verbose-performance")


@dataclass
class Partition:
    """One Ethos-U delegate payload of an example program, as ExecuTorch's deserializer gives it."""

    pte: Path
    method: str
    index: int
    payload: bytes
    specs: dict[str, bytes]

    @property
    def name(self) -> str:
        return f"{self.pte.stem}/{self.method}/{self.index}"

    def ctx(self) -> DecodeContext:
        return DecodeContext("EthosUBackend", dict(self.specs), sources=PtdOracle(self.pte.parent))  # type: ignore[arg-type]


class PtdOracle:
    """Resolves external Vela blocks from the .ptd files beside the .pte with ExecuTorch's own
    FlatTensor deserializer (independent of pte_adapter's container)."""

    def __init__(self, folder: Path) -> None:
        from executorch.exir._serialize._cord import Cord
        from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

        self.blobs: dict[str, tuple[bytes, str]] = {}
        for ptd in sorted(folder.glob("*.ptd")):
            payload = FlatTensorSerializer().deserialize(Cord(ptd.read_bytes()))
            for key, entry in payload.named_data.items():
                buf = payload.buffers[entry.buffer_index]
                self.blobs[key] = (bytes(getattr(buf, "buffer", buf)), ptd.name)

    def find(self, key: str) -> Located | None:
        if key not in self.blobs:
            return None
        data, source = self.blobs[key]
        return Located(memoryview(data), source, Span(0, len(data)))

    def searched(self) -> str:
        return "the .ptd files beside the .pte"


def ethosu_partitions(pte: Path) -> list[Partition]:
    """The Ethos-U payloads of one program, read by ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    # A bundle (bundle_ethosu55_as_pte.pte) holds its program: read that.
    program = deserialize_pte_binary(oracle_program_bytes(pte.read_bytes())).program
    out: list[Partition] = []
    for plan in program.execution_plan:
        for i, d in enumerate(plan.delegates):
            if d.id != "EthosUBackend":
                continue
            # deserialize_pte_binary moves segment payloads back inline.
            data = program.backend_delegate_data[d.processed.index].data
            specs = {c.key: bytes(c.value) for c in d.compile_specs}
            out.append(Partition(pte, plan.name, i, bytes(data), specs))
    return out


def all_ethosu_partitions() -> list[Partition]:
    """Every Ethos-U payload of every example; none at all is a failure."""
    parts = [part for p in ETHOSU_PTES for part in ethosu_partitions(p)]
    if not parts:
        pytest.fail(
            "no Ethos-U example programs in examples/: run python -m examples.build_examples"
        )
    return parts


def vela_exe() -> str:
    """The `vela` of this environment; a missing one fails the test (it is in the test extra)."""
    beside = Path(sys.executable).with_name("vela")
    exe = str(beside) if beside.exists() else shutil.which("vela")
    if not exe:
        pytest.fail(
            "vela is not installed: pip install -e '.[test]' (ethos-u-vela is in the extra)"
        )
    return exe


@dataclass
class VelaRun:
    """One `vela` compile of a sidecar .tosa: its command stream and what Vela said about it."""

    tosa: Path
    out: Path  # the --output-dir
    stdout: str
    npz: dict[str, Any]  # the *_vela.npz arrays
    summary: dict[str, str]  # the *_summary_*.csv row
    per_layer: list[dict[str, str]]  # the *_per-layer.csv rows (with --verbose-performance)

    @property
    def cmd_data(self) -> bytes:
        return bytes(self.npz["cmd_data"].tobytes())


def run_vela(tosa: Path, flags: list[str], out: Path, timeout: float = 300) -> VelaRun:
    """Compile `tosa` with `flags` (niced: the machine is shared) and read what Vela wrote."""
    import numpy as np  # Vela depends on numpy

    cmd = ["nice", "-n", "10", vela_exe(), *flags, f"--output-dir={out}", str(tosa)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"vela failed on {tosa.name}:\n{proc.stderr[-2000:]}"
    # Vela stores the ragged I/O shape lists as object arrays; this is our own fresh output.
    with np.load(next(out.glob("*_vela.npz")), allow_pickle=True) as data:
        npz = {k: data[k] for k in data.files}
    with next(out.glob("*_summary_*.csv")).open() as f:
        summary = next(csv.DictReader(f))
    per_layer: list[dict[str, str]] = []
    for path in out.glob("*_per-layer.csv"):
        with path.open() as f:
            per_layer = list(csv.DictReader(f))
    return VelaRun(tosa, out, proc.stdout, npz, summary, per_layer)


def sidecar_jobs(partitions: list[Partition]) -> list[tuple[Path, list[str]]]:
    """(sidecar .tosa, the delegate's own compile flags) for every example that keeps its TOSA;
    none at all is a failure."""
    jobs: list[tuple[Path, list[str]]] = []
    for pte in ETHOSU_PTES:
        parts = [p for p in partitions if p.pte == pte]
        art = pte.with_name(f"{pte.stem}_artifacts")
        if not parts or not art.is_dir():
            continue
        flags = shlex.split(parts[0].specs["compile_flags"].decode())
        flags = [f for f in flags if not f.startswith("--output-dir")]
        jobs += [(t, flags) for t in sorted(art.glob("*.tosa")) if t.name != "out.tosa"]
    assert jobs, (
        "no Ethos-U example keeps its TOSA artifacts: run python -m examples.build_examples"
    )
    return jobs


def vela_runs(partitions: list[Partition], base: Path, workers: int = 2) -> dict[str, VelaRun]:
    """partition name -> the Vela compile that produced byte-identical command data."""
    jobs = sidecar_jobs(partitions)

    def compile_job(i: int) -> VelaRun:
        tosa, flags = jobs[i]
        out = base / str(i)
        out.mkdir(parents=True)
        return run_vela(tosa, [*flags, *VERBOSE], out)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(compile_job, range(len(jobs))))
    matches: dict[str, VelaRun] = {}
    for part in partitions:
        cmd = parse_bin_stream(memoryview(part.payload)).data("cmd_data")
        assert cmd is not None, part.name
        for run in runs:
            if run.cmd_data == bytes(cmd):
                matches[part.name] = run
    return matches
