"""Bytes to bounds-checked views: the `.pte` container, `.ptd` files and where data lives."""
