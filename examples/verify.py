"""Verification: every written file re-read with the toolchain's own readers (ExecuTorch's
``deserialize_pte_binary``, its bundle and ``.ptd`` deserializers, tosa-tools' ``TosaGraph``);
the facts go to manifest.json and README.md."""

from __future__ import annotations

import collections
import hashlib
import os

from examples.common import list_files


def _enum_name(v):
    return getattr(v, "name", str(v))


def inspect_pte(path: str, deep: bool = True) -> dict:
    from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program
    from executorch.exir._serialize._program import (
        _get_extended_header,
        deserialize_pte_binary,
    )

    with open(path, "rb") as f:
        data = f.read()
    facts: dict = {"size": len(data), "file_identifier": data[4:8].decode("latin-1")}
    eh = _get_extended_header(data)
    program_size = len(data)
    if eh is not None and eh.is_valid():
        program_size = eh.program_size
        facts["extended_header"] = {
            "program_size": eh.program_size,
            "segment_base_offset": eh.segment_base_offset,
        }
    else:
        facts["extended_header"] = None
    # Raw program: as stored (segments not folded back in) -> storage facts.
    raw = _flatbuffer_to_program(data[:program_size])
    facts["num_segments"] = len(raw.segments)
    facts["named_data_keys"] = len(raw.named_data or [])
    facts["constant_segment_tensors"] = (
        max(0, len(raw.constant_segment.offsets) - 1) if raw.constant_segment else 0
    )
    facts["mutable_data_segments"] = len(raw.mutable_data_segments or [])
    facts["backend_delegate_data_inline"] = len(raw.backend_delegate_data)

    pte = deserialize_pte_binary(data)
    facts["methods"] = [
        _method_facts(raw_plan, plan)
        for raw_plan, plan in zip(raw.execution_plan, pte.program.execution_plan, strict=True)
    ]
    if deep:
        facts["payloads"] = _inspect_payloads(data, raw, pte)
    return facts


def _method_facts(raw_plan, plan) -> dict:
    """One method: instruction kinds, delegate calls per backend, delegates as stored (from the
    raw plan: segments not folded back in), operators and EXTERNAL tensors."""
    kinds: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    for chain in plan.chains:
        for ins in chain.instructions:
            k = type(ins.instr_args).__name__
            kinds[k] += 1
            if k == "DelegateCall":
                calls[plan.delegates[ins.instr_args.delegate_index].id] += 1
    return {
        "name": plan.name,
        "num_values": len(plan.values),
        "num_chains": len(plan.chains),
        "num_inputs": len(plan.inputs),
        "num_outputs": len(plan.outputs),
        "instructions": dict(sorted(kinds.items())),
        "delegate_calls": dict(sorted(calls.items())),
        "delegates": [_delegate_facts(d) for d in raw_plan.delegates],
        "operators": [f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators],
        "external_tensors": sum(
            1
            for v in plan.values
            if type(v.val).__name__ == "Tensor"
            and v.val.extra_tensor_info is not None
            and _enum_name(v.val.extra_tensor_info.location) == "EXTERNAL"
        ),
    }


def _delegate_facts(d) -> dict:
    specs = {cs.key: cs.value for cs in d.compile_specs}
    entry = {"id": d.id, "location": _enum_name(d.processed.location), "index": d.processed.index}
    for key in ("compile_flags", "debug_artifact_path"):
        if key in specs:
            entry[key] = bytes(specs[key]).decode(errors="replace")
    return entry


