"""Storage backends behind the :class:`~memlane.stores.base.Store` protocol.

``PostgresStore`` is imported lazily (``from memlane.stores import PostgresStore``), so
importing memlane never requires the ``postgres`` extra (psycopg).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memlane.stores.base import EpisodeFilter, Store, StoreStats, VectorCandidates
from memlane.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from memlane.stores.postgres import PostgresStore

__all__ = ["EpisodeFilter", "PostgresStore", "SQLiteStore", "Store", "StoreStats", "VectorCandidates"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from memlane.stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
