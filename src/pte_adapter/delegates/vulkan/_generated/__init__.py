"""Generated modules, never edited by hand. Each one's header names the scripts/gen_*.py that
wrote it and the pinned inputs (distribution, version, sha256) it was generated from; see
"Generated code" in docs/contributing.md. Regenerate: `python scripts/regen.py` (`--check`
tells whether they are current)."""
