"""Storage behind the :class:`~memlane.stores.base.Store` protocol: what every backend shares.

This package holds the protocol, its value types and the backend-neutral helpers; each backend
is a subpackage that imports them (:mod:`memlane.stores.sqlite`: ``SQLiteStore``;
:mod:`memlane.stores.postgres`: ``PostgresStore``, which needs the ``postgres`` extra). Nothing
here imports a backend, so the dependency runs one way; :func:`memlane.assembly.open_store`
picks the backend for a location, and ``memlane.SQLiteStore`` is the default one.
"""

from __future__ import annotations

from memlane.stores.base import (
    EpisodeFilter,
    MetadataCondition,
    Store,
    StoreStats,
    Supersession,
    VectorCandidates,
)

__all__ = ["EpisodeFilter", "MetadataCondition", "Store", "StoreStats", "Supersession", "VectorCandidates"]
