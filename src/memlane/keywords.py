"""Deprecated: moved to :mod:`memlane.analysis`; this alias is removed in a later release."""

from memlane._deprecated import moved

__all__, __getattr__ = moved(
    __name__, "memlane.analysis", {"CommonTermFilter": "memlane.stores.common_terms"}
)
