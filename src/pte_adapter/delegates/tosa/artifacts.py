"""Where the Arm backend's intermediate files (`output_tag*_*.tosa`, `debug.json`) may be.

`dump_intermediate_artifacts_to(dir)` records `dir` as the `debug_artifact_path` compile spec, as
the user wrote it: relative to the directory the export ran in (usually the `.pte`'s own), or
absolute on the machine that exported it. So the folder is looked for, in order:

1. `debug_artifact_path` as an absolute path, or relative to the `.pte`'s folder;
2. its last component next to the `.pte` (the folder was copied along with the file);
3. a folder next to the `.pte` named after it: `<stem>_artifacts`, then `<stem>`;
4. the `.pte`'s own folder.
"""

from __future__ import annotations

from pathlib import Path


def candidate_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    """Every folder worth searching, most specific first, without duplicates (may not exist)."""
    out: list[Path] = []
    here = pte_path.parent if pte_path is not None else None
    if artifact_path:
        spec = Path(artifact_path)
        if spec.is_absolute():
            out.append(spec)
        elif here is not None:
            out.append(here / spec)
        if here is not None and spec.name:
            out.append(here / spec.name)
    if pte_path is not None and here is not None:
        out += [here / f"{pte_path.stem}_artifacts", here / pte_path.stem, here]
    unique: list[Path] = []
    seen: set[Path] = set()
    for folder in out:
        key = folder.resolve() if folder.exists() else folder
        if key not in seen:
            seen.add(key)
            unique.append(folder)
    return unique


def existing_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    return [f for f in candidate_folders(pte_path, artifact_path) if f.is_dir()]
