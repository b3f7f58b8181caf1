"""Core ML payloads: our reading of the flattened model folder against ExecuTorch's own
`executorchcoreml.unflatten_directory_contents`, which writes the folder back to disk: every file
we list, with its bytes, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pte_adapter
from pte_adapter.delegates.coreml.filetree import read_file_tree
from pte_adapter.delegates.coreml.layout import payload_layout
from tests.support.examples import EXAMPLES

COREML_EXAMPLES = sorted(EXAMPLES.glob("coreml_*.pte"))


def _payloads(path: Path) -> list[tuple[int, bytes]]:
    """(offset in the file, bytes) of each Core ML payload, by ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(path.read_bytes()).program
    out = []
    data = path.read_bytes()
    for plan in prog.execution_plan:
        for d in plan.delegates:
            assert d.id == "CoreMLBackend"
            payload = bytes(prog.backend_delegate_data[d.processed.index].data)
            out.append((data.find(payload), payload))
    return out


def _unflattened(payload: bytes, into: Path) -> dict[str, bytes]:
    from executorch.backends.apple.coreml import executorchcoreml

    into.mkdir()
    assert executorchcoreml.unflatten_directory_contents(payload, str(into))
    (root,) = list(into.iterdir())
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_coreml_examples_ship() -> None:
    assert [p.name for p in COREML_EXAMPLES] == ["coreml_small.pte"]


def test_file_tree_matches_executorchcoreml(tmp_path: Path) -> None:
    for path in COREML_EXAMPLES:
        program = pte_adapter.load(path)
        delegates = [d for m in program.methods for d in m.delegates]
        for i, (_, payload) in enumerate(_payloads(path)):
            files = _unflattened(payload, tmp_path / f"{path.stem}_{i}")
            tree = read_file_tree(memoryview(payload), "x", 0)
            assert {f.path: payload[f.offset : f.offset + f.size] for f in tree.files} == files
            dec = delegates[i].decoded
            assert not dec.problems, dec.problems
            (g,) = dec.graphs
            assert sorted(n.attrs["path"] for n in g.nodes) == sorted(files)
            meta = json.loads(files["metadata.json"])
            assert dec.num_inputs == len(meta["inputNames"])
            assert dec.num_outputs == len(meta["outputNames"])
            assert dec.summary["identifier"] == meta["identifier"]
            manifest = json.loads(files["model.mlpackage/Manifest.json"])
            entry = manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]
            model = "model.mlpackage/Data/" + entry["path"]
            assert dec.stats["coreml_model_bytes"] == len(files[model])


def test_layout_accounts_for_every_payload_byte() -> None:
    for path in COREML_EXAMPLES:
        for offset, payload in _payloads(path):
            layout = payload_layout(memoryview(payload), offset, None)
            covered = bytearray(len(payload))
            for s in layout.spans:
                assert covered[s.offset - offset : s.offset - offset + s.size].count(1) == 0
                covered[s.offset - offset : s.offset - offset + s.size] = b"\1" * s.size
            # What the files and the index leave is alignment between files: zeros.
            assert all(payload[i] == 0 for i in range(len(payload)) if not covered[i])
