"""Optional: Vela's own performance estimate for an Ethos-U partition, next to ours.

Only on request (`pte-adapter vela`, `pte-adapter export --vela`): the adapter itself never
executes anything. For each Ethos-U delegate whose sidecar `.tosa` was matched, the installed
`vela` compiles the sidecar alone in a temporary folder, with a time limit and only the compile
flags that change the result (accelerator, system config, memory mode, optimisation goal; the
bundled vela.ini only, never a path from the file), and its per-layer CSV is put on the TOSA
source graph (`vela_*` node attributes, by output tensor name) and its total next to our
estimate. Whether Vela's command stream is byte-identical to the payload's is reported: only then
do its numbers describe exactly the program that ships.
"""

from __future__ import annotations

import csv
import importlib.util
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pte_adapter.delegates.ethosu.binstream import parse_bin_stream
from pte_adapter.errors import PteFormatError
from pte_adapter.program.delegate_graph import DelegateGraph
from pte_adapter.program.model import Delegate, Program

SOURCE_GRAPH = "TOSA source"
DEFAULT_TIMEOUT = 300.0
# Flags passed on from the compile spec: they change the compiled program or its estimate.
_KEPT_FLAGS = (
    "--accelerator-config",
    "--system-config",
    "--memory-mode",
    "--optimise",
    "--arena-cache-size",
    "--cop-format",
)
_BUNDLED_CONFIG = "Arm/vela.ini"


@dataclass
class VelaRun:
    sidecar: str
    cycles: int | None = None
    npu_cycles: int | None = None
    macs: int | None = None
    clock_hz: float | None = None
    per_layer: list[dict[str, str]] = field(default_factory=list)
    cmd_data: bytes | None = None  # the command stream Vela compiled
    error: str = ""


def vela_command() -> list[str] | None:
    """How to start Vela: the installed module with this interpreter, else `vela` on PATH."""
    if importlib.util.find_spec("ethosu") is not None:
        return [sys.executable, "-m", "ethosu.vela"]
    exe = shutil.which("vela")
    return [exe] if exe else None


def safe_flags(compile_flags: str) -> list[str]:
    """The compile spec's flags that matter for the estimate; nothing that names a path."""
    try:
        words = shlex.split(compile_flags)
    except ValueError:
        words = compile_flags.split()
    out: list[str] = []
    for i, w in enumerate(words):
        key, eq, value = w.partition("=")
        if not eq and i + 1 < len(words):
            value = words[i + 1]
        if key in _KEPT_FLAGS and value and all(c.isalnum() or c in "_-." for c in value):
            out.append(f"{key}={value}")
        elif key == "--config" and value == _BUNDLED_CONFIG:
            out.append(f"--config={_BUNDLED_CONFIG}")
    return out


