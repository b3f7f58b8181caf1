"""manifest.json: the verified facts of every example, in the order the manifest already lists
them (new examples after), so rebuilding some examples rewrites only their entries."""

from __future__ import annotations

import json
import os

from examples.common import list_files


def _dir_size(out, rel):
    full = os.path.join(out, rel)
    if os.path.isdir(full):
        return sum(os.path.getsize(p) for p in list_files(full))
    return os.path.getsize(full)


def _summary(entry: dict) -> dict:
    """Condensed facts for manifest.json."""
    s = {}
    for f, pf in entry["facts"]["pte"].items():
        s[f] = {
            "size": pf["size"],
            "segments": pf["num_segments"],
            "named_data_keys": pf["named_data_keys"],
            "mutable_data_segments": pf["mutable_data_segments"],
            "methods": {
                m["name"]: {
                    "instructions": m["instructions"],
                    "delegate_calls": m["delegate_calls"],
                    "delegate_storage": [d["location"] for d in m["delegates"]],
                    "num_operators": len(m["operators"]),
                    "operators": m["operators"],
                    "external_tensors": m["external_tensors"],
                }
                for m in pf["methods"]
            },
            "payloads": [
                {k: v for k, v in pl.items() if k != "sha256"} for pl in pf.get("payloads", [])
            ],
        }
        if "bundle_version" in pf:  # inspect_bundle
            s[f]["bundle"] = {k: pf[k] for k in ("bundle_version", "program_size", "test_suites")}
    for f, pf in entry["facts"]["ptd"].items():
        s[f] = pf
    if entry["facts"]["tosa"]:
        s["tosa_sidecars"] = {
            f: {k: v for k, v in t.items() if k != "sha256"}
            for f, t in entry["facts"]["tosa"].items()
        }
    if entry["facts"].get("etdump"):  # an emulated run (build_emulated.py): its ETDump read back
        s["etdump"] = entry["facts"]["etdump"]
    if "tosa_payload_matches_sidecar" in entry["facts"]:
        s["tosa_payload_matches_sidecar"] = entry["facts"]["tosa_payload_matches_sidecar"]
    return s


def write_manifest(out: str, entries: dict):
    path = os.path.join(out, "manifest.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = {e["name"]: e for e in json.load(f).get("examples", [])}
    for name, e in entries.items():
        old[name] = {
            "name": name,
            "kind": e["kind"],
            "description": e["description"],
            "files": e["files"],
            "sidecars": e["sidecars"],
            "total_size": sum(_dir_size(out, p) for p in e["files"] + e["sidecars"]),
            "build_seconds": e["build_seconds"],
            "settings": e["settings"],
            "facts": _summary(e),
        }
    # Every entry keeps its place (other builders' too: build_whatif_pairs.py); new ones go last.
    order = list(old)
    doc = {
        "generator": "examples/build_examples.py",
        "toolchain": _toolchain(),
        "note": "Orientation only: tests derive numbers from the files, not from this manifest.",
        "examples": [old[n] for n in order],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    return doc


def _toolchain():
    from importlib.metadata import version

    tc = {}
    for pkg in ("torch", "executorch", "ethos-u-vela", "tosa-tools", "torchao"):
        try:
            tc[pkg] = version(pkg)
        except Exception:
            tc[pkg] = None
    return tc


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
