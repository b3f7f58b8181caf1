#!/usr/bin/env python3
"""Build the emulated run of `mv2_lrn_ethosu85` (issue 43) and its float reference.

Ethos-U programs cannot run here, so no real ETDump with intermediate outputs exists for them.
This writes one that says plainly what it is: the committed `mv2_lrn_ethosu85.pte` (not a
re-export) stepped through instruction by instruction on one fixed input (`emulation.py`), each
EthosUBackend call computed by the TOSA reference model on the `.tosa` its partition was compiled
from, each CPU kernel by ExecuTorch's own kernel in its pip runtime where it has one
(quantize/dequantize) and by torch's ATen operator where no ExecuTorch kernel exists
(`aten::avg_pool3d.out`). The ETDump is written with ExecuTorch's own schema and serializer,
the debug buffer laid out as the runtime's `BufferDataSink` lays it out (`emulated_etdump.py`);
its run is named `emulated: ...`, and it holds no profile events (nothing was timed).

Files, in `emulated/` (a subfolder, so the adapter never takes them for the program's measured
ETDump, which it looks for beside the program as `<stem>.etdp`):

- `mv2_lrn_ethosu85.emulated.etdp`, `mv2_lrn_ethosu85.emulated.debug_buffer.bin`: the emulated run;
- `mv2_lrn_ethosu85.emulated.json`: how each instruction's outputs were computed, the sidecar each
  delegate was matched to (with Vela's recompile check), the input, the toolchain;
- `float_reference/` (NOT committed, ~115 MB: git-ignored): `mv2_lrn_float.pte`, `.etrecord`,
  `.etdp` and `.debug_buffer.bin`, the same network in float run by the pip runtime on the same
  input (`float_reference.py`), the reference its SNR is measured against.

The emulated files' entry in `manifest.json` and `README.md` is rewritten too.

Usage (from the repository root)::

    python -m examples.build_emulated                  # everything (about a minute here)
    python -m examples.build_emulated --no-reference   # only the committed files
    python -m examples.build_emulated --reference-only --reference-out DIR
    python -m examples.build_emulated --no-vela        # skip Vela's recompile of each sidecar
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from examples.common import HERE as _HERE
from examples.common import check_paths
from examples.emulated_etdump import (
    ALIGNMENT,
    UNSET_CHAIN,
    UNSET_INSTRUCTION,
    DebugBuffer,
    value_event,
    write_etdump,
)
from examples.emulation import EmulatedRun, emulate, sha256, tosa_version, vela_recompiles
from examples.float_reference import INPUT_SEED, STEM, build_float_reference, fixed_input
from examples.manifest import write_manifest
from examples.readme import write_readme

HERE = Path(_HERE)
NAME = "emulated_mv2_lrn_ethosu85"
PROGRAM = "mv2_lrn_ethosu85"
FOLDER = "emulated"
REFERENCE_FOLDER = f"{FOLDER}/float_reference"
PREFIX = f"{FOLDER}/{PROGRAM}.emulated"
DESCRIPTION = (
    "EMULATED run (not measured) of mv2_lrn_ethosu85.pte on one fixed input: each EthosUBackend "
    "call computed by tosa_reference_model on its partition's .tosa (matched by I/O, recompiled "
    "by Vela to the payload's exact command stream), quantize/dequantize by ExecuTorch's own "
    "kernels in its pip runtime, aten::avg_pool3d by torch (ExecuTorch has no kernel for it); an "
    "ETDump (run named 'emulated: ...', debug events only) and debug buffer written as the "
    "runtime writes them (build_emulated.py). The float reference (float_reference/, "
    "mv2_lrn_float) is rebuilt on demand, not committed."
)


def run_name() -> str:
    return f"emulated: TOSA reference model (tosa-tools {tosa_version()}), host CPU kernels"


def etdump_events(run: EmulatedRun, buffer: DebugBuffer) -> list:
    """The debug events the runtime would log for `run`, in its order."""
    events = []
    for step, arrays in zip(run.steps, run.logged, strict=True):
        events += [value_event(0, step.instruction, a, buffer) for a in arrays]
    for array in run.outputs:  # Method::log_outputs, after the last instruction
        events.append(value_event(UNSET_CHAIN, UNSET_INSTRUCTION, array, buffer, output=True))
    return events


def write_emulated(run: EmulatedRun, out: Path) -> tuple[bytes, bytes]:
    """The emulated ETDump and debug buffer in `out`/emulated/: (etdump bytes, buffer bytes)."""
    (out / FOLDER).mkdir(parents=True, exist_ok=True)
    buffer = DebugBuffer()
    events = etdump_events(run, buffer)
    etdump = write_etdump(run_name(), events, out / f"{PREFIX}.etdp")
    (out / f"{PREFIX}.debug_buffer.bin").write_bytes(bytes(buffer.data))
    return etdump, bytes(buffer.data)


def reread(etdump: bytes, buffer: bytes, run: EmulatedRun) -> dict:
    """ExecuTorch's own reading of the written ETDump, checked against the run: its facts."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    doc = deserialize_from_etdump_flatcc(etdump)
    (data,) = doc.run_data
    expected = [a for arrays in run.logged for a in arrays] + list(run.outputs)
    events = [e.debug_event for e in data.events]
    if any(e.profile_event or e.allocation_event for e in data.events) or None in events:
        raise AssertionError("the emulated ETDump holds more than debug events")
    for event, array in zip(events, expected, strict=True):
        t = event.debug_entry.tensor
        got = np.frombuffer(buffer, array.dtype, array.size, t.offset).reshape(t.sizes)
        if t.offset % ALIGNMENT or not np.array_equal(got, array):
            raise AssertionError(f"event at instruction {event.instruction_id} reads back wrong")
    return {
        "run_name": data.name,
        "debug_events": len(events),
        "profile_events": 0,
        "debug_buffer_bytes": len(buffer),
        "etdump_bytes": len(etdump),
    }


