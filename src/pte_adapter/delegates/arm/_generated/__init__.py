"""Generated from a pinned dependency by `scripts/` (see each module's header); never edited by hand."""