def _inspect_payloads(data, raw, pte) -> list[dict]:
    """Peek into delegate payloads: Vela block list / TOSA version / XNNPACK header."""
    import struct

    out = []
    prog = pte.program
    for plan in prog.execution_plan:
        for di, d in enumerate(plan.delegates):
            ref = d.processed
            payload = bytes(prog.backend_delegate_data[ref.index].data)
            info = {
                "method": plan.name,
                "delegate_index": di,
                "id": d.id,
                "payload_size": len(payload),
                "sha256": hashlib.sha256(payload).hexdigest(),
            }
            if d.id == "EthosUBackend":
                blocks, off = [], 0
                while off + 32 <= len(payload):
                    nm, size, ext = struct.unpack_from("<16sIB", payload, off)
                    nm = nm.rstrip(b"\0").decode()
                    body = payload[off + 32 : off + 32 + size]
                    b = {"name": nm, "size": size, "external": bool(ext)}
                    if nm == "cmd_data" and not ext:
                        b["magic"] = body[:4].decode("latin-1")
                    if nm in ("inputs", "outputs"):
                        b["count"] = struct.unpack_from("<i", body, 0)[0]
                    blocks.append(b)
                    off += 32 + ((size + 15) // 16) * 16
                    if nm == "vela_end_stream":
                        break
                info["vela_blocks"] = blocks
            elif d.id == "TOSABackend":
                info["identifier"] = payload[4:8].decode("latin-1")
            elif d.id == "XnnpackBackend":
                info["header_magic"] = payload[4:8].decode("latin-1")
                fb_off = struct.unpack_from("<I", payload, 10)[0]
                info["flatbuffer_identifier"] = payload[fb_off + 4 : fb_off + 8].decode("latin-1")
            out.append(info)
    return out


def inspect_ptd(path: str) -> dict:
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    with open(path, "rb") as f:
        data = f.read()
    payload = FlatTensorSerializer().deserialize(Cord(data))
    return {
        "size": len(data),
        "file_identifier": data[4:8].decode("latin-1"),
        "header_magic": data[8:12].decode("latin-1"),
        "named_data_keys": len(payload.named_data),
        "segments": len(payload.buffers),
    }


def inspect_tosa(path: str) -> dict:
    from tosa.TosaGraph import TosaGraph  # tosa-tools' generated reader

    with open(path, "rb") as f:
        data = f.read()
    g = TosaGraph.GetRootAs(data, 0)
    v = g.Version()
    ops, with_loc = 0, 0
    for r in range(g.RegionsLength()):
        reg = g.Regions(r)
        for b in range(reg.BlocksLength()):
            blk = reg.Blocks(b)
            for o in range(blk.OperatorsLength()):
                op = blk.Operators(o)
                ops += 1
                loc = op.Location()
                if loc is not None and loc.Text():
                    with_loc += 1
    return {
        "size": len(data),
        "identifier": data[4:8].decode("latin-1"),
        "version": f"{v._Major()}.{v._Minor()}.{v._Patch()}" + ("-draft" if v._Draft() else ""),
        "regions": g.RegionsLength(),
        "operators": ops,
        "operators_with_location": with_loc,
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def inspect_bundle(path: str) -> dict:
    """A bundle as ExecuTorch's own deserializer reads it: its test suites, and its program's facts
    (``inspect_pte`` of the program bytes)."""
    import tempfile

    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    with open(path, "rb") as f:
        data = f.read()
    bundle = deserialize_from_flatbuffer_to_bundled_program(data)
    with tempfile.TemporaryDirectory() as td:
        inner = os.path.join(td, "program.pte")
        with open(inner, "wb") as f:
            f.write(bytes(bundle.program))
        facts = inspect_pte(inner)
    facts.update(
        size=len(data),
        file_identifier=data[4:8].decode("latin-1"),
        program_size=len(bundle.program),
        bundle_version=bundle.version,
        test_suites={s.method_name: len(s.test_cases) for s in bundle.method_test_suites},
    )
    return facts


def verify_example(name: str, result: dict, out: str) -> dict:
    facts: dict = {"pte": {}, "ptd": {}, "tosa": {}}
    for f in result["files"]:
        p = os.path.join(out, f)
        if f.endswith((".pte", ".bpte")) and _is_bundle(p):
            facts["pte"][f] = inspect_bundle(p)
        elif f.endswith(".pte"):
            facts["pte"][f] = inspect_pte(p, deep=os.path.getsize(p) < 200 * 2**20)
        elif f.endswith(".ptd"):
            facts["ptd"][f] = inspect_ptd(p)
    for s in result.get("sidecars", []):
        for p in list_files(os.path.join(out, s)):
            if p.endswith(".tosa"):
                rel = os.path.relpath(p, out)
                facts["tosa"][rel] = inspect_tosa(p)
    # Cross-check: TOSABackend payload == sidecar (byte for byte).
    payload_hashes = {
        pl["sha256"]
        for pf in facts["pte"].values()
        for pl in pf.get("payloads", [])
        if pl["id"] == "TOSABackend"
    }
    if payload_hashes:
        facts["tosa_payload_matches_sidecar"] = all(
            h in {t["sha256"] for t in facts["tosa"].values()} for h in payload_hashes
        )
    return facts


def _is_bundle(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(8)[4:8] == b"BP08"


def print_facts(name: str, facts: dict):
    for f, pf in facts["pte"].items():
        print(
            f"  {f}: {pf['size']} bytes, id {pf['file_identifier']}, "
            f"segments={pf['num_segments']}, named_data={pf['named_data_keys']}, "
            f"inline_delegate_data={pf['backend_delegate_data_inline']}, "
            f"mutable_data_segments={pf['mutable_data_segments']}"
        )
        for m in pf["methods"]:
            print(
                f"    method {m['name']!r}: chains={m['num_chains']} values={m['num_values']} "
                f"in={m['num_inputs']} out={m['num_outputs']}"
            )
            print(f"      instructions: {m['instructions']}")
            print(f"      delegate calls: {m['delegate_calls']}")
            for d in m["delegates"]:
                print(f"      delegate {d['id']} ({d['location']}[{d['index']}])")
            print(f"      operators ({len(m['operators'])}): {', '.join(m['operators'])}")
            if m["external_tensors"]:
                print(f"      external tensors: {m['external_tensors']}")
        for pl in pf.get("payloads", []):
            extra = ""
            if "vela_blocks" in pl:
                extra = " blocks=" + ",".join(
                    b["name"] + ("(ext)" if b["external"] else "") for b in pl["vela_blocks"]
                )
            print(
                f"      payload {pl['method']}#{pl['delegate_index']} {pl['id']}: "
                f"{pl['payload_size']} bytes{extra}"
            )
    for f, pf in facts["ptd"].items():
        print(
            f"  {f}: {pf['size']} bytes, {pf['file_identifier']}/{pf['header_magic']}, "
            f"named_data={pf['named_data_keys']}"
        )
    for f, tf in facts["tosa"].items():
        print(
            f"  {f}: {tf['size']} bytes, TOSA {tf['version']}, ops={tf['operators']}, "
            f"with location={tf['operators_with_location']}"
        )
    if "tosa_payload_matches_sidecar" in facts:
        print(f"  TOSA payload == sidecar: {facts['tosa_payload_matches_sidecar']}")