def provenance(run: EmulatedRun, vela: dict[int, bool | None], x: np.ndarray) -> dict:
    """What `<prefix>.json` says: how every logged value was computed."""
    steps = []
    for step in run.steps:
        row = {
            "instruction": step.instruction,
            "kind": step.kind,
            "name": step.name,
            "logged_values": step.logged,
            "computed_by": step.how,
        }
        if step.sidecar is not None:
            index = run.program.execution_plan[0].chains[0].instructions[step.instruction]
            delegate = index.instr_args.delegate_index
            row["sidecar"] = str(step.sidecar.resolve().relative_to(HERE))
            row["sidecar_sha256"] = sha256(step.sidecar.read_bytes())
            row["vela_recompiles_to_payload"] = vela.get(delegate)
        steps.append(row)
    return {
        "generator": "examples/build_emulated.py",
        "emulated": True,
        "note": "Not a measurement: computed on this host (see 'computed_by'); paths are "
        "relative to examples/. Nothing was timed: the ETDump has no profile events.",
        "program": f"{PROGRAM}.pte",
        "program_sha256": sha256((HERE / f"{PROGRAM}.pte").read_bytes()),
        "run_name": run_name(),
        "input": {
            "shape": list(x.shape),
            "dtype": str(x.dtype),
            "made_by": f"torch.randn(1, 3, 224, 224, generator=torch.Generator()"
            f".manual_seed({INPUT_SEED}))",
            "sha256": sha256(x.tobytes()),
        },
        "toolchain": {p: version(p) for p in ("torch", "executorch", "tosa-tools", "ethos-u-vela")},
        "instructions": steps,
        "float_reference": f"{REFERENCE_FOLDER}/{STEM}.pte (python -m examples.build_emulated)",
    }


def build_emulated(out: Path, check_vela: bool) -> tuple[dict, dict]:
    """The committed files: (manifest entry, facts read back)."""
    t0 = time.time()
    x = fixed_input().numpy()
    artifacts = HERE / f"{PROGRAM}_artifacts"
    run = emulate(HERE / f"{PROGRAM}.pte", artifacts, [x], HERE)
    vela: dict[int, bool | None] = {}
    for step in run.steps:
        if step.sidecar is not None:
            instr = run.program.execution_plan[0].chains[0].instructions[step.instruction]
            index = instr.instr_args.delegate_index
            vela[index] = vela_recompiles(run.program, index, step.sidecar) if check_vela else None
            if vela[index] is False:
                raise AssertionError(f"{step.sidecar.name} does not recompile to delegate {index}")
    etdump, buffer = write_emulated(run, out)
    facts = reread(etdump, buffer, run)
    doc = provenance(run, vela, x)
    with open(out / f"{PREFIX}.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    files = [f"{PREFIX}.etdp", f"{PREFIX}.debug_buffer.bin", f"{PREFIX}.json"]
    entry = {
        "kind": "emulated",
        "description": DESCRIPTION,
        "files": files,
        "sidecars": [],
        "build_seconds": round(time.time() - t0, 1),
        "settings": {
            "program": f"{PROGRAM}.pte",
            "input": doc["input"]["made_by"],
            "run_name": run_name(),
            "float_reference": doc["float_reference"],
        },
        "facts": {"pte": {}, "ptd": {}, "tosa": {}, "etdump": {f"{PREFIX}.etdp": facts}},
    }
    return entry, facts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", default=HERE, type=Path, help="examples folder to write into")
    ap.add_argument("--no-reference", action="store_true", help="skip the float reference")
    ap.add_argument("--reference-only", action="store_true", help="only the float reference")
    ap.add_argument("--reference-out", type=Path, help=f"default: OUT/{REFERENCE_FOLDER}")
    ap.add_argument("--no-vela", action="store_true", help="skip Vela's recompile check")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if not args.reference_only:
        entry, facts = build_emulated(out, check_vela=not args.no_vela)
        print(f"{NAME}: {facts}")
        hits = check_paths(str(out), entry["files"])
        if hits:
            print(f"absolute machine path in {hits}")
            return 1
        write_readme(str(out), write_manifest(str(out), {NAME: entry}))
    if not args.no_reference:
        ref = (args.reference_out or out / REFERENCE_FOLDER).resolve()
        t0 = time.time()
        files = build_float_reference(ref)
        print(f"float reference in {ref}: {files} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
