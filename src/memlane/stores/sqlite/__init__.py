"""The SQLite backend: one file, zero servers (stdlib ``sqlite3``).

Modules: :mod:`~memlane.stores.sqlite.store` (the episode store), :mod:`~memlane.stores.sqlite.fts`
(keyword index), :mod:`~memlane.stores.sqlite.sessions` (session episodes),
:mod:`~memlane.stores.sqlite.reembed` (embedding model migration) and
:mod:`~memlane.stores.sqlite.migrations` (schema).
"""

from __future__ import annotations

from memlane.stores.sqlite.store import BOOKKEEPING_BUSY_MS, SQLiteStore

__all__ = ["BOOKKEEPING_BUSY_MS", "SQLiteStore"]
