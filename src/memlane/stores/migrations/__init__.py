"""Numbered schema migrations, one module per backend."""
