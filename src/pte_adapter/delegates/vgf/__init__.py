"""Arm VGF (`VgfBackend`): the Arm ML SDK for Vulkan `.vgf` container and its SPIR-V graphs.

`decode.py` is the decoder (the `decoder` hook); docs/architecture.md lists the other modules.
"""
