"""Deprecated: moved to :mod:`memlane.config.file`; this alias is removed in a later release."""

from memlane._deprecated import moved

__all__, __getattr__ = moved(__name__, "memlane.config.file")
