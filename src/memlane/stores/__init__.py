"""Storage backends behind the :class:`~memlane.stores.base.Store` protocol."""

from memlane.stores.base import EpisodeFilter, Store, StoreStats, VectorCandidates
from memlane.stores.sqlite import SQLiteStore

__all__ = ["EpisodeFilter", "SQLiteStore", "Store", "StoreStats", "VectorCandidates"]
