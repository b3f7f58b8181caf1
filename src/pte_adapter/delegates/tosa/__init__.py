"""TOSA 1.x (`TOSABackend`): delegate payloads, Arm's intermediate files and bare `.tosa` files.

`decode.py` is the decoder (the `decoder` and `file_reader` hooks); `sidecars.py` matches Arm's
intermediate `.tosa` files to Ethos-U delegates (the `side_files` hooks); docs/architecture.md
lists the other modules.
"""