def run_vela(sidecar: Path, flags: list[str], timeout: float = DEFAULT_TIMEOUT) -> VelaRun:
    run = VelaRun(sidecar.name)
    cmd = vela_command()
    if cmd is None:
        run.error = "Vela is not installed (pip install ethos-u-vela)"
        return run
    with tempfile.TemporaryDirectory(prefix="pte_adapter_vela_") as tmp:
        out = Path(tmp)
        try:
            proc = subprocess.run(
                [
                    *cmd,
                    *flags,
                    f"--output-dir={out}",
                    "--output-format=raw",
                    "--verbose-performance",
                    str(sidecar.resolve()),
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                cwd=tmp,
            )
        except subprocess.TimeoutExpired:
            run.error = f"Vela took longer than {timeout:g} s"
            return run
        except OSError as e:
            run.error = f"Vela could not be started: {e}"
            return run
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            run.error = f"Vela failed (exit {proc.returncode}): {tail[0]}"
            return run
        summary_csv = next(out.glob("*_summary_*.csv"), None)
        layer_csv = next(out.glob("*_per-layer.csv"), None)
        if summary_csv is None or layer_csv is None:
            run.error = "Vela wrote no performance CSV"
            return run
        with summary_csv.open() as f:
            summary = next(csv.DictReader(f), {})
        with layer_csv.open() as f:
            run.per_layer = list(csv.DictReader(f))
        try:
            run.cycles = int(float(summary["cycles_total"]))
            run.npu_cycles = int(float(summary["cycles_npu"]))
            run.macs = int(float(summary["nn_macs"]))
            run.clock_hz = float(summary["core_clock"])
        except (KeyError, ValueError) as e:
            run.error = f"Vela's summary CSV lacks {e}"
        npz = next(out.glob("*_vela.npz"), None)
        if npz is not None:
            run.cmd_data = _npz_cmd_data(npz)
    return run


def _npz_cmd_data(npz: Path) -> bytes | None:
    try:
        import numpy as np  # Vela depends on numpy: present whenever Vela ran
    except ImportError:  # pragma: no cover
        return None
    try:
        with np.load(npz, allow_pickle=False) as data:
            return bytes(data["cmd_data"].tobytes()) if "cmd_data" in data.files else None
    except (OSError, ValueError):
        return None


def _annotate(graph: DelegateGraph, run: VelaRun) -> int:
    """Vela's per-layer numbers on the TOSA source nodes, by output tensor name; returns hits."""
    by_name: dict[str, dict[str, int]] = {}
    for row in run.per_layer:
        name = row.get("Name", "")
        acc = by_name.setdefault(name, {"cycles": 0, "npu": 0, "macs": 0, "rows": 0})
        try:
            acc["cycles"] += int(float(row.get("Op Cycles") or 0))
            acc["npu"] += int(float(row.get("NPU") or 0))
            acc["macs"] += int(float(row.get("MAC Count") or 0))
        except ValueError:
            continue
        acc["rows"] += 1
    hits = 0
    for node in graph.nodes:
        names = [graph.tensors[t].name for t in node.outputs if t in graph.tensors]
        for name in names:
            layer = by_name.get(name)
            if layer is None:
                continue
            node.attrs["vela_cycles"] = str(layer["cycles"])
            node.attrs["vela_npu_cycles"] = str(layer["npu"])
            node.attrs["vela_macs"] = str(layer["macs"])
            if layer["rows"] > 1:
                node.attrs["vela_layers"] = str(layer["rows"])
            hits += 1
            break
    return hits


def _source_graph(delegate: Delegate) -> DelegateGraph | None:
    return next((g for g in delegate.decoded.graphs if g.name == SOURCE_GRAPH), None)


def compare_with_vela(
    program: Program, delegates: list[Delegate], timeout: float = DEFAULT_TIMEOUT
) -> list[dict[str, Any]]:
    """The `compiler_check` hook: run Vela on the matched sidecar of each of these Ethos-U
    delegates; annotate the TOSA source graphs; one row per partition, in the program's order."""
    rows: list[dict[str, Any]] = []
    asked = {id(d) for d in delegates}
    for method in program.methods:
        for index, delegate in enumerate(method.delegates):
            if id(delegate) not in asked:
                continue
            stats = delegate.decoded.stats
            row: dict[str, Any] = {
                "method": method.name,
                "delegate": index,
                "ours_cycles": stats.get("npu_est_cycles"),
                "ours_us": stats.get("npu_est_us"),
            }
            rows.append(row)
            graph = _source_graph(delegate)
            sidecar = graph.source_file if graph is not None else None
            if graph is None or not sidecar:
                row["error"] = "no matched sidecar .tosa"
                continue
            path = Path(sidecar)
            flags = safe_flags(delegate.spec("compile_flags") or "")
            run = run_vela(path, flags, timeout)
            row["sidecar"] = run.sidecar
            if run.error:
                row["error"] = run.error
                delegate.decoded.summary["vela_estimate"] = run.error
                continue
            row.update(vela_cycles=run.cycles, vela_npu_cycles=run.npu_cycles, vela_macs=run.macs)
            if run.clock_hz and run.cycles is not None:
                row["vela_us"] = round(run.cycles / run.clock_hz * 1e6, 1)
            ours = row["ours_cycles"]
            if isinstance(ours, int) and run.cycles:
                row["deviation"] = round((ours - run.cycles) / run.cycles, 4)
            row["identical_stream"] = _identical(program, delegate, run.cmd_data)
            row["annotated_nodes"] = _annotate(graph, run)
            graph.attrs["vela_total_cycles"] = str(run.cycles)
            graph.attrs["estimate_total_cycles"] = str(ours)
            delegate.decoded.summary["vela_estimate"] = (
                f"{run.cycles} cycles (ours {ours}"
                + (f", {row['deviation']:+.1%}" if "deviation" in row else "")
                + (
                    "; same command stream"
                    if row["identical_stream"]
                    else "; Vela's command stream differs from the payload's"
                )
                + ")"
            )
    return rows


def _identical(program: Program, delegate: Delegate, cmd: bytes | None) -> bool | None:
    """Whether Vela compiled exactly the payload's command stream (None: cannot tell)."""
    if cmd is None:
        return None
    try:
        payload = program.delegate_payload(delegate)
        data = parse_bin_stream(payload).data("cmd_data") if payload is not None else None
    except PteFormatError:
        return None
    return None if data is None else bytes(data) == cmd
