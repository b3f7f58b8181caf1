"""Vulkan (`VulkanBackend`, ExecuTorch's GPU backend): a `VH00` header, a `VkGraph` FlatBuffer and
raw bytes.

`decode.py` is the decoder (the `decoder` hook); docs/architecture.md lists the other modules.
"""
