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
(judged on the path as written, with `..` folded, and again with its symlinks resolved) is
dropped, so opening a file never makes the adapter list or read `.tosa`/`debug.json` files
elsewhere on the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

from pte_adapter.container.files import inside_folder
from pte_adapter.program.model import Delegate


def _inside(folder: Path, here: Path) -> bool:
    """Whether `folder`, as written (`..` folded, symlinks not followed), lies in `here`."""
    f, h = os.path.abspath(folder), os.path.abspath(here)
    return f == h or f.startswith(h.rstrip(os.sep) + os.sep)


def is_folder_inside(folder: Path, here: Path) -> bool:
    """Whether `folder` is a directory that lies in `here` once its symlinks are resolved too (a
    symlinked `<stem>_artifacts` leading elsewhere is not searched). A name that cannot be looked
    up (too long, a symlink loop, no permission) is no folder."""
    try:
        return folder.is_dir() and inside_folder(folder, here)
    except (OSError, ValueError):
        return False


def spec_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    """The folder `debug_artifact_path` names (1. and 2. above), inside the `.pte`'s folder."""
    here = pte_path.parent if pte_path is not None else None
    if not artifact_path or here is None:
        return []
    spec = Path(artifact_path)
    folders = (spec if spec.is_absolute() else here / spec, here / spec.name)
    return [f for f in folders if spec.name and _inside(f, here)]


def artifact_folders(pte_path: Path, delegate: Delegate) -> list[Path]:
    """The folders the delegate's `debug_artifact_path` names that exist inside the `.pte`'s
    folder (the `artifact_folders` hook: the only ones, besides the `.pte`'s own and those directly
    in it, that side files are read from)."""
    folders = spec_folders(pte_path, delegate.spec("debug_artifact_path"))
    return [f for f in folders if is_folder_inside(f, pte_path.parent)]


def candidate_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    """Every folder worth searching, most specific first, without duplicates (may not exist)."""
    out = spec_folders(pte_path, artifact_path)
    if pte_path is not None:
        here = pte_path.parent
        out += [here / f"{pte_path.stem}_artifacts", here / pte_path.stem, here]
    unique: list[Path] = []
    seen: set[Path] = set()
    for folder in out:
        try:
            key = folder.resolve() if folder.exists() else folder
        except (OSError, ValueError, RuntimeError):  # too long, a loop: compared as written
            key = folder
        if key not in seen:
            seen.add(key)
            unique.append(folder)
    return unique


def existing_folders(pte_path: Path | None, artifact_path: str | None) -> list[Path]:
    here = pte_path.parent if pte_path is not None else None
    folders = candidate_folders(pte_path, artifact_path)
    return [f for f in folders if here is not None and is_folder_inside(f, here)]
