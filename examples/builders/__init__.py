"""One module per backend family; importing one registers its examples (common.example)."""
