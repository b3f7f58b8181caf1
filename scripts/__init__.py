"""The repository's scripts, run from its root.

A script that uses the shared test support (`tests/support/`) runs as a module, so that Python finds
`tests` from the current folder: `python -m scripts.fuzz`, `python -m scripts.make_readme_images`.
The code generators (`regen.py`, `gen_*.py`) import only the helpers beside them and run as files:
`python scripts/regen.py`. See docs/contributing.md.
"""
