"""VGF payloads (`VgfBackend`): container header, sections, modules, model sequence, resources.

`examples/vgf_small.pte` was built by `examples/build_vgf_example.py` (ExecuTorch's VGF backend +
Arm model-converter 0.11.0). The payload is checked against ExecuTorch's own deserializer (for the
payload bytes and the DelegateCall) and, when Arm's `vgf_dump` tool is available (the optional
`ai-ml-sdk-vgf-library` package, or `VGF_DUMP=/path/to/vgf_dump`), against its JSON dump.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.delegates import vgf
from pte_adapter.delegates.registry import DecodeContext
from pte_adapter.errors import PteFormatError
from tests.support.corruption import Outcomes, byte_edits
from tests.support.examples import EXAMPLES

EXAMPLE = EXAMPLES / "vgf_small.pte"


def test_the_example_ships() -> None:
    # A shipped example that is missing is a failure, not a skip.
    assert EXAMPLE.exists(), "examples/vgf_small.pte is missing (examples/build_vgf_example.py)"


def _executorch_payloads() -> list[tuple[bytes, int]]:
    """(payload, DelegateCall arg count) per VgfBackend delegate, via ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(EXAMPLE.read_bytes()).program
    out = []
    for plan in prog.execution_plan:
        nargs = {
            ins.instr_args.delegate_index: len(ins.instr_args.args)
            for chain in plan.chains
            for ins in chain.instructions
            if type(ins.instr_args).__name__ == "DelegateCall"
        }
        for i, d in enumerate(plan.delegates):
            if d.id == "VgfBackend":
                out.append((bytes(prog.backend_delegate_data[d.processed.index].data), nargs[i]))
    return out


def _vgf_dump() -> str | None:
    env = os.environ.get("VGF_DUMP")
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which("vgf_dump")
    if found:
        return found
    with contextlib.suppress(ImportError):
        import vgf_lib  # type: ignore[import-not-found]

        cand = Path(vgf_lib.__file__).parent / "binaries" / "bin" / "vgf_dump"
        if os.access(cand, os.X_OK):
            return str(cand)
    return None


def _decode(payload: bytes) -> Any:
    return vgf.decode(memoryview(payload), DecodeContext(delegate_id="VgfBackend"))


def test_loads_with_vgf_summary_and_io_split() -> None:
    program = pte_adapter.load(EXAMPLE)
    delegates = [d for m in program.methods for d in m.delegates if d.id == "VgfBackend"]
    expected = _executorch_payloads()
    assert len(delegates) == len(expected) >= 1
    for d, (payload, nargs) in zip(delegates, expected, strict=True):
        dec = d.decoded
        assert not dec.problems, dec.problems
        assert dec.summary["format"].startswith("VGF ")
        assert dec.num_inputs is not None and dec.num_outputs is not None
        assert dec.num_inputs + dec.num_outputs == nargs
        # The payload our reader handed over is the one ExecuTorch finds.
        assert d.payload_size == len(payload)
        g = dec.graphs[0]
        assert g.nodes and all(n.kind.endswith("_SEGMENT") for n in g.nodes)
        assert {t.attrs["category"] for t in g.tensors.values()} >= {"INPUT", "OUTPUT"}


def test_matches_vgf_dump(tmp_path: Path) -> None:
    tool = _vgf_dump()
    if tool is None:
        pytest.skip("vgf_dump not available (pip install ai-ml-sdk-vgf-library, or set VGF_DUMP)")
    for k, (payload, _) in enumerate(_executorch_payloads()):
        f = tmp_path / f"p{k}.vgf"
        f.write_bytes(payload)
        ref = json.loads(
            subprocess.run([tool, "-i", str(f)], capture_output=True, check=True).stdout
        )
        dec = _decode(payload)
        g = dec.graphs[0]
        assert dec.summary["format"] == "VGF {major}.{minor}.{patch}".format(**ref["header"])
        # Modules: names, kinds, entry points in order.
        ours_modules = dec.summary["modules"].split("; ")
        assert len(ours_modules) == len(ref["modules"])
        for text, m in zip(ours_modules, ref["modules"], strict=True):
            assert text.startswith(f"{m['name']} ({m['type']}, entry {m['entry_point']}, ")
            assert m["shader_type"] in text
        # Resources: category, shape, format (and descriptor type) per index.
        assert len(g.tensors) == len(ref["resources"])
        for r in ref["resources"]:
            t = g.tensors[f"r{r['index']}"]
            assert t.attrs["category"] == r["category"]
            assert t.shape == r["shape"]
            assert t.attrs["vk_format"] == r["vk_format"]
            assert t.attrs["vk_descriptor_type"] == r["vk_descriptor_type"]
        # Model sequence: inputs/outputs and segments.
        seq = ref["model_sequence"]
        assert g.inputs == [f"r{b['mrt_index']}" for b in seq["inputs"]]
        assert g.outputs == [f"r{b['mrt_index']}" for b in seq["outputs"]]
        assert len(g.nodes) == len(seq["segments"])
        for node, s in zip(g.nodes, seq["segments"], strict=True):
            assert node.label == s["name"]
            assert node.attrs["type"] == s["type"]
            assert node.outputs == [f"r{b['mrt_index']}" for b in s["outputs"]]
            const_mrts = [f"r{ref['constants'][c]['mrt_index']}" for c in s["constants"]]
            assert node.inputs == [f"r{b['mrt_index']}" for b in s["inputs"]] + const_mrts
            assert node.attrs["dispatch_shape"] == str(s["dispatch_shape"])
        assert dec.summary["constants"].startswith(f"{len(ref['constants'])} ")


def test_not_vgf_is_a_format_error() -> None:
    for bad in (b"", b"VGF1" + b"\0" * 20, b"XXXX" + b"\0" * 200):
        with pytest.raises(PteFormatError):
            _decode(bad)


def test_corruptions_raise_format_error_only() -> None:
    payload = _executorch_payloads()[0][0]
    cuts: Outcomes[Any] = Outcomes("cuts of a VGF payload")
    for n in range(0, len(payload), max(1, len(payload) // 61)):
        cuts.attempt(n, _decode, payload[:n])
    # The header's section table reaches the end of the payload: every cut is refused.
    assert cuts.tried >= 61 and len(cuts.rejected) == cuts.tried, cuts
    rng = random.Random(139)
    edits: Outcomes[Any] = Outcomes("byte edits of a VGF payload")
    for _ in range(300):
        data, label = byte_edits(rng, payload)
        edits.attempt(tuple(label), _decode, data)
    # Measured: 124 of 300 (41 %); most accepted edits decode exactly like the intact payload
    # (they hit bytes the decoder does not interpret).
    assert edits.rejected_share >= 0.25, edits
    for label, result in edits.accepted:
        assert result.graphs and result.graphs[0].nodes, label
