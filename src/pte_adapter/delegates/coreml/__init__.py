"""Apple Core ML (`CoreMLBackend`): the model folder the backend wrote, flattened into the payload.

`decode.py` is the decoder (the `decoder` hook); docs/architecture.md lists the other modules.
"""
