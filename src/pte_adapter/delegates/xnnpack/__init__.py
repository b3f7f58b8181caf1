"""XNNPACK (`XnnpackBackend`): an `XH00` header, an XNNPACK FlatBuffer and constant data.

`decode.py` is the decoder (the `decoder` hook); docs/architecture.md lists the other modules.
"""
