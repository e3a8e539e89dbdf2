"""Deprecated: moved to :mod:`memlane.recall.keywords`; this alias is removed in a later release."""

from memlane._deprecated import moved

__all__, __getattr__ = moved(
    __name__, "memlane.recall.keywords", {"CommonTermFilter": "memlane.stores.common_terms"}
)
