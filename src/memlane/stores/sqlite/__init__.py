"""The SQLite backend: one file, zero servers (stdlib ``sqlite3``).

Modules: :mod:`~memlane.stores.sqlite.store` (the episode store), :mod:`~memlane.stores.sqlite.fts`
(keyword index), :mod:`~memlane.stores.sqlite.sessions` (session episodes),
:mod:`~memlane.stores.sqlite.reembed` (embedding model migration),
:mod:`~memlane.stores.sqlite.migrations` (schema), and the vector search only this backend needs:
:mod:`~memlane.stores.sqlite.vector_index` (in-memory vectors), :mod:`~memlane.stores.sqlite.sidecar`
(their file beside the database), :mod:`~memlane.stores.sqlite.ann` (IVF lists) and
:mod:`~memlane.stores.sqlite.vectors` (the store's use of them).
"""

from __future__ import annotations

from memlane.stores.sqlite.store import BOOKKEEPING_BUSY_MS, SQLiteStore

__all__ = ["BOOKKEEPING_BUSY_MS", "SQLiteStore"]
