"""TOSA 1.x (`TOSABackend`): delegate payloads, Arm's intermediate files and bare `.tosa` files.

`decode.py` is the decoder (the `decoder` and `file_reader` hooks); docs/architecture.md lists the
other modules.
"""
