"""The example programs and the scripts that build them with the real toolchain.

Run the builders from the repository root as modules, e.g. ``python -m examples.build_examples``:
``models/`` holds the networks (plain ``torch.nn``), ``builders/`` one module per backend family,
and the ``build_*.py`` scripts are the drivers (see README.md).
"""
