"""The PostgreSQL + pgvector backend (``pip install 'memlane[postgres]'``).

Importing this package imports psycopg; ``memlane.stores`` imports it only when
``PostgresStore`` is first used. Modules: :mod:`~memlane.stores.postgres.store` (the episode
store), :mod:`~memlane.stores.postgres.fts` (keyword index), :mod:`~memlane.stores.postgres.sessions`
(session episodes), :mod:`~memlane.stores.postgres.reembed` (embedding model migration) and
:mod:`~memlane.stores.postgres.migrations` (schema).
"""

from __future__ import annotations

from memlane.stores.postgres.store import DEFAULT_EXACT_SEARCH_LIMIT, PostgresStore, SearchPlan

__all__ = ["DEFAULT_EXACT_SEARCH_LIMIT", "PostgresStore", "SearchPlan"]
