"""pte_adapter: open an ExecuTorch `.pte` and show everything inside it."""

__version__ = "0.1.0"
