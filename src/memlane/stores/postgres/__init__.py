"""The PostgreSQL + pgvector backend (``pip install 'memlane[postgres]'``).

Importing this package imports psycopg; ``memlane.stores`` imports it only when
``PostgresStore`` is first used. Modules: :mod:`~memlane.stores.postgres.store` (the episode
store), :mod:`~memlane.stores.postgres.fts` (keyword index), :mod:`~memlane.stores.postgres.sessions`
(session episodes), :mod:`~memlane.stores.postgres.reembed` (embedding model migration) and
:mod:`~memlane.stores.postgres.migrations` (schema).
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401 - every module of this package needs it
    import psycopg_pool  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"PostgresStore needs the postgres extra: pip install 'memlane[postgres]' ({exc})"
    ) from exc

from memlane.stores.postgres.store import DEFAULT_EXACT_SEARCH_LIMIT, PostgresStore, SearchPlan

__all__ = ["DEFAULT_EXACT_SEARCH_LIMIT", "PostgresStore", "SearchPlan"]
