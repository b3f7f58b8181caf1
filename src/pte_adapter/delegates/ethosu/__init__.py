"""Arm Ethos-U (`EthosUBackend`): Vela's compiled NPU command stream, read without Vela.

`decode.py` is the decoder (the `decoder` hook); the other modules read the stream's parts, recover
the dataflow and estimate the NPU's cycles and memory use (docs/architecture.md lists them).
"""
