"""Where the Arm backend's intermediate files (`output_tag*_*.tosa`, `debug.json`) may be.

`dump_intermediate_artifacts_to(dir)` records `dir` as the `debug_artifact_path` compile spec, as
the user wrote it: relative to the directory the export ran in (usually the `.pte`'s own), or
absolute on the machine that exported it. So the folder is looked for, in order:

1. `debug_artifact_path` as an absolute path, or relative to the `.pte`'s folder;
2. its last component next to the `.pte` (the folder was copied along with the file);
3. a folder next to the `.pte` named after it: `<stem>_artifacts`, then `<stem>`;
4. the `.pte`'s own folder.

The compile spec is text from the file, so it may name any folder (`/`, `../../..`, a network
share). Only folders inside the `.pte`'s folder are searched: a spec folder that lies outside it
(judged on the path as written, with `..` folded, before symlinks) is dropped, so opening a file
never makes the adapter list or read `.tosa`/`debug.json` files elsewhere on the machine.
"""

from __future__ import annotations

import os
from pathlib import Path


def _inside(folder: Path, here: Path) -> bool:
    """Whether `folder`, as written (`..` folded, symlinks not followed), lies in `here`."""
    f, h = os.path.abspath(folder), os.path.abspath(here)
    return f == h or f.startswith(h.rstrip(os.sep) + os.sep)


def candidate_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    """Every folder worth searching, most specific first, without duplicates (may not exist)."""
    out: list[Path] = []
    here = pte_path.parent if pte_path is not None else None
    if artifact_path and here is not None:
        spec = Path(artifact_path)
        for folder in (spec if spec.is_absolute() else here / spec, here / spec.name):
            if spec.name and _inside(folder, here):
                out.append(folder)
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
